"""Every layer through the shared harness: shapes, config and `.keras` round trips, mixed_bfloat16."""

import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import BertEmbeddings, HashDropout, MaskedLMHead, TransformerBlock, attention_bias
from keras_bert.layers.layer_norm import LayerNorm
from keras_bert.layers.transformer import column_sums, real_rows
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


def _answers_and_gradients(layer, inputs, upstream, training):
    """`layer(*inputs)`, then the gradients of sum(outputs * upstream) in the first input and every weight."""
    with tf.GradientTape() as tape:
        tape.watch(inputs[0])
        outputs = layer(*inputs, training=training)
        loss = tf.reduce_sum(tf.cast(outputs, upstream.dtype) * upstream)
    return [outputs, *tape.gradient(loss, [inputs[0], *layer.trainable_variables])]


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
    # A lone row's layout (`gather=False`): every position through the Dense layers, the output the same
    # (real positions as padded, 0 at padded ones).
    with real_rows(gather=False):
        lone = tf.function(lambda h, b: block(h, b))(HIDDEN, bias).numpy()
    assert seen[-1] == MASK.size and not block._on_real_rows()
    np.testing.assert_allclose(lone[real], want[real], atol=1e-5)
    assert not lone[~real].any()
    # Outside the context the block runs on every position again; bfloat16 matmuls keep them inside it.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(block(HIDDEN, bias)), want, atol=1e-6)
    assert seen[-1] == MASK.size
    bf16 = TransformerBlock(**BLOCK, dtype="bfloat16")
    bf16(HIDDEN, bias)
    with real_rows():
        assert not bf16._on_real_rows() and block._on_real_rows()
    with real_rows(gather=False):  # bf16 pads are left as computed
        assert bf16._served_float32() is None and block._served_float32() == "padded"


@pytest.mark.parametrize("activation, policy", [("gelu_tanh", "float32"), ("gelu", "float32"),
                                                ("gelu", "mixed_bfloat16")])
def test_a_block_in_training_differentiates_as_autodiff(activation, policy):
    # Without dropout, training's forward is inference's: its written-out gradients (products, softmax,
    # LayerNorm, the exact GELU, in bf16 the Dense biases') answer as TF's autodiff of inference's ops, for
    # the inputs and every weight (in bf16 to its rounding).
    keras.mixed_precision.set_global_policy(policy)
    try:
        block = TransformerBlock(**{**BLOCK, "hidden_act": activation, "hidden_dropout": 0.0,
                                    "attention_dropout": 0.0})
        hidden, bias = tf.constant(HIDDEN), attention_bias(MASK)
        block(hidden, bias)
        upstream = tf.constant(RNG.normal(size=HIDDEN.shape).astype("float32"))
        got = _answers_and_gradients(block, (hidden, bias), upstream, True)
        want = _answers_and_gradients(block, (hidden, bias), upstream, False)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert len(got) == 2 + len(block.trainable_variables) == 14
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if policy == "float32" else {"rtol": 2e-2, "atol": 2e-2}
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(tf.cast(a, tf.float32), tf.cast(b, tf.float32), **tolerance)


def test_column_sums_accumulate_in_float32():
    # A bf16 training step's bias gradients: over 4096 rows only the result's rounding is lost (TF's own
    # bf16 BiasAddGrad accumulates in bf16 on CPU: ~20% relative error on these rows).
    rows = tf.cast(RNG.normal(size=(4096, 64)) * 1e-3 + 2e-4, tf.bfloat16)
    exact = rows.numpy().astype("float64").sum(0)
    got = tf.cast(column_sums(rows), tf.float64).numpy()
    assert np.linalg.norm(got - exact) / np.linalg.norm(exact) < 4e-3


def test_bert_embeddings(tmp_path):
    run_layer_test(BertEmbeddings, EMBEDDINGS, (IDS, TYPE_IDS), (2, 5, 8), tmp_path)


def test_layer_norm(tmp_path):
    run_layer_test(LayerNorm, {"epsilon": 1e-6}, (HIDDEN,), (2, 5, 8), tmp_path)
    # Keras' LayerNormalization's answers (same weights), on rows far from zero mean too, in float32 and
    # from bfloat16 inputs (normalized in float32, rounded to bfloat16: one bf16 step apart at a rounding
    # boundary); another axis falls back to Keras.
    rows = RNG.normal(3.0, 0.5, size=(6, 384)).astype("float32") + np.linspace(-40, 40, 6)[:, None]
    gamma, beta = RNG.normal(size=384).astype("float32"), RNG.normal(size=384).astype("float32")
    for inputs, axis, atol in ((rows, -1, 2e-5), (rows.reshape(2, 3, 384), 2, 2e-5),
                               (tf.cast(rows, "bfloat16"), -1, 2e-2), (rows.reshape(6, 12, 32), 1, 2e-5)):
        ours, theirs = LayerNorm(axis=axis, epsilon=1e-12), keras.layers.LayerNormalization(axis=axis,
                                                                                            epsilon=1e-12)
        for layer in (ours, theirs):
            layer.build(inputs.shape)
            layer.set_weights([np.resize(gamma, layer.gamma.shape), np.resize(beta, layer.beta.shape)])
        got, want = ours(inputs), theirs(inputs)
        assert got.dtype == want.dtype == "float32"
        np.testing.assert_allclose(got, want, atol=atol, err_msg=f"axis {axis}, {inputs.dtype}")
    # The centered form: no broadcast SquaredDifference in its graph.
    layer = LayerNorm(epsilon=1e-12)
    layer.build((None, 384))
    graph = tf.function(layer).get_concrete_function(tf.TensorSpec([None, 384])).graph
    kinds = {op.type for op in graph.get_operations()}
    assert "Square" in kinds and "SquaredDifference" not in kinds


def test_layer_norm_in_training_has_autodiffs_gradient_in_fewer_ops():
    # Training differentiates the written-out gradient; inference's forward ops are differentiated op by op:
    # the same answers and gradients (inputs, gamma, beta), on [rows, hidden] and [batch, seq, hidden].
    for shape in ((6, 384), (2, 3, 384)):
        inputs = tf.constant(RNG.normal(3.0, 2.0, size=shape).astype("float32"))
        upstream = tf.constant(RNG.normal(size=shape).astype("float32"))
        layer = LayerNorm(epsilon=1e-12)
        layer.build(shape)
        layer.set_weights([RNG.normal(size=384).astype("float32"), RNG.normal(size=384).astype("float32")])
        for got, want in zip(_answers_and_gradients(layer, (inputs,), upstream, True),
                             _answers_and_gradients(layer, (inputs,), upstream, False), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)

    # A traced train step's LayerNorm gradient: no shape arithmetic of broadcasting ops.
    layer = LayerNorm(epsilon=1e-12)
    layer.build((None, 384))

    def gradient_ops(training):
        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(layer(x, training=training))
            return tape.gradient(loss, [x, *layer.trainable_variables])

        graph = step.get_concrete_function(tf.TensorSpec([None, 384])).graph
        return [op.type for op in graph.get_operations()]

    assert "BroadcastGradientArgs" in gradient_ops(False)
    assert "BroadcastGradientArgs" not in gradient_ops(True)
    assert len(gradient_ops(True)) < 0.6 * len(gradient_ops(False))  # 48 ops against 93


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


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_the_masked_lm_head_in_training_answers_and_differentiates_as_autodiff(policy):
    # Training multiplies by the stored table (its gradient comes out [vocab, hidden]) and, in bf16, keeps
    # the logits' gradient in bf16 with the bias's from a product with ones: the same logits, and TF's
    # autodiff of inference's ops for the input, the table and every head weight (to bf16's rounding).
    keras.mixed_precision.set_global_policy(policy)
    try:
        table = keras.layers.Embedding(11, 8)
        table.build(None)
        head = MaskedLMHead(table, hidden_act="gelu", initializer_range=0.5, layer_norm_eps=1e-6)
        hidden, positions = tf.constant(HIDDEN), tf.constant([[0, 4, 1], [2, 2, 3]])
        head(hidden, positions)
        head.output_bias.assign(RNG.normal(size=11).astype("float32"))
        upstream = tf.constant(RNG.normal(size=(2, 3, 11)).astype("float32"))

        def answers(training):
            with tf.GradientTape() as tape:
                tape.watch(hidden)
                logits = head(hidden, positions, training=training)
                loss = tf.reduce_sum(logits * upstream)
            return [logits, *tape.gradient(loss, [hidden, *head.trainable_variables])]

        got, want = answers(True), answers(False)
        assert any(v is table.embeddings for v in head.trainable_variables)  # tied: the head tracks it
        assert got[0].dtype == tf.float32 and len(got) == 2 + len(head.trainable_variables) == 8
        tolerance = {"rtol": 1e-5, "atol": 1e-6} if policy == "float32" else {"rtol": 2e-2, "atol": 2e-2}
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(tf.cast(a, tf.float32), tf.cast(b, tf.float32), **tolerance)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_building_an_encoder_traces_no_block(tiny_config, monkeypatch):
    """The embeddings and blocks state their output shapes, so building the functional encoder (every
    from_pretrained and load_model) does not trace their calls to learn them; the shapes are those the
    calls give."""
    from keras_bert import BertEncoder

    calls = []

    def counted(call):
        @functools.wraps(call)  # the same signature: Keras reads call()'s argument names
        def wrapper(self, *args, **kwargs):
            calls.append(type(self).__name__)
            return call(self, *args, **kwargs)
        return wrapper

    for cls in (BertEmbeddings, TransformerBlock):
        monkeypatch.setattr(cls, "call", counted(cls.call))
    encoder = BertEncoder(tiny_config)
    assert not calls
    ids = np.ones((2, 5), "int32")
    outputs = encoder({"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids})
    assert calls and outputs["sequence_output"].shape == (2, 5, tiny_config.hidden_size)
    assert encoder.output["sequence_output"].shape == (None, None, tiny_config.hidden_size)
