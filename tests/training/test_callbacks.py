"""FailOnNaN: a diverged fit raises before the next callback (a checkpoint save) runs."""

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
