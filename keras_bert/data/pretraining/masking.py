"""Static masked-LM masking of packed rows in numpy: the rule of `keras_bert.text.masking` (candidates,
budget, whole-word groups, 80/10/10), executed on a whole chunk of examples at once for TFRecords."""

import numpy as np

from keras_bert.text import masking


def _choose_tokens(candidate, budget, rng):
    """(rows, columns) of `budget` (capped by the candidates) candidate positions per row, uniformly at
    random: row-major, columns ascending within a row."""
    n, seq = candidate.shape
    width = min(int(budget.max(initial=1)), seq)
    # Random 31-bit keys that end in the column number (distinct, so no ties); non-candidates last.
    bits = max(1, (seq - 1).bit_length())
    keys = (rng.integers(0, 1 << 32, (n, seq), dtype=np.uint32) >> (bits + 1) << bits).view(np.int32)
    keys |= np.arange(seq, dtype=np.int32)
    keys[~candidate] = np.iinfo(np.int32).max
    smallest = np.sort(np.partition(keys, width - 1, axis=1)[:, :width] if width < seq else keys, axis=1)
    taken = (smallest != np.iinfo(np.int32).max) & (np.arange(width)[None, :] < budget[:, None])
    columns = np.where(taken, smallest & ((1 << bits) - 1), seq)
    columns.sort(axis=1)
    taken = columns < seq
    return np.nonzero(taken)[0], columns[taken]


def _choose_words(candidate, budget, continuation, rng):
    """Bool [n, seq]: whole words (`masking.word_leaders` groups), shuffled and taken in turn while they fit
    (`masking.group_fits`)."""
    n, seq = candidate.shape
    leader = masking.word_leaders(candidate, continuation)
    group = np.cumsum(leader, axis=1) - 1
    num_groups = leader.sum(axis=1)
    index = np.arange(n)[:, None] * seq + group
    group_size = np.bincount(index[candidate], minlength=n * seq).reshape(n, seq)
    keys = rng.random((n, seq), dtype=np.float32)
    keys[np.arange(seq)[None, :] >= num_groups[:, None]] = 2.0
    order = np.argsort(keys, axis=1)
    sizes = np.take_along_axis(group_size, order, 1)
    used, taken = np.zeros(n, np.int64), np.zeros((n, seq), bool)
    rows = np.nonzero(num_groups > 0)[0]
    for rank in range(seq):
        if not len(rows):
            break
        size = sizes[rows, rank]
        fits = masking.group_fits(used[rows], size, budget[rows])
        used[rows[fits]] += size[fits]
        taken[rows[fits], rank] = True
        rows = rows[(used[rows] < budget[rows]) & (rank + 1 < num_groups[rows])]
    taken_group = np.zeros((n, seq), bool)
    np.put_along_axis(taken_group, order, taken, axis=1)
    return candidate & np.take_along_axis(taken_group, np.where(candidate, group, 0), 1)


def mask_tokens(features, config, vocab_size, mask_id, special_ids, rng, continuation=None):
    """The original's `create_masked_lm_predictions`, vectorized over a batch of packed rows (numpy).

    Args:
        features: dict with int `input_ids` and `input_mask` [n, seq] (`pairing.pack_spans`).
        config: a `PretrainingDataConfig` (max_predictions_per_seq, masked_lm_prob, whole_word_mask).
        vocab_size, mask_id, special_ids: the tokenizer's; random replacements are uniform in [0, vocab_size).
        rng: a `np.random.Generator`.
        continuation: bool [vocab_size] (`masking.continuation_pieces(vocab)`), needed for whole words.

    Per row `masking.prediction_budget` positions among `masking.masking_candidates`, uniformly at random
    (or whole words), each shown as `masking.replacement_ids` says.

    Returns `features` plus `masked_lm_positions`, `masked_lm_ids` (int32), `masked_lm_weights` (float32)
    [n, max_predictions_per_seq], positions ascending and 0-padded; `input_ids` is a masked copy.
    """
    if config.whole_word_mask and continuation is None:
        raise ValueError("whole_word_mask needs `continuation` (masking.continuation_pieces(vocab))")
    input_ids = features["input_ids"]
    n, width = input_ids.shape[0], config.max_predictions_per_seq
    real = features["input_mask"] > 0
    candidate = masking.masking_candidates(input_ids, real, special_ids)
    budget = masking.prediction_budget(real.sum(axis=1), config.masked_lm_prob, width).astype(np.int64)
    if config.whole_word_mask:
        chosen = _choose_words(candidate, budget, np.asarray(continuation)[input_ids], rng)
        rows, columns = np.nonzero(chosen)
    else:
        rows, columns = _choose_tokens(candidate, budget, rng)
    originals = input_ids[rows, columns]
    masked = input_ids.copy()
    masked[rows, columns] = masking.replacement_ids(originals, rng.random(len(rows)),
                                                    rng.integers(0, vocab_size, len(rows)), mask_id)
    count = np.bincount(rows, minlength=n)
    slot = np.arange(len(rows)) - (np.cumsum(count) - count)[rows]
    positions = np.zeros((n, width), np.int32)
    ids = np.zeros((n, width), np.int32)
    weights = np.zeros((n, width), np.float32)
    positions[rows, slot], ids[rows, slot], weights[rows, slot] = columns, originals, 1.0
    return dict(features, input_ids=masked, masked_lm_positions=positions, masked_lm_ids=ids,
                masked_lm_weights=weights)
