"""Resizing the vocab rows of a checkpoint: the word embeddings and the masked-LM output bias.

Works on `CheckpointWeights` (Google's names), so it serves every format the readers and writers know.
A new row starts as the mean of the rows of the old pieces the token used to be split into: the model
first sees a new word about as it saw its pieces, and every old row is kept bit for bit.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights
from keras_bert.config import BertConfig

WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"
MLM_OUTPUT_BIAS = "cls/predictions/output_bias"


def resize_vocab(config: BertConfig, weights: CheckpointWeights, vocab_size: int,
                 new_rows: dict[int, list[int]]) -> tuple[BertConfig, CheckpointWeights]:
    """The config and weights of a checkpoint whose vocab grew to `vocab_size` tokens.

    Args:
        config: the checkpoint's config (`config.vocab_size` rows in its vocab arrays).
        weights: its weights; the word embeddings [vocab, hidden] and, when present, the MLM output bias
            [vocab] are resized, every other array is passed on as it is.
        vocab_size: int >= config.vocab_size.
        new_rows: new id -> the old ids whose mean initialises its row. Ids < config.vocab_size overwrite a
            slot (an `[unusedK]` token); every id from config.vocab_size to vocab_size - 1 must be given.

    Returns:
        (config with `vocab_size`, CheckpointWeights with the resized float arrays, same path and names).

    Raises:
        CheckpointError: naming the variable whose rows do not match `config.vocab_size`, a new id out of
            range, or a missing appended id.
    """
    old_size = config.vocab_size
    if vocab_size < old_size:
        raise CheckpointError(f"{weights.path}: vocab_size={vocab_size} is smaller than the checkpoint's "
                              f"{old_size}; only growing the vocab is supported")
    missing = sorted(set(range(old_size, vocab_size)) - set(new_rows))
    if missing:
        raise CheckpointError(f"{weights.path}: no initialisation given for new id {missing[0]} (and "
                              f"{len(missing) - 1} more); expected every id in [{old_size}, {vocab_size})")
    for new_id, old_ids in new_rows.items():
        if not 0 <= new_id < vocab_size or not old_ids or not all(0 <= i < old_size for i in old_ids):
            raise CheckpointError(f"{weights.path}: new id {new_id} from old ids {old_ids}; expected an id "
                                  f"below {vocab_size} and a non-empty list of ids below {old_size}")
    arrays = dict(weights.arrays)
    for name in (WORD_EMBEDDINGS, MLM_OUTPUT_BIAS):
        if not weights.has(name):
            if name == WORD_EMBEDDINGS:
                raise CheckpointError(f"{weights.path}: variable {weights.file_name(name)!r} is missing")
            continue
        old = weights.arrays[name]
        if old.shape[0] != old_size:
            raise CheckpointError(f"{weights.path}: variable {weights.file_name(name)!r} has {old.shape[0]} "
                                  f"rows, expected vocab_size={old_size} from the config")
        # Means are taken in float64 over the OLD array, so an overwritten [unusedK] row is never a source.
        new = np.concatenate([old, np.zeros((vocab_size - old_size, *old.shape[1:]), old.dtype)])
        for new_id, old_ids in new_rows.items():
            new[new_id] = old[old_ids].astype(np.float64).mean(axis=0).astype(old.dtype)
        arrays[name] = new
    return (dataclasses.replace(config, vocab_size=vocab_size),
            dataclasses.replace(weights, arrays=arrays))
