"""Sentence (pair) classification and regression: GLUE from its TSV directories or TFDS `glue/*`, and custom
CSV/TSV files. A `ClassificationTask` holds the examples of every split (all read up front, so bad input
fails before training) and knows the task's metrics and prediction files; the predictions are what the
classifier's `serve` answers, the loss is the model's (`BertClassifier.task_loss`).

    task = glue_task("MRPC", "glue_data/MRPC", predict=True)
    model = BertClassifier(encoder, task.num_classes); model.compile(optimizer)
    for split, examples in task.evals:
        logits, predictions = task.served(model, examples)
        results = task.eval_results(model, examples, logits, predictions)
    task.write_predictions("test", examples, predictions, output_dir)      # GLUE: MRPC.tsv
"""

import csv
import dataclasses
import logging
import typing

from keras_bert.data.features import classification_dataset, classification_labels, classification_texts
from keras_bert.metrics import glue as glue_metrics
from keras_bert.tasks.base import TRAIN, Task, TrainingData, prediction_path
from keras_bert.tasks.classification import glue
from keras_bert.tasks.classification.metrics import compute_metrics
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.tasks.classification.reader import collect_labels, read_classification_file
from keras_bert.tasks.finetuning import serve_all


class Served(typing.NamedTuple):
    """`ClassificationTask.predict`'s answers: logits float32 [n, num_classes] and the predictions (class
    ids int32 [n]; regression: the values [n])."""

    logits: object
    predictions: object


@dataclasses.dataclass
class ClassificationTask(Task):
    """The examples of a run and how to score and write them (read up front by `glue_task`, `tfds_task`,
    `custom_task`); a `Task` for the driver (`keras_bert.tasks.driver.finetune`).

    Attributes:
        name: "custom" or the GLUE task's canonical name ("mrpc", "mnli", ...).
        label_list: class names in id order, or None for regression.
        is_regression: one output, mean squared error (STS-B, custom numbers).
        train: the training `ClassificationExample`s, or None.
        evals, predicts: lists of (split name, examples) to score / to predict.
        glue_name: the GLUE task whose official metrics and submission files apply, or None (custom).
    """

    name: str
    label_list: list | None
    is_regression: bool
    train: list | None = None
    evals: list = dataclasses.field(default_factory=list)
    predicts: list = dataclasses.field(default_factory=list)
    glue_name: str | None = None

    model_class = BertClassifier
    compile_metrics = "auto"

    @property
    def num_classes(self):
        return 1 if self.is_regression else len(self.label_list)

    @property
    def labels(self):
        return self.label_list

    def head_args(self):
        return {"labels": self.label_list} if self.label_list else {"num_classes": self.num_classes}

    def splits(self, evaluate, predict):
        return ([split for split, _ in self.evals] if evaluate else [],
                [split for split, _ in self.predicts] if predict else [])

    def read(self, split):
        return self.train if split == TRAIN else dict(self.evals + self.predicts)[split]

    def dataset(self, examples, preprocessor, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        batches = classification_dataset(examples, preprocessor, self.label_list, self.is_regression,
                                         batch_size, shuffle=training, seed=seed,
                                         pad_to_multiple_of=pad_to_multiple_of)
        return TrainingData(batches, len(examples))

    def predict(self, model, examples, batch_size=32, preprocessor=None):
        return Served(*self.served(model, examples, batch_size, preprocessor))

    def results(self, model, examples, predictions):
        return self.eval_results(model, examples, *predictions)

    def served(self, model, examples, batch_size=32, preprocessor=None):
        """(logits float32 [n, num_classes], predictions) of `examples` (all single texts or all pairs) from
        `model.serve` (with `preprocessor`, default the model's own), the function its export serves:
        predictions are the served class ids int32 [n] (regression: the values [n])."""
        inputs = classification_texts(examples)
        served = serve_all(model, inputs, batch_size, preprocessor,
                           signature="text_pair" if "text_b" in inputs else "text")
        return served["logits"], served["logits"][:, 0] if self.is_regression else served["label_id"]

    def metrics(self, predictions, labels):
        """The task's official metrics (GLUE), else accuracy or Pearson/Spearman (regression)."""
        if self.glue_name:
            return compute_metrics(self.glue_name, predictions, labels)
        if self.is_regression:
            return {"pearson": glue_metrics.pearson(predictions, labels),
                    "spearmanr": glue_metrics.spearman(predictions, labels)}
        return {"accuracy": glue_metrics.accuracy(predictions, labels)}

    def eval_results(self, model, examples, logits, predictions):
        """The results of `served` `logits` [n, num_classes] and `predictions` on labeled `examples`: the
        metrics, `eval_loss` (the model's `task_loss`, from the logits: no second pass) and `num_examples`."""
        labels = classification_labels(examples, self.label_list, self.is_regression)
        eval_loss = model.task_loss()[0](labels[:, None] if self.is_regression else labels, logits)
        return {**self.metrics(predictions, labels), "eval_loss": float(eval_loss),
                "num_examples": len(examples)}

    def write_predictions(self, split, examples, predictions, output_dir):
        """Writes the `predictions` (`predict`'s `Served`, or the predictions alone) of `split` and returns
        the path: GLUE test splits as their submission file (MNLI-m.tsv, AX.tsv for the split "ax", ...; its
        dev splits have none: None); custom tasks as predictions.tsv (split "predict") or
        <split>_predictions.tsv, `index<TAB>prediction` with label names (regression: 3 decimals)."""
        if isinstance(predictions, Served):
            predictions = predictions.predictions
        if self.glue_name and split in dict(self.evals):
            return None
        if self.glue_name:
            # AX is predicted by the MNLI model into its own submission file.
            name, split = ("ax", "test") if split == "ax" else (self.glue_name, split)
            return glue.write_glue_predictions(name, split, examples, predictions, output_dir)
        path = prediction_path(output_dir, split, ".tsv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", lineterminator="\n")
            writer.writerow(["index", "prediction"])
            for example, prediction in zip(examples, predictions, strict=True):
                value = f"{float(prediction):.3f}" if self.is_regression else self.label_list[int(prediction)]
                writer.writerow([example.index, value])
        return path


def glue_task(task_name, data_dir, train=True, evaluate=True, predict=False, ax_data_dir=None):
    """The GLUE task `task_name` read from its official TSV directory `data_dir`: train.tsv when `train`,
    its dev splits when `evaluate`, its test splits when `predict` (MNLI: also AX's diagnostic.tsv from
    `ax_data_dir` when given)."""
    task = glue.get_glue_task(task_name)

    def read(split):
        return split, glue.read_glue_examples(task.name, data_dir, split)

    evals = [read(s) for s in task.split_files if s.startswith("dev")] if evaluate else []
    predicts = [read(s) for s in task.split_files if s.startswith("test")] if predict else []
    if predict and task.name == "mnli" and ax_data_dir:
        predicts.append(("ax", glue.read_glue_examples("ax", ax_data_dir, "test")))
    return ClassificationTask(task.name, task.label_list and list(task.label_list), task.is_regression,
                              train=read("train")[1] if train else None, evals=evals, predicts=predicts,
                              glue_name=task.name)


def tfds_task(tfds_name, data_dir=None, train=True, evaluate=True, predict=False):
    """The GLUE task of a prepared TFDS dataset `tfds_name` ("glue/<config>") under `data_dir`; its
    validation splits are scored, its test splits predicted (MNLI: matched and mismatched each)."""
    task = glue.get_glue_task(glue.parse_tfds_name(tfds_name)[0])
    dev, test = glue.tfds_eval_splits(tfds_name)

    def named(tfds_split):
        _, split, examples = glue.load_tfds_examples(tfds_name, tfds_split, data_dir)
        return split, examples

    return ClassificationTask(task.name, task.label_list and list(task.label_list), task.is_regression,
                              train=named("train")[1] if train else None,
                              evals=[named(s) for s in dev] if evaluate else [],
                              predicts=[named(s) for s in test] if predict else [], glue_name=task.name)


def custom_task(train_file=None, eval_file=None, predict_file=None, is_regression=False, label_list=None,
                train=True):
    """A task of custom CSV/TSV files (`text`, optional `text_b`, `label`). The classes are the sorted labels
    of `train_file` (read for them even when not `train`), else `label_list` (e.g. the labels.json of a
    fine-tuned model); a label outside them in another file is an error naming its line. `eval_file` is
    scored as the split "eval", `predict_file` predicted as "predict" (each when given)."""
    train_examples = None
    if train_file:
        train_examples = read_classification_file(train_file, is_regression=is_regression)
        if not is_regression:
            label_list = collect_labels(train_examples, train_file)
    elif not is_regression and label_list is None:
        raise ValueError("a custom classification task needs a training file (its labels are the classes) or "
                         "the label list of a fine-tuned model (labels.json beside its model.keras)")

    def read(path, require_labels=False):
        return read_classification_file(path, label_list=label_list, is_regression=is_regression,
                                        require_labels=require_labels)

    return ClassificationTask("custom", label_list, is_regression,
                              train=train_examples if train else None,
                              evals=[("eval", read(eval_file, require_labels=True))] if eval_file else [],
                              predicts=[("predict", read(predict_file))] if predict_file else [])


def classification_task(*, tfds_name=None, tfds_data_dir=None, task_name=None, data_dir=None,
                        ax_data_dir=None, train_file=None, eval_file=None, predict_file=None,
                        is_regression=False, label_list=None, train=True, evaluate=True, predict=False):
    """The task of the first data source given: a prepared TFDS GLUE dataset (`tfds_name`, `tfds_task`); a
    GLUE task (`task_name`, not "custom") read from its TSV directory `data_dir` (`glue_task`; MNLI's
    predictions also AX's when `ax_data_dir`); custom CSV/TSV files (`custom_task`: the classes are
    `train_file`'s labels, else `label_list`, unless `is_regression`); none of them: the default task, the
    topics of standard-library docstrings (`default_data`; its dev file scored and predicted). `train`,
    `evaluate`, `predict`: the splits read. ValueError for a GLUE task without `data_dir` or with no
    training data (AX)."""
    splits = {"train": train, "evaluate": evaluate, "predict": predict}
    if tfds_name:
        return tfds_task(tfds_name, tfds_data_dir, **splits)
    if task_name and task_name.lower() != "custom":
        glue_name = glue.get_glue_task(task_name).name
        if glue_name == "ax":
            raise ValueError("the GLUE task AX has no training data: fine-tune MNLI and predict AX with its "
                             "diagnostic.tsv (ax_data_dir)")
        if not data_dir:
            raise ValueError(f"the GLUE task {task_name} needs its data directory (the official TSV files)")
        return glue_task(glue_name, data_dir, ax_data_dir=ax_data_dir, **splits)
    if not (train_file or eval_file or predict_file):
        from keras_bert.tasks.classification.default_data import default_classification_files

        train_file, eval_file = default_classification_files()
        predict_file = eval_file
        logging.getLogger("keras_bert").info("no data given: the default task (stdlib docstring topics), %s "
                                             "and %s", train_file, eval_file)
    return custom_task(train_file, eval_file if evaluate else None, predict_file if predict else None,
                       is_regression=is_regression, label_list=label_list, train=train)
