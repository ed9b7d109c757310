"""What every fine-tuning model shares: it wraps an encoder and serializes as its constructor args."""

import keras

from keras_bert.execution import ChoosesExecution


class EncoderTaskModel(ChoosesExecution, keras.Model):
    """Base of the task models: holds `encoder`, and round-trips through `.keras` by its constructor
    arguments (the encoder nested as a serialized object)."""

    def _task_config(self):
        raise NotImplementedError

    def get_config(self):
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name,
                  "trainable": self.trainable}
        config.update(self._task_config())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


def dense_head(units, initializer_range, name, dtype=None):
    return keras.layers.Dense(
        units, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        dtype=dtype, name=name)
