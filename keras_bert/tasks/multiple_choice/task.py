"""Multiple choice on SWAG: the answers of the model's `serve`, accuracy over labeled questions, and the
predictions CSV (`swag_id,label,prob0..prob3` per question; label is the predicted ending). The loss is
the model's (`BertMultipleChoice.task_loss`)."""

import csv

import numpy as np

from keras_bert.metrics.glue import accuracy
from keras_bert.tasks.finetuning import serve_all


def served(model, examples, batch_size=32, preprocessor=None):
    """`model.serve` (signature "text_pair": the context, and the start + ending of each choice; with
    `preprocessor`, default the model's own) on `examples` (`SwagExample`s): {"logits", "probabilities":
    float32 [n, num_choices], "choice": int32 [n], ...}."""
    pairs = [example.choice_pairs() for example in examples]
    inputs = {"text": [choices[0][0] for choices in pairs],
              "text_b": [[b for _, b in choices] for choices in pairs]}
    return serve_all(model, inputs, batch_size, preprocessor, signature="text_pair")


def check_labeled(examples, source):
    """Raises ValueError naming `source` (the file) when `examples` have no labels (nothing to score)."""
    if any(example.label is None for example in examples):
        raise ValueError(f"{source} has no label column")


def eval_results(model, examples, answers, source):
    """accuracy, eval_loss (the model's `task_loss`) and num_examples of the `served` `answers` of `model` on
    `examples`; raises ValueError naming `source` (the file) when they have no labels."""
    check_labeled(examples, source)
    labels = np.asarray([example.label for example in examples])
    eval_loss = model.task_loss()[0](labels, answers["logits"])
    return {"accuracy": accuracy(answers["choice"], labels), "eval_loss": float(eval_loss),
            "num_examples": len(examples)}


def write_predictions(path, examples, answers):
    """Writes `swag_id,label,prob0..probN` per example (label: the served choice, probabilities: the served
    ones) to `path`; returns it."""
    probabilities = answers["probabilities"]
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["swag_id", "label", *(f"prob{i}" for i in range(probabilities.shape[1]))])
        for example, row, choice in zip(examples, probabilities, answers["choice"], strict=True):
            writer.writerow([example.swag_id, int(choice), *(f"{p:.6f}" for p in row)])
    return path
