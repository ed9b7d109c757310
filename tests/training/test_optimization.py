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
    # AdamW, step 1: lr * m_hat / (sqrt(v_hat) + eps) with m_hat = g, sqrt(v_hat) = |g|.
    expected = -clipped / (clipped + 1e3)
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


@pytest.mark.parametrize("strategy", [None, "one_device", "mirrored"])
def test_update_matches_torch_adamw(strategy):
    """The update equals torch.optim.AdamW's (epsilon on the bias-corrected sqrt(v_hat); decoupled decay, off
    the bias) over several steps from a small epsilon-dominated gradient, a sparse (embedding) gradient
    included: the one-device update (ResourceApplyAdam + one-multiply decay) and, under a mirroring strategy,
    the unfused one."""
    import tensorflow as tf
    import torch

    from keras_bert.training import distribute

    rng = np.random.default_rng(0)
    start = {"kernel": rng.normal(size=(3, 4)), "bias": rng.normal(size=4),
             "embeddings": rng.normal(size=(6, 4))}
    # Gradients of 1e-6: where Keras' epsilon (added to the uncorrected sqrt(v)) would shrink the step.
    scales = {"kernel": 1.0, "bias": 1e-6, "embeddings": 1e-3}
    grads = [{name: scales[name] * rng.normal(size=value.shape) for name, value in start.items()}
             for _ in range(4)]
    rows = [1, 1, 4]  # the embedding's gradient as a lookup makes it: a repeated id

    tf_strategy = distribute.get_strategy(strategy) if strategy else tf.distribute.get_strategy()
    with tf_strategy.scope():
        variables = [keras.Variable(value.astype("float32"), name=name) for name, value in start.items()]
        optimizer = create_optimizer(1e-2, num_train_steps=None, weight_decay=0.1, clip_global_norm=None)
        assert optimizer._fused(variables[0]) == (strategy != "mirrored")
    for step in grads:
        gradients = [tf.constant(step[name], tf.float32) for name in start]
        index = tf.constant(rows)
        gradients[2] = tf.IndexedSlices(tf.gather(gradients[2], index), index, tf.constant([6, 4]))
        tf_strategy.run(optimizer.apply, args=(gradients, variables))  # as Keras' train step runs it

    params = {name: torch.tensor(value, dtype=torch.float64, requires_grad=True)
              for name, value in start.items()}
    reference = torch.optim.AdamW([{"params": [params["kernel"], params["embeddings"]]},
                                   {"params": [params["bias"]], "weight_decay": 0.0}],
                                  lr=1e-2, weight_decay=0.1, eps=1e-6)
    for step in grads:
        dense = {**step, "embeddings": np.zeros_like(step["embeddings"])}
        for row in rows:  # a repeated id's rows summed: the dense gradient the lookup stands for
            dense["embeddings"][row] += step["embeddings"][row]
        for name, param in params.items():
            param.grad = torch.tensor(dense[name])
        reference.step()
    for variable, name in zip(variables, start, strict=True):
        np.testing.assert_allclose(variable.numpy(), params[name].detach().numpy(), rtol=2e-6, atol=1e-7,
                                   err_msg=name)


def test_a_traced_step_makes_its_scalars_once_and_updates_as_an_eager_one():
    """Traced, a step makes the learning rate, Adam's bias-correction powers and epsilon once per dtype (not
    once per variable: a fifth of a MiniLM train step's trace) and updates exactly as eager steps do."""
    import tensorflow as tf

    rng = np.random.default_rng(1)
    start = [rng.normal(size=(3, 4)).astype("float32") for _ in range(5)]
    grads = [[tf.constant(rng.normal(size=(3, 4)).astype("float32")) for _ in start] for _ in range(3)]
    results = []
    for traced in (False, True):
        variables = [keras.Variable(value, name=f"kernel_{i}") for i, value in enumerate(start)]
        optimizer = create_optimizer(1e-2, num_train_steps=10, num_warmup_steps=2, weight_decay=0.1)
        optimizer.build(variables)

        apply = _applying(optimizer, variables, traced)
        for step in grads:
            apply(step)
        results.append([variable.numpy() for variable in variables])
    graph = apply.get_concrete_function(grads[0]).graph
    assert [op.type for op in graph.get_operations()].count("Pow") == 2  # beta_1 ** t, beta_2 ** t
    for eager, traced in zip(*results, strict=True):
        np.testing.assert_allclose(traced, eager, rtol=1e-6)


def _applying(optimizer, variables, traced):
    """gradients -> `optimizer.apply(gradients, variables)`, as a tf.function where `traced`."""
    def apply(gradients):
        optimizer.apply(gradients, variables)

    import tensorflow as tf

    return tf.function(apply) if traced else apply


def test_amsgrad_refused():
    from keras_bert.training import AdamW

    with pytest.raises(ValueError, match="amsgrad"):
        AdamW(1e-3, amsgrad=True)
