"""Weight initialization shared by every BERT layer."""

import keras


def truncated_normal(stddev):
    """The original's initializer: a normal truncated at two standard deviations."""
    return keras.initializers.TruncatedNormal(stddev=stddev)
