"""Weight initialization shared by every BERT layer."""

import keras

from keras_bert import compat


@keras.saving.register_keras_serializable(package="keras_bert")
class TruncatedNormal(keras.initializers.TruncatedNormal):
    """Keras' TruncatedNormal, except while `keras.saving.load_model` rebuilds a model from a `.keras`
    file's config (`compat.in_keras_file`): there the file's weights overwrite every value drawn, so the
    variables start as zeros (drawing them is 0.3 s of loading a MiniLM-L6 classifier)."""

    def __call__(self, shape, dtype=None):
        if compat.in_keras_file():
            return keras.ops.zeros(shape, dtype=dtype)
        return super().__call__(shape, dtype=dtype)


def truncated_normal(stddev):
    """The original's initializer: a normal truncated at two standard deviations."""
    return TruncatedNormal(stddev=stddev)
