"""HashDropout: the distribution of Keras' inverted dropout, masks from an integer hash."""

import contextlib
import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.layers import HashDropout


def _masks(layer, shape, calls, jit):
    fn = tf.function(lambda x: layer(x, training=True), jit_compile=jit)
    x = tf.ones(shape)
    return [fn(x).numpy() for _ in range(calls)]


@pytest.mark.parametrize("jit", [True, False])
@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_keep_fraction_scale_and_fresh_masks(rate, jit):
    keras.utils.set_random_seed(3)
    first, second = _masks(HashDropout(rate), (16, 4, 64, 64), 2, jit)
    kept = first > 0
    n = kept.size
    # Binomial: 5 standard deviations.
    assert abs(kept.mean() - (1 - rate)) < 5 * np.sqrt(rate * (1 - rate) / n)
    np.testing.assert_allclose(first[kept], 1 / (1 - rate), rtol=1e-6)
    assert first[~kept].max() == 0
    # A new mask each call, independent of the last: P(same decision) = r^2 + (1-r)^2.
    same = np.mean(kept == (second > 0))
    assert abs(same - (rate**2 + (1 - rate) ** 2)) < 0.005


def test_no_structure_along_any_axis():
    keras.utils.set_random_seed(0)
    (out,) = _masks(HashDropout(0.1), (8, 4, 128, 128), 1, True)
    flat = (out > 0).reshape(-1).astype(np.float64)
    for lag in (1, 2, 64, 128, 128 * 128):
        assert abs(np.corrcoef(flat[:-lag], flat[lag:])[0, 1]) < 0.01, lag
    # Every row and column position is dropped at the same rate.
    per_position = (out > 0).mean(axis=(0, 1, 2))
    assert per_position.min() > 0.85 and per_position.max() < 0.95


def test_reproducible_with_the_global_seed_and_identity_at_inference():
    runs = []
    for _ in range(2):
        keras.utils.set_random_seed(7)
        runs.append(_masks(HashDropout(0.1), (4, 32), 3, False))
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)
    x = tf.random.normal((3, 5))
    np.testing.assert_array_equal(HashDropout(0.3)(x, training=False), x)
    np.testing.assert_array_equal(HashDropout(0.0)(x, training=True), x)


def test_the_gradient_is_the_same_mask_and_scale():
    keras.utils.set_random_seed(5)
    layer = HashDropout(0.25)
    x = tf.random.normal((4, 8, 16))
    upstream = tf.random.normal((4, 8, 16))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            outputs = layer(x, training=True)
            loss = tf.reduce_sum(outputs * upstream)
        return outputs, tape.gradient(loss, x)

    outputs, gradient = step(x)
    kept = outputs.numpy() != 0
    assert 0.6 < kept.mean() < 0.9
    np.testing.assert_allclose(outputs.numpy(), np.where(kept, x.numpy() / 0.75, 0), rtol=1e-6)
    np.testing.assert_allclose(gradient.numpy(), np.where(kept, upstream.numpy() / 0.75, 0), rtol=1e-6)
    # No shape arithmetic of a broadcasting select in the traced step's gradient.
    kinds = [op.type for op in step.get_concrete_function(x).graph.get_operations()]
    assert "BroadcastGradientArgs" not in kinds


def test_bad_rate_and_round_trip(tmp_path):
    with pytest.raises(ValueError, match="rate"):
        HashDropout(1.0)
    inputs = keras.Input((4,))
    model = keras.Model(inputs, HashDropout(0.2, seed=5)(keras.layers.Dense(3)(inputs)))
    model.save(tmp_path / "m.keras")
    restored = keras.models.load_model(tmp_path / "m.keras")
    assert restored.layers[-1].get_config()["rate"] == 0.2
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_traced_dropout_calls_the_hash_function():
    """A training trace holds one call of the hash's graph function per dropout, not its ~45 ops (the trace
    of a train step with 20 dropouts: 0.5 s less); the mask is the same ops, inlined when run."""
    layers = [HashDropout(0.1, seed=i) for i in range(3)]

    @tf.function
    def dropped(x):
        for layer in layers:
            x = layer(x, training=True)
        return x

    graph = dropped.get_concrete_function(tf.TensorSpec([2, None, 8])).graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("BitwiseXor") == 0 and types.count("PartitionedCall") + \
        types.count("StatefulPartitionedCall") == 3
    assert dropped(tf.ones([2, 5, 8])).shape == (2, 5, 8)


def test_a_step_on_tf_kernels_drops_in_one_compiled_pass_with_the_same_masks():
    """Traced in `kernels_scope` (a step on TF's kernels), forward and gradient are each one call of an XLA
    function, not the hash's ops one by one; the masks are those of the graph path, bit for bit."""
    from keras_bert.execution import kernels_scope

    x = tf.random.normal((3, 7, 24))
    upstream = tf.random.normal((3, 7, 24))

    def step(layer, on_kernels):
        with tf.GradientTape() as tape:
            tape.watch(x)
            with kernels_scope() if on_kernels else contextlib.nullcontext():
                outputs = layer(x, training=True)
            loss = tf.reduce_sum(outputs * upstream)
        return outputs, tape.gradient(loss, x)

    graph_path = tf.function(functools.partial(step, HashDropout(0.3, seed=3), False))
    kernels_path = tf.function(functools.partial(step, HashDropout(0.3, seed=3), True))
    for (outputs, gradient), (want_outputs, want_gradient) in zip(
            (kernels_path(), kernels_path()), (graph_path(), graph_path()), strict=True):
        np.testing.assert_array_equal(outputs, want_outputs)
        np.testing.assert_array_equal(gradient, want_gradient)
    kept = outputs.numpy() != 0
    assert 0.55 < kept.mean() < 0.85
    np.testing.assert_allclose(gradient, np.where(kept, upstream.numpy() / 0.7, 0), rtol=1e-6)

    ops = kernels_path.get_concrete_function().graph.get_operations()
    calls = [op for op in ops if op.type in ("PartitionedCall", "StatefulPartitionedCall")]
    assert not [op for op in ops if op.type == "BitwiseXor"]
    assert len(calls) == 2 and all(op.get_attr("_XlaMustCompile") for op in calls)


def test_a_dropout_traced_for_xla_fusions_builds_the_hash_inline_and_marked():
    """Traced in `fusion_scope` (the bf16 step), the hash's ops are built inline, where the scope marks them
    for XLA clustering: a graph function's body, traced apart, would run them as TF kernels (~50 ms of CPU
    a mini pre-training step)."""
    from keras_bert.execution import fusion_scope

    layer = HashDropout(0.1, seed=0)

    @tf.function
    def fused(x):
        with fusion_scope():
            return layer(x, training=True)

    ops = fused.get_concrete_function(tf.TensorSpec([2, None, 8])).graph.get_operations()
    xors = [op for op in ops if op.type == "BitwiseXor"]
    assert xors and all(op.get_attr("_XlaCompile") for op in xors)
