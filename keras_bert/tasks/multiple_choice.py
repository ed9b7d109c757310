"""Multiple choice on SWAG: the loss, accuracy over labeled questions, and the predictions CSV
(`swag_id,label,prob0..prob3` per question; label is the predicted ending)."""

import csv

import keras
import numpy as np

from keras_bert.metrics.glue import accuracy


def choice_loss():
    """The loss to compile a `BertMultipleChoice` with (softmax over the choices' scores)."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def check_labeled(examples, source):
    """Raises ValueError naming `source` (the file) when `examples` have no labels (nothing to score)."""
    if any(example.label is None for example in examples):
        raise ValueError(f"{source} has no label column")


def eval_results(model, examples, logits, source):
    """accuracy, eval_loss (the compiled loss) and num_examples of the logits [n, num_choices] of a
    compiled `model` on `examples`; raises ValueError naming `source` (the file) when they have no labels."""
    check_labeled(examples, source)
    labels = np.asarray([example.label for example in examples])
    return {"accuracy": accuracy(np.argmax(logits, axis=-1), labels), "eval_loss": float(model.loss(labels, logits)),
            "num_examples": len(examples)}


def write_predictions(path, examples, logits):
    """Writes `swag_id,label,prob0..probN` per example (label: the predicted choice) to `path`; returns it."""
    probabilities = keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["swag_id", "label", *(f"prob{i}" for i in range(probabilities.shape[1]))])
        for example, row in zip(examples, probabilities, strict=True):
            writer.writerow([example.swag_id, int(np.argmax(row)), *(f"{p:.6f}" for p in row)])
    return path
