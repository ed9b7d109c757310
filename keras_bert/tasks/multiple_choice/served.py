"""The served answers of a multiple choice model (its choice): their consistency check
(`keras_bert.export.servability`) and their readable lines (export/client.py), listed in
`keras_bert.tasks.registry.SERVED`."""

import numpy as np


def check_answers(inputs, outputs):
    """`choice` must be the argmax of the probabilities."""
    del inputs
    probabilities = outputs.get("probabilities")
    if "choice" not in outputs or probabilities is None or not probabilities.size:
        return None
    if not np.array_equal(outputs["choice"], probabilities.argmax(axis=-1)):
        return f"choice {outputs['choice'].tolist()} is not the argmax of the probabilities"
    return None


def describe(example):
    """(["choice: 2 (p=0.700)"], the names shown) of one served example, or None."""
    if "choice" not in example or isinstance(example["choice"], list):
        return None
    chosen, probabilities = example["choice"], example.get("probabilities")
    p = f" (p={probabilities[chosen]:.3f})" if isinstance(probabilities, list) else ""
    return [f"choice: {chosen}{p}"], ("choice", "label_id", "probabilities", "logits")
