"""Schedule values, weight-decay exclusion, clipping of the summed gradient, checkpoint round trip."""

import keras
import numpy as np
import pytest

from keras_bert.training import TrainingCheckpoint, WarmupLinearDecay, create_optimizer


def test_warmup_then_linear_decay_to_zero():
    schedule = WarmupLinearDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    values = [float(schedule(step)) for step in (0, 5, 10, 55, 100, 150)]
    np.testing.assert_allclose(values, [0.0, 5e-4, 1e-3, 5e-4, 0.0, 0.0], atol=1e-9)
    again = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert float(again(55)) == pytest.approx(5e-4)
    with pytest.raises(ValueError, match="num_warmup_steps"):
        WarmupLinearDecay(1e-3, 10, 20)


def _tiny_model():
    inputs = keras.Input((3,))
    x = keras.layers.Dense(4, name="dense")(inputs)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    return keras.Model(inputs, x)


def test_weight_decay_skips_layer_norm_and_bias():
    model = _tiny_model()
    for variable in model.weights:
        variable.assign(np.full(variable.shape, 2.0, "float32"))
    optimizer = create_optimizer(0.1, num_train_steps=10, num_warmup_steps=0, weight_decay=0.5)
    optimizer.apply([keras.ops.zeros(v.shape) for v in model.trainable_variables], model.trainable_variables)
    values = {v.path: v.numpy() for v in model.trainable_variables}
    np.testing.assert_allclose(values["dense/kernel"], 2.0 * (1 - 0.1 * 0.5))  # decayed
    for name in ("dense/bias", "layer_norm/gamma", "layer_norm/beta"):
        np.testing.assert_allclose(values[name], 2.0)


def test_clips_global_norm():
    variable = keras.Variable(np.zeros(2, "float32"))
    # A huge epsilon makes Adam's first step linear in the gradient, so the clipped gradient shows.
    optimizer = create_optimizer(1.0, num_train_steps=10, weight_decay=0.0, epsilon=1e3, clip_global_norm=1.0)
    optimizer.apply([keras.ops.convert_to_tensor([30.0, 40.0])], [variable])
    clipped = np.array([0.6, 0.8])
    # Keras Adam, step 1: lr * sqrt(1 - b2) / (1 - b1) * (1 - b1) g / (sqrt((1 - b2) g^2) + eps).
    expected = -np.sqrt(0.001) * clipped / (np.sqrt(0.001) * clipped + 1e3)
    np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-4)


def test_checkpoint_restores_step_slots_and_schedule(tmp_path):
    x, y = np.random.rand(8, 3).astype("float32"), np.random.rand(8, 4).astype("float32")

    def build():
        model = _tiny_model()
        model.compile(optimizer=create_optimizer(0.01, 100, 10, optimizer="lamb"), loss="mse")
        return model

    model = build()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    saved = TrainingCheckpoint(model, str(tmp_path))
    saved.save()
    restored_model = build()
    restored = TrainingCheckpoint(restored_model, str(tmp_path))
    assert restored.restore() == 2
    for a, b in zip(model.optimizer.variables, restored_model.optimizer.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(model.weights, restored_model.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert float(restored_model.optimizer.learning_rate) == pytest.approx(0.002)


@pytest.mark.parametrize("strategy", [None, "one_device"])
def test_fused_update_matches_keras_adamw(strategy):
    """The one-device update (ResourceApplyAdam + one-multiply decay) gives Keras AdamW's values over
    several steps, a sparse (embedding) gradient included; a mirroring strategy gets Keras' own path."""
    import tensorflow as tf

    from keras_bert.training import distribute

    rng = np.random.default_rng(0)
    start = {"kernel": rng.normal(size=(3, 4)), "bias": rng.normal(size=4),
             "embeddings": rng.normal(size=(6, 4))}
    grads = [{name: rng.normal(size=value.shape) for name, value in start.items()} for _ in range(4)]

    def run(make_optimizer, dense=False):
        tf_strategy = distribute.get_strategy(strategy) if strategy else tf.distribute.get_strategy()
        with tf_strategy.scope():
            variables = [keras.Variable(value.astype("float32"), name=name) for name, value in start.items()]
            optimizer = make_optimizer()
        for step in grads:
            gradients = [tf.constant(step[name], tf.float32) for name in start]
            # The embedding's gradient as a lookup makes it: rows 1, 1 and 4 (a repeated id).
            rows = tf.constant([1, 1, 4])
            gradients[2] = tf.IndexedSlices(tf.gather(gradients[2], rows), rows, tf.constant([6, 4]))
            if dense:
                gradients[2] = tf.convert_to_tensor(gradients[2])
            tf_strategy.run(optimizer.apply, args=(gradients, variables))  # as Keras' train step runs it
        return optimizer, {v.name: v.numpy() for v in variables}

    ours, fused = run(lambda: create_optimizer(1e-2, num_train_steps=None, weight_decay=0.1,
                                               clip_global_norm=None))
    with distribute.get_strategy("mirrored").scope():
        assert not ours._fused()  # mirrored variables: Keras' own update
    # Keras' own AdamW squares a sparse gradient's rows before summing a repeated id's (g^2 + g^2, not
    # (2g)^2); ours (fused or not) takes it as the dense tensor it stands for, as Keras does given that
    # tensor.
    _, reference = run(lambda: _keras_adamw(1e-2, 0.1), dense=True)
    for name in start:
        np.testing.assert_allclose(fused[name], reference[name], rtol=2e-6, atol=1e-7, err_msg=name)


def _keras_adamw(learning_rate, weight_decay):
    optimizer = keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay, epsilon=1e-6)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    return optimizer
