"""What every fine-tuning model shares: it wraps an encoder, may own its text preprocessing and label
names, and serializes as its constructor args."""

import keras

from keras_bert.models.accumulation import GradientAccumulation
from keras_bert.models.lora import LoraAdaptation
from keras_bert.models.text_task import TextTask


class EncoderTaskModel(GradientAccumulation, LoraAdaptation, TextTask, keras.Model):
    """Base of the task models (and the pretrainer): holds `encoder` (and `preprocessor`, `labels`), names
    its task in the class attribute `task_kind` (what checkpoint writers and the export dispatch on), and
    round-trips through `.keras` by its constructor arguments (encoder and preprocessor nested as
    serialized objects). `compile(gradient_accumulation_steps=K)` steps in K micro-batches
    (`keras_bert.models.accumulation`)."""

    task_kind = None

    def _task_config(self):
        raise NotImplementedError

    def get_config(self):
        config = {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name,
                  "trainable": self.trainable}
        config.update(self._task_config())
        config.update(self._text_config())
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**cls._text_from_config(config))


def dense_head(units, initializer_range, name, dtype=None):
    return keras.layers.Dense(
        units, kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
        dtype=dtype, name=name)
