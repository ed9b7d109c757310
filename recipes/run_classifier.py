"""Fine-tunes BERT for sentence (pair) classification or regression: GLUE, TFDS glue/*, or your CSV/TSV.

    python -m recipes.run_classifier --task_name=MRPC --data_dir=glue_data/MRPC \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --output_dir=runs/mrpc
    python -m recipes.run_classifier --tfds_name=glue/sst2 --tfds_data_dir=~/tensorflow_datasets ...
    python -m recipes.run_classifier --task_name=custom --train_file=train.csv --eval_file=dev.csv \\
        --predict_file=test.csv --init_checkpoint=path/to/hf_model_dir ...

Data, by the first of these given: --tfds_name; --task_name=<GLUE task> with --data_dir (the official TSV
directory); --train_file/--eval_file/--predict_file (custom format: header with `text`, optional `text_b`,
`label`; classes are the training file's labels, or --is_regression); none of them: the default task,
real stdlib docstring sentences labeled by topic (keras_bert.data.default_classification).

Writes to --output_dir: eval_results.json (the task's official metrics + eval_loss; MNLI: per dev split),
the predictions (GLUE: the submission file, e.g. MNLI-m.tsv / AX.tsv; custom: predictions.tsv with
`index<TAB>prediction`), model.keras (the fine-tuned BertClassifier) and labels.json.
"""

import os
import sys

if not __package__:  # `python recipes/x.py`: import from the repository root, as `python -m recipes.x` does
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from recipes import logs

logs.quiet(__name__)  # before TensorFlow loads

import csv

import keras
import numpy as np
from absl import app, flags

from recipes import common

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/classifier", learning_rate=2e-5, train_batch_size=32,
                               max_seq_length=128)
flags.DEFINE_string("task_name", None, "A GLUE task (CoLA, SST-2, MRPC, STS-B, QQP, MNLI, QNLI, RTE, WNLI) "
                    "read from --data_dir, or 'custom' for --train_file/--eval_file/--predict_file.")
flags.DEFINE_string("data_dir", None, "GLUE task directory (train.tsv, dev.tsv, test.tsv, ...).")
flags.DEFINE_string("ax_data_dir", None, "With --task_name=MNLI --do_predict: directory of the AX "
                    "diagnostic.tsv, also predicted (AX.tsv).")
flags.DEFINE_string("tfds_name", None, "A prepared TFDS GLUE dataset, e.g. glue/sst2 (never downloaded).")
flags.DEFINE_string("tfds_data_dir", None, "TFDS data_dir holding --tfds_name.")
flags.DEFINE_string("train_file", None, "Custom task: training CSV/TSV (text[,text_b],label).")
flags.DEFINE_string("eval_file", None, "Custom task: evaluation CSV/TSV (with labels).")
flags.DEFINE_string("predict_file", None, "Custom task: CSV/TSV to predict (label column optional).")
flags.DEFINE_bool("is_regression", False, "Custom task: labels are numbers (one output, MSE loss).")


class Task:
    """What the run needs: the examples (all read up front, so bad input fails before training) and how to
    score and write them. `evals`/`predicts` are lists of (split name, examples)."""

    def __init__(self, name, label_list, is_regression, train=None, evals=(), predicts=(), glue_name=None):
        self.name, self.label_list, self.is_regression = name, label_list, is_regression
        self.train, self.evals, self.predicts = train, list(evals), list(predicts)
        self.glue_name = glue_name

    @property
    def num_classes(self):
        return 1 if self.is_regression else len(self.label_list)

    def metrics(self, predictions, labels):
        from keras_bert.metrics import glue as glue_metrics

        if self.glue_name:
            return glue_metrics.compute_metrics(self.glue_name, predictions, labels)
        if self.is_regression:
            return {"pearson": glue_metrics.pearson(predictions, labels),
                    "spearmanr": glue_metrics.spearman(predictions, labels)}
        return {"accuracy": glue_metrics.accuracy(predictions, labels)}

    def write_predictions(self, split, examples, predictions):
        if self.glue_name:
            from keras_bert.data.glue import write_glue_predictions

            # AX is predicted by the MNLI model into its own submission file.
            name, split = ("ax", "test") if split == "ax" else (self.glue_name, split)
            return write_glue_predictions(name, split, examples, predictions, FLAGS.output_dir)
        path = os.path.join(FLAGS.output_dir, "predictions.tsv" if split == "predict" else f"{split}_predictions.tsv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, delimiter="\t", lineterminator="\n")
            writer.writerow(["index", "prediction"])
            for example, prediction in zip(examples, predictions, strict=True):
                value = f"{float(prediction):.3f}" if self.is_regression else self.label_list[int(prediction)]
                writer.writerow([example.index, value])
        return path


def _glue_task():
    from keras_bert.data import glue

    task = glue.get_glue_task(FLAGS.task_name)
    if task.name == "ax":
        raise ValueError("--task_name=AX has no training data: fine-tune --task_name=MNLI and pass --ax_data_dir")
    if not FLAGS.data_dir:
        raise ValueError(f"--task_name={FLAGS.task_name} needs --data_dir (the GLUE {task.display_name} directory)")
    def read(split):
        return split, glue.read_glue_examples(task.name, FLAGS.data_dir, split)

    evals = [read(s) for s in task.split_files if s.startswith("dev")] if FLAGS.do_eval else []
    predicts = [read(s) for s in task.split_files if s.startswith("test")] if FLAGS.do_predict else []
    if FLAGS.do_predict and task.name == "mnli" and FLAGS.ax_data_dir:
        predicts.append(("ax", glue.read_glue_examples("ax", FLAGS.ax_data_dir, "test")))
    return Task(task.name, task.label_list and list(task.label_list), task.is_regression,
                train=read("train")[1] if FLAGS.do_train else None, evals=evals, predicts=predicts,
                glue_name=task.name)


def _tfds_task():
    from keras_bert.data import glue

    task = glue.get_glue_task(glue.parse_tfds_name(FLAGS.tfds_name)[0])
    config = FLAGS.tfds_name.partition("/")[2]
    dev, test = ("validation", "test")
    if config == "mnli":
        dev, test = ("validation_matched", "validation_mismatched"), ("test_matched", "test_mismatched")
    dev, test = (dev,) if isinstance(dev, str) else dev, (test,) if isinstance(test, str) else test

    def load(tfds_split):
        return glue.load_tfds_examples(FLAGS.tfds_name, tfds_split, FLAGS.tfds_data_dir)[2]

    def named(tfds_split):
        return glue.parse_tfds_name(FLAGS.tfds_name, tfds_split)[1], load(tfds_split)

    return Task(task.name, task.label_list and list(task.label_list), task.is_regression,
                train=load("train") if FLAGS.do_train else None,
                evals=[named(s) for s in dev] if FLAGS.do_eval else [],
                predicts=[named(s) for s in test] if FLAGS.do_predict else [], glue_name=task.name)


def _custom_task(train_file, eval_file, predict_file):
    from keras_bert.data.classification import collect_labels, read_classification_file

    label_list = None
    train_examples = None
    if not FLAGS.is_regression:
        if train_file:
            train_examples = read_classification_file(train_file)
            label_list = collect_labels(train_examples, train_file)
        else:
            label_list = common.saved_labels()
            if label_list is None:
                raise ValueError("a custom classification task needs --train_file (its labels are the classes), "
                                 "or a fine-tuned model.keras --init_checkpoint with labels.json beside it")
    elif train_file:
        train_examples = read_classification_file(train_file, is_regression=True)

    def read(path, require_labels=False):
        return read_classification_file(path, label_list=label_list, is_regression=FLAGS.is_regression,
                                        require_labels=require_labels)

    if FLAGS.do_train and not train_file:
        raise ValueError("--do_train needs --train_file")
    if FLAGS.do_eval and not eval_file:
        raise ValueError("--do_eval needs --eval_file")
    if FLAGS.do_predict and not predict_file:
        raise ValueError("--do_predict needs --predict_file")
    return Task("custom", label_list, FLAGS.is_regression,
                train=train_examples if FLAGS.do_train else None,
                evals=[("eval", read(eval_file, require_labels=True))] if FLAGS.do_eval else [],
                predicts=[("predict", read(predict_file))] if FLAGS.do_predict else [])


def load_task():
    """The Task of the data flags (see the module docstring)."""
    if FLAGS.tfds_name:
        return _tfds_task()
    if FLAGS.task_name and FLAGS.task_name.lower() != "custom":
        return _glue_task()
    if FLAGS.train_file or FLAGS.eval_file or FLAGS.predict_file:
        return _custom_task(FLAGS.train_file, FLAGS.eval_file, FLAGS.predict_file)
    from keras_bert.data.default_classification import default_classification_files

    train_file, dev_file = default_classification_files()
    print(f"No data flags: the default task (stdlib docstring topics), {train_file} and {dev_file}")
    return _custom_task(train_file, dev_file, dev_file if FLAGS.do_predict else None)


def _predict(model, dataset, is_regression):
    """(model outputs [n, classes], predictions: class ids [n] or values [n])."""
    outputs = model.predict(dataset, verbose=0)
    return outputs, outputs[:, 0] if is_regression else np.argmax(outputs, axis=-1)


def main(argv):
    del argv
    from keras_bert.data import features
    from keras_bert.models.classifier import BertClassifier
    from keras_bert.text import BertPreprocessor

    strategy = common.setup()
    task = load_task()
    tokenizer = common.finetuning_tokenizer()
    preprocessor = BertPreprocessor(tokenizer, FLAGS.max_seq_length)
    train_examples = task.train

    def dataset(examples, batch_size, shuffle=False, with_labels=True):
        return features.classification_dataset(
            examples, preprocessor, task.label_list, task.is_regression, batch_size, shuffle=shuffle,
            seed=FLAGS.seed, with_labels=with_labels, pad_to_multiple_of=FLAGS.pad_to_multiple_of)

    with strategy.scope():
        model = common.build_task_model(tokenizer, BertClassifier,
                                        lambda encoder: BertClassifier(encoder, task.num_classes))
        if model.num_classes != task.num_classes:
            raise ValueError(f"--init_checkpoint={FLAGS.init_checkpoint} is a classifier with {model.num_classes} "
                             f"outputs but the task has {task.num_classes}")
        if task.is_regression:
            loss, metrics = keras.losses.MeanSquaredError(), []
        else:
            loss, metrics = keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"]
        common.compile_task(model, strategy, loss, metrics, len(train_examples) if train_examples else None)
    if train_examples:
        common.fit_task(model, dataset(train_examples, FLAGS.train_batch_size, shuffle=True), len(train_examples))
        common.save_task_model(model, strategy, task.label_list)

    results = {}
    for split, examples in task.evals:
        outputs, predictions = _predict(model, dataset(examples, FLAGS.eval_batch_size, with_labels=False),
                                        task.is_regression)
        labels = features.classification_labels(examples, task.label_list, task.is_regression)
        # The loss from the predicted outputs: one pass over the data, no separate evaluate() graph.
        eval_loss = model.loss(labels[:, None] if task.is_regression else labels, outputs)
        values = {**task.metrics(predictions, labels), "eval_loss": float(eval_loss), "num_examples": len(examples)}
        prefix = f"{split}/" if len(task.evals) > 1 else ""
        results.update({prefix + name: value for name, value in values.items()})
        if not task.glue_name:  # GLUE dev predictions have no official file; custom ones are kept
            task.write_predictions(split, examples, predictions)
    if results:
        common.write_eval_results(results, strategy)
    for split, examples in task.predicts:
        _, predictions = _predict(model, dataset(examples, FLAGS.eval_batch_size, with_labels=False),
                                  task.is_regression)
        print(f"Predictions: {task.write_predictions(split, examples, predictions)}")


if __name__ == "__main__":
    app.run(main)
