"""Consistency of the finished answers an export serves, checked on every request the check runs.

Entities must be the spans of the text they name (`text[entity_start:entity_end] == entity_text`, the text
decoded as Python decodes it, invalid bytes as U+FFFD), padded with "" / -1 past `entity_count`; class
probabilities sum to 1 and `label_id` / `choice` are their argmax; a `sentence_embedding` is finite.
"""

import numpy as np

from .errors import ServabilityError


def _entities(where, texts, outputs):
    count = outputs["entity_count"]
    width = outputs["entity_text"].shape[1]
    if count.shape != (len(texts),) or (count.size and count.max() != width):
        raise ServabilityError(f"{where}: entity_count {count.tolist()} does not fit entity_text of shape "
                               f"{outputs['entity_text'].shape} for {len(texts)} texts")
    for row, text in enumerate(texts):
        decoded = text.decode("utf-8", "replace")
        for i in range(width):
            span = tuple(outputs[k][row, i]
                         for k in ("entity_text", "entity_type", "entity_start", "entity_end"))
            if i >= count[row]:
                if span != (b"", b"", -1, -1):
                    raise ServabilityError(f"{where}: text {row} entity {i} is past entity_count "
                                           f"{count[row]} but not padding: {span}")
            elif decoded[span[2]:span[3]].encode() != span[0] or not span[0]:
                raise ServabilityError(f"{where}: text {row} entity {i} {span[0]!r} is not text[{span[2]}:"
                                       f"{span[3]}] = {decoded[span[2]:span[3]]!r}")


def _spans(where, contexts, outputs):
    """A span labeler's `answer` must be context[answer_start:answer_end] (Python character indexes)."""
    for row, context in enumerate(np.asarray(contexts).reshape(-1)):
        text = context.decode("utf-8", "replace") if isinstance(context, bytes) else str(context)
        start, end = int(outputs["answer_start"][row]), int(outputs["answer_end"][row])
        answer = outputs["answer"][row].decode("utf-8", "replace")
        if text[start:end] != answer:
            raise ServabilityError(f"{where}: answer {answer!r} of example {row} is not "
                                   f"context[{start}:{end}] = {text[start:end]!r}")


def check_answers(where, inputs, outputs):
    """Raises ServabilityError naming `where` and the output when a served answer is inconsistent."""
    if "answer" in outputs and "context" in inputs:
        _spans(where, inputs["context"], outputs)
    if "entity_count" in outputs and "text" in inputs:
        _entities(where, list(inputs["text"]), outputs)
    probabilities = outputs.get("probabilities")
    if probabilities is not None and probabilities.size:
        sums = probabilities.sum(axis=-1)
        if not np.allclose(sums, 1.0, atol=1e-3):
            raise ServabilityError(f"{where}: probabilities sum to {sums.tolist()}, expected 1")
        for name in ("label_id", "choice"):
            if name in outputs and not np.array_equal(outputs[name], probabilities.argmax(axis=-1)):
                raise ServabilityError(f"{where}: {name} {outputs[name].tolist()} is not the argmax of the "
                                       "probabilities")
    embedding = outputs.get("sentence_embedding")
    if embedding is not None and not np.all(np.isfinite(embedding)):
        raise ServabilityError(f"{where}: sentence_embedding has non-finite values")
