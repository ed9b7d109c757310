"""Consistency of the finished answers an export serves, checked on every request the check runs.

Each task folder states the check of its own answers (`TaskSpec.check_answers`, `keras_bert.tasks.registry`:
spans of the text they name, a choice that is the argmax); here, for every model: class probabilities sum to
1 and `label_id` is their argmax, a `sentence_embedding` is finite.
"""

import numpy as np

from keras_bert.tasks.registry import served_modules
from keras_bert_servability import ServabilityError


def check_answers(where, inputs, outputs):
    """Raises ServabilityError naming `where` and the output when a served answer is inconsistent."""
    for module in served_modules():
        problem = getattr(module, "check_answers", None) and module.check_answers(inputs, outputs)
        if problem:
            raise ServabilityError(f"{where}: {problem}")
    probabilities = outputs.get("probabilities")
    if probabilities is not None and probabilities.size:
        sums = probabilities.sum(axis=-1)
        if not np.allclose(sums, 1.0, atol=1e-3):
            raise ServabilityError(f"{where}: probabilities sum to {sums.tolist()}, expected 1")
        label_id = outputs.get("label_id")
        if label_id is not None and not np.array_equal(label_id, probabilities.argmax(axis=-1)):
            raise ServabilityError(f"{where}: label_id {label_id.tolist()} is not the argmax of the "
                                   "probabilities")
    embedding = outputs.get("sentence_embedding")
    if embedding is not None and not np.all(np.isfinite(embedding)):
        raise ServabilityError(f"{where}: sentence_embedding has non-finite values")
