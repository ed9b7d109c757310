"""Every layer through the shared harness: shapes, config and `.keras` round trips, mixed_bfloat16."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.layers import BertEmbeddings, HashDropout, MaskedLMHead, TransformerBlock, attention_bias
from keras_bert.layers.transformer import real_rows
from tests.harness import run_layer_test

RNG = np.random.default_rng(0)
HIDDEN = RNG.normal(size=(2, 5, 8)).astype("float32")
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
IDS = RNG.integers(0, 11, (2, 5)).astype("int32")
TYPE_IDS = np.array([[0, 0, 1, 1, 1], [0, 0, 0, 0, 0]], "int32")
BLOCK = {"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 16, "hidden_act": "gelu_tanh",
         "hidden_dropout": 0.1, "attention_dropout": 0.2, "initializer_range": 0.5, "layer_norm_eps": 1e-6}
EMBEDDINGS = {"vocab_size": 11, "hidden_size": 8, "max_position_embeddings": 7, "type_vocab_size": 2,
              "initializer_range": 0.5, "layer_norm_eps": 1e-6, "dropout": 0.1}


def test_transformer_block(tmp_path):
    bias = keras.ops.convert_to_numpy(attention_bias(MASK))
    run_layer_test(TransformerBlock, BLOCK, (HIDDEN, bias), (2, 5, 8), tmp_path)


def test_transformer_block_on_real_rows():
    # As served (`real_rows`): the Dense layers see the real tokens only (8 of 10 positions here); real
    # positions answer as on the padded rows, padded positions are 0; eager and traced alike.
    block = TransformerBlock(**BLOCK)
    bias = attention_bias(MASK)
    want = keras.ops.convert_to_numpy(block(HIDDEN, bias))
    seen = []
    own_call = block.intermediate.call
    block.intermediate.call = lambda x: seen.append(x.shape[0]) or own_call(x)
    with real_rows():
        eager = keras.ops.convert_to_numpy(block(HIDDEN, bias))
        traced = tf.function(lambda h, b: block(h, b))(HIDDEN, bias).numpy()
    assert seen[0] == MASK.sum() == 8
    real = MASK.astype(bool)
    for got in (eager, traced):
        np.testing.assert_allclose(got[real], want[real], atol=1e-5)
        assert not got[~real].any()
    # A batch without a real token (a token-id request of zero masks), and an empty batch: zeros, no error.
    with real_rows():
        for mask in (np.zeros_like(MASK), MASK[:0]):
            got = tf.function(lambda h, b: block(h, b))(HIDDEN[:len(mask)], attention_bias(mask)).numpy()
            assert got.shape == (len(mask), 5, 8) and not got.any()
    # Outside the context the block runs on every position again; bfloat16 matmuls keep them inside it.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(block(HIDDEN, bias)), want, atol=1e-6)
    assert seen[-1] == MASK.size
    bf16 = TransformerBlock(**BLOCK, dtype="bfloat16")
    bf16(HIDDEN, bias)
    with real_rows():
        assert not bf16._on_real_rows() and block._on_real_rows()


def test_bert_embeddings(tmp_path):
    run_layer_test(BertEmbeddings, EMBEDDINGS, (IDS, TYPE_IDS), (2, 5, 8), tmp_path)


def test_hash_dropout(tmp_path):
    run_layer_test(HashDropout, {"rate": 0.3, "seed": 7}, (HIDDEN,), (2, 5, 8), tmp_path)


def test_masked_lm_head(tmp_path):
    word_embeddings = keras.layers.Embedding(11, 8)
    word_embeddings.build(None)
    positions = np.array([[0, 4], [2, 2]], "int32")
    # Logits are float32 under mixed precision too (documented); the tied table is not in its config.
    run_layer_test(MaskedLMHead, {"hidden_act": "relu", "initializer_range": 0.5, "layer_norm_eps": 1e-6},
                   (HIDDEN, positions), (2, 2, 11), tmp_path, mixed_output_dtype="float32",
                   rebuild_kwargs={"embedding_layer": word_embeddings})
