"""The one `tf.data` option keras_bert sets on the pipelines it builds and on the datasets its models' `fit`,
`evaluate` and `predict` iterate: tf.data's autotuning thread off (`steady`).

Why: destroying an iterator of an autotuned pipeline (Keras does at the end of every `fit` / `evaluate` /
`predict` call) can wait for tf.data's autotune thread to end its current sleep, which doubles each round
from 10 ms, so calls returned at 10 * (2^k - 1) ms (the "exactly 20.48 s" epochs). With autotuning off no
such thread exists. A `map(num_parallel_calls=AUTOTUNE)` then runs as many calls in parallel as the machine
has cores and `prefetch(AUTOTUNE)` buffers still grow on demand. A dataset whose `autotune.enabled` its
author set explicitly keeps that setting. Measurements: docs/execution.md, "Steady iteration".
"""

import tensorflow as tf


def autotune_set(dataset):
    """True if `dataset`'s options set `autotune.enabled` explicitly (either way)."""
    return dataset.options().autotune.enabled is not None  # None: left to tf.data's default (on)


def steady(dataset):
    """`dataset` with tf.data's autotuning off (see the module docstring), unless its options already say
    whether to autotune; a `tf.distribute` distributed dataset (no options) is returned as it is."""
    if not isinstance(dataset, tf.data.Dataset) or autotune_set(dataset):
        return dataset
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)
