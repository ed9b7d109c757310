"""MaskedLMMasker: counts as the original, 80/10/10 rates, determinism, whole-word groups."""

import numpy as np
import tensorflow as tf

from keras_bert.text import MaskedLMMasker

VOCAB_SIZE, MASK, CLS, SEP, PAD = 1000, 4, 2, 3, 0


def _batch(n_rows=400, seq=64, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.zeros([n_rows, seq], np.int32)
    mask = np.zeros([n_rows, seq], np.int32)
    lengths = rng.integers(3, seq + 1, n_rows)
    for i, n in enumerate(lengths):
        ids[i, :n] = rng.integers(10, VOCAB_SIZE, n)
        ids[i, 0], ids[i, n - 1] = CLS, SEP
        mask[i, :n] = 1
    return {"input_word_ids": tf.constant(ids), "input_mask": tf.constant(mask)}, lengths


def _masker(**kwargs):
    return MaskedLMMasker(VOCAB_SIZE, MASK, [PAD, CLS, SEP, MASK], max_predictions_per_seq=20, **kwargs)


def test_counts_rates_and_outputs():
    features, lengths = _batch()
    out = _masker(seed=1)(features)
    original = features["input_word_ids"].numpy()
    positions, labels = out["masked_lm_positions"].numpy(), out["masked_lm_ids"].numpy()
    weights = out["masked_lm_weights"].numpy()
    assert positions.dtype == np.int32 and labels.dtype == np.int32 and weights.dtype == np.float32
    assert positions.shape == (400, 20)
    # The original: min(max_predictions, max(1, round(n_tokens * 0.15))), [CLS]/[SEP] counted in n_tokens.
    expected = np.minimum(20, np.maximum(1, np.round(lengths * 0.15))).astype(int)
    np.testing.assert_array_equal(weights.sum(1), expected)
    masked = out["input_word_ids"].numpy()
    kinds = []
    for i in range(400):
        n = int(weights[i].sum())
        row_positions = positions[i, :n]
        assert (
            np.all(np.diff(row_positions) > 0)
            and np.all(positions[i, n:] == 0)
            and np.all(labels[i, n:] == 0)
        )
        assert np.all((row_positions > 0) & (row_positions < lengths[i] - 1))  # never [CLS]/[SEP]/padding
        np.testing.assert_array_equal(labels[i, :n], original[i, row_positions])
        untouched = np.setdiff1d(np.arange(64), row_positions)
        np.testing.assert_array_equal(masked[i, untouched], original[i, untouched])
        for p in row_positions:
            kinds.append(
                "mask" if masked[i, p] == MASK else "same" if masked[i, p] == original[i, p] else "random"
            )
    kinds = np.array(kinds)
    # ~3000 predictions: 80/10/10 within about 4 standard deviations.
    assert abs(np.mean(kinds == "mask") - 0.8) < 0.03
    assert abs(np.mean(kinds == "random") - 0.1) < 0.025 and abs(np.mean(kinds == "same") - 0.1) < 0.025


def test_deterministic_with_seed():
    features, _ = _batch(50)
    a, b, c = _masker(seed=7)(features), _masker(seed=7)(features), _masker(seed=8)(features)
    np.testing.assert_array_equal(a["input_word_ids"], b["input_word_ids"])
    np.testing.assert_array_equal(a["masked_lm_positions"], b["masked_lm_positions"])
    assert not np.array_equal(a["masked_lm_positions"], c["masked_lm_positions"])
    masker = _masker(seed=7)
    first, second = masker(features), masker(features)  # dynamic masking: the next call differs
    assert not np.array_equal(first["masked_lm_positions"], second["masked_lm_positions"])
    stateless = [_masker()(features, seed=tf.constant([3, 4]))["masked_lm_positions"] for _ in range(2)]
    np.testing.assert_array_equal(*stateless)
    # In tf.data with per-element seeds, reruns give the same masks.
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(10)
    dataset = tf.data.Dataset.zip(dataset, tf.data.Dataset.random(seed=5).batch(2))
    dataset = dataset.map(lambda x, s: _masker()(x, seed=s), num_parallel_calls=2)
    runs = [np.concatenate([b["masked_lm_positions"] for b in dataset]) for _ in range(2)]
    np.testing.assert_array_equal(*runs)


def test_whole_word_groups():
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
        f"w{i}" if i % 3 else f"##w{i}" for i in range(5, 200)
    ]
    continuation = np.array([t.startswith("##") for t in vocab])
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 200, [200, 40]).astype(np.int32)
    ids[:, 0], ids[:, -1] = CLS, SEP
    features = {"input_word_ids": tf.constant(ids), "input_mask": tf.ones_like(ids)}
    masker = MaskedLMMasker(200, MASK, [PAD, CLS, SEP], 8, whole_word_mask=True, vocab=vocab, seed=3)
    out = masker(features)
    weights = out["masked_lm_weights"].numpy()
    total = 0
    for i in range(200):
        chosen = set(out["masked_lm_positions"][i, : int(weights[i].sum())].numpy().tolist())
        total += len(chosen)
        # Words: a non-"##" piece and the "##" pieces after it (the original's rule).
        start = 1
        for j in range(2, 40):
            if j == 39 or not continuation[ids[i, j]]:
                word = set(range(start, j))
                assert word <= chosen or not (word & chosen), (i, word, chosen)
                start = j
        assert len(chosen) <= 6  # round(40 * 0.15)
    assert total > 200 * 4
    # Word ids given explicitly: same grouping rule on a packed [CLS] a [SEP].
    word_ids = np.repeat(np.arange(20), 2)[None].repeat(200, 0).astype(np.int32)
    out = MaskedLMMasker(200, MASK, [PAD, CLS, SEP], 8, whole_word_mask=True, seed=3)(
        {**features, "word_ids": tf.constant(word_ids)}
    )
    for i in range(200):
        chosen = out["masked_lm_positions"][i, : int(out["masked_lm_weights"][i].numpy().sum())].numpy()
        for p in chosen:
            partner = p + 1 if p % 2 == 0 else p - 1
            assert partner in chosen or partner in (0, 39)
