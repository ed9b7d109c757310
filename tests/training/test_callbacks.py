"""FailOnNaN: a diverged fit raises before the next callback (a checkpoint save) runs. CompileLog: each batch
length a fit met, once."""

import re

import keras
import numpy as np
import pytest

from keras_bert.training import FailOnNaN, TrainingDivergedError


class _CountSteps(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


def test_nan_loss_raises_naming_the_step_before_later_callbacks():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.ones((8, 2), np.float32)
    y = np.zeros((8, 1), np.float32)
    y[4] = np.inf  # the third batch of 2: steps 1-2 are finite
    after = _CountSteps()
    with pytest.raises(TrainingDivergedError,
                       match=r"training loss is (nan|inf) at step 3: the model diverged"):
        model.fit(x, y, batch_size=2, epochs=1, shuffle=False, callbacks=[FailOnNaN(), after], verbose=0)
    assert after.steps == 2
    finite = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    finite.compile(optimizer="sgd", loss="mse")
    history = finite.fit(x, np.zeros((8, 1)), batch_size=2, callbacks=[FailOnNaN()], verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_compile_log_names_each_batch_length_once(caplog):
    import tensorflow as tf

    from keras_bert.training import CompileLog

    inputs = keras.Input((None,), dtype="int32", name="input_mask")
    model = keras.Model({"input_mask": inputs}, keras.layers.Dense(1)(
        keras.ops.mean(keras.ops.cast(inputs, "float32"), axis=1, keepdims=True)))
    model.compile(optimizer="sgd", loss="mse", jit_compile=False)
    lengths = [16, 32, 16, 48, 32, 16]
    batches = [({"input_mask": np.ones((2, n), np.int32)}, np.zeros((2, 1), np.float32)) for n in lengths]
    log = CompileLog(bound=8)
    dataset = tf.data.Dataset.from_generator(lambda: iter(batches), output_signature=(
        {"input_mask": tf.TensorSpec((2, None), tf.int32)}, tf.TensorSpec((2, 1), tf.float32)))
    with caplog.at_level("INFO", logger="keras_bert"):
        model.fit(log.watch(dataset), epochs=1, callbacks=[log], verbose=0)
    assert log.lengths == lengths and sorted(log.first) == [16, 32, 48] and len(log.others) == 3
    assert re.search(r"train step \(kernels\): 3 batch lengths of at most 8 \(16, 32, 48\); their first "
                     r"steps took [\d.]+ s more than a steady step", caplog.text), caplog.text
