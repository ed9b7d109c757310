"""BertPacker truncation vs the original `_truncate_seq_pair`, layout, and BertPreprocessor."""

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertPacker, BertPreprocessor, BertTokenizer


def original_truncate_seq_pair(tokens_a, tokens_b, max_num_tokens):
    """google-research/bert's rule, re-implemented: pop from the longer list (b on ties)."""
    tokens_a, tokens_b = list(tokens_a), list(tokens_b)
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        (tokens_a if len(tokens_a) > len(tokens_b) else tokens_b).pop()
    return tokens_a, tokens_b


def test_pair_truncation_matches_original():
    rng = random.Random(0)
    seq_length = 11
    rows_a = [[100 + j for j in range(rng.randint(0, 14))] for _ in range(300)]
    rows_b = [[200 + j for j in range(rng.randint(0, 14))] for _ in range(300)]
    packer = BertPacker(seq_length, start_id=2, end_id=3, pad_id=0)
    out = packer((tf.ragged.constant(rows_a, tf.int32, ragged_rank=1, inner_shape=()),
                  tf.ragged.constant(rows_b, tf.int32)))  # fmt: skip
    for i, (a, b) in enumerate(zip(rows_a, rows_b, strict=True)):
        a, b = original_truncate_seq_pair(a, b, seq_length - 3)
        expected = [2] + a + [3] + b + [3]
        expected_types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
        pad = seq_length - len(expected)
        assert out["input_word_ids"][i].numpy().tolist() == expected + [0] * pad
        assert out["input_type_ids"][i].numpy().tolist() == expected_types + [0] * pad
        assert out["input_mask"][i].numpy().tolist() == [1] * len(expected) + [0] * pad
    assert all(v.dtype == tf.int32 and v.shape == (300, seq_length) for v in out.values())


def test_single_segment_and_unbatched():
    packer = BertPacker(6, start_id=101, end_id=102)
    out = packer(tf.ragged.constant([[5, 6, 7, 8, 9], [], [4]]))
    np.testing.assert_array_equal(
        out["input_word_ids"], [[101, 5, 6, 7, 8, 102], [101, 102, 0, 0, 0, 0], [101, 4, 102, 0, 0, 0]]
    )
    np.testing.assert_array_equal(out["input_mask"][1], [1, 1, 0, 0, 0, 0])
    single = packer(tf.constant([5, 6]))
    np.testing.assert_array_equal(single["input_word_ids"], [101, 5, 6, 102, 0, 0])
    with pytest.raises(ValueError, match="seq_length=2"):
        BertPacker(2, 1, 2)


def test_longest_row_padding_and_builtin_ops_only():
    ragged = tf.ragged.constant([[7, 8, 9, 10, 11, 12], [], [5], [6, 6, 6, 6, 6, 6, 6, 6, 6]], tf.int32)
    fixed, longest = BertPacker(32, 2, 3), BertPacker(32, 2, 3, pad_to_multiple_of=8)
    for segments, width in ((ragged, 16), ((ragged, ragged[::-1]), 24)):  # rows of at most 11 and 18 ids
        want, got = fixed(segments), longest(segments)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name][:, :width], err_msg=name)
    empty = longest(ragged[:0])
    assert empty["input_word_ids"].shape == (0, 8)
    # Gathers and selects, no ragged kernels (LiteRT has none), and few ops: every export traces them.
    spec = tf.RaggedTensorSpec([None, None], tf.int32, row_splits_dtype=tf.int64)
    graph = tf.function(lambda a, b: longest((a, b))).get_concrete_function(spec, spec).graph
    op_types = {op.type for op in graph.get_operations()}
    assert not {op for op in op_types if op.startswith("Ragged")}, op_types
    assert len(graph.get_operations()) < 200


def test_preprocessor_pairs_dataset_and_config(tiny_vocab_file):
    tokenizer = BertTokenizer(tiny_vocab_file)
    preprocessor = BertPreprocessor(tokenizer, seq_length=8)
    pair = preprocessor(
        {"text_a": tf.constant(["the cat sat"]), "text_b": tf.constant(["on a mat , unaffable"])}
    )
    # Budget 5 for a (3 pieces) and b (7): b shrinks to 3, then the tie pops b again: 3 + 2.
    np.testing.assert_array_equal(pair["input_word_ids"], [[2, 8, 9, 10, 3, 11, 16, 3]])
    np.testing.assert_array_equal(pair["input_type_ids"], [[0, 0, 0, 0, 0, 1, 1, 1]])
    same = preprocessor((tf.constant(["the cat sat"]), tf.constant(["on a mat , unaffable"])))
    np.testing.assert_array_equal(same["input_word_ids"], pair["input_word_ids"])
    dataset = tf.data.Dataset.from_tensor_slices(["the cat", "sat"]).map(preprocessor)
    first = next(iter(dataset))
    np.testing.assert_array_equal(first["input_word_ids"], [2, 8, 9, 3, 0, 0, 0, 0])
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(preprocessor))
    np.testing.assert_array_equal(
        restored(tf.constant(["the cat"]))["input_word_ids"], [[2, 8, 9, 3, 0, 0, 0, 0]]
    )
    with pytest.raises(ValueError, match="text_a"):
        preprocessor({"sentence": tf.constant(["x"])})
