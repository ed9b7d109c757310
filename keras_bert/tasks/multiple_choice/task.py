"""Multiple choice on SWAG: `MultipleChoiceTask`, the task for the driver (`keras_bert.tasks.driver`): the
training batches (`training_dataset`), the answers of the model's `serve`, accuracy over labeled questions,
and the predictions CSV (`swag_id,label,prob0..prob3` per question; label is the predicted ending).
Training and `serve` take the same raw texts (`choice_texts`) through the same packing
(`keras_bert.text.packer.pack_choices`, the model's `text_inputs`). The loss is the model's
(`BertMultipleChoice.task_loss`)."""

import csv

import numpy as np

from keras_bert.data.features import text_dataset
from keras_bert.metrics.glue import accuracy
from keras_bert.tasks.base import PREDICT, TRAIN, Task, TrainingData, prediction_path
from keras_bert.tasks.finetuning import serve_all
from keras_bert.tasks.multiple_choice.model import BertMultipleChoice
from keras_bert.tasks.multiple_choice.swag import NUM_CHOICES, read_swag_examples
from keras_bert.text.packer import pack_choices


def choice_texts(examples):
    """The raw texts of `examples` (`SwagExample`s) as the model takes them: {"text": the contexts [n],
    "text_b": the start + ending of each choice [n, num_choices]}. Raises ValueError when there are none."""
    if not examples:
        raise ValueError("no examples to build a dataset from")
    pairs = [example.choice_pairs() for example in examples]
    return {"text": [choices[0][0] for choices in pairs],
            "text_b": [[b for _, b in choices] for choices in pairs]}


def training_dataset(examples, preprocessor, batch_size=16, shuffle=False, seed=0, pad_to_multiple_of=0):
    """A tf.data.Dataset of (inputs, labels) batches for `BertMultipleChoice`: `choice_texts` packed by
    `pack_choices` (int32 [b, num_choices, seq_length] each; with `pad_to_multiple_of`, cut as
    `text_dataset` cuts, a row's length being its longest choice) and the int32 [b] labels. Raises
    ValueError naming an example without a label."""
    texts = choice_texts(examples)
    unlabeled = [example.swag_id for example in examples if example.label is None]
    if unlabeled:
        raise ValueError(f"{len(unlabeled)} examples have no label, e.g. {unlabeled[0]}")
    labels = np.asarray([example.label for example in examples], np.int32)
    return text_dataset(texts, lambda batch: pack_choices(preprocessor, batch["text"], batch["text_b"]),
                        (labels,), batch_size, shuffle, seed, pad_to_multiple_of)


class MultipleChoiceTask(Task):
    """SWAG multiple choice for the driver (`keras_bert.tasks.driver.finetune`): trains on `train_file`,
    scores `eval_file` (labels required), predicts `predict_file`; the predictions are eval_predictions.csv /
    predictions.csv."""

    model_class = BertMultipleChoice
    compile_metrics = "auto"

    def __init__(self, train_file=None, eval_file=None, predict_file=None):
        self.files = {TRAIN: train_file, "eval": eval_file, PREDICT: predict_file}

    def head_args(self):
        return {"num_choices": NUM_CHOICES}

    def read(self, split):
        examples = read_swag_examples(self.files[split])
        if split == "eval":
            self._check_labeled(examples)
        return examples

    def dataset(self, examples, preprocessor, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        return TrainingData(training_dataset(examples, preprocessor, batch_size, shuffle=training, seed=seed,
                                             pad_to_multiple_of=pad_to_multiple_of), len(examples))

    def predict(self, model, examples, batch_size=32, preprocessor=None):
        """`model.serve` (signature "text_pair": `choice_texts`; with `preprocessor`, default the model's own)
        on `examples` (`SwagExample`s): {"logits", "probabilities": float32 [n, num_choices], "choice": int32
        [n], ...}."""
        return serve_all(model, choice_texts(examples), batch_size, preprocessor, signature="text_pair")

    def results(self, model, examples, predictions):
        """accuracy, eval_loss (the model's `task_loss`) and num_examples of the served `predictions`;
        raises ValueError naming the eval file when `examples` have no labels."""
        self._check_labeled(examples)
        labels = np.asarray([example.label for example in examples])
        eval_loss = model.task_loss()[0](labels, predictions["logits"])
        return {"accuracy": accuracy(predictions["choice"], labels), "eval_loss": float(eval_loss),
                "num_examples": len(examples)}

    def write_predictions(self, split, examples, predictions, output_dir):
        """Writes `swag_id,label,prob0..probN` per example (label: the served choice, probabilities: the
        served ones); returns [its path]."""
        path = prediction_path(output_dir, split, ".csv")
        probabilities = predictions["probabilities"]
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow(["swag_id", "label", *(f"prob{i}" for i in range(probabilities.shape[1]))])
            for example, row, choice in zip(examples, probabilities, predictions["choice"], strict=True):
                writer.writerow([example.swag_id, int(choice), *(f"{p:.6f}" for p in row)])
        return [path]

    def _check_labeled(self, examples):
        """Raises ValueError naming the eval file when `examples` have no labels (nothing to score)."""
        if any(example.label is None for example in examples):
            raise ValueError(f"{self.files['eval']} has no label column")
