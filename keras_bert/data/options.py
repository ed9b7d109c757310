"""The one `tf.data` option keras_bert sets on the pipelines it builds and on the datasets its models' `fit`,
`evaluate` and `predict` iterate: tf.data's autotuning thread off (`steady`).

Why: the slow "exactly 20.48 s" epochs. Measured with TF 2.21 / Keras 3 on a 2-core EPYC (benchmarks/
results_steady.md): when an iterator of an autotuned pipeline is destroyed (Keras drops its iterator at the
end of every `fit` / `evaluate` / `predict` call), the destructor can wait for tf.data's autotune thread to
finish its current sleep. That thread re-optimizes after 10 ms, then after twice as long each round (10, 20,
40, ... ms, up to a minute), so the call returns at the next 10 * (2^k - 1) ms after the iterator was
created: a `fit` of 8 steps whose steps ended at 3.1 s returned at 5.11 s, one of 12 steps at 20.47 s,
in about half the calls, whatever the step did (the main thread was found blocked in
`RootDataset::Iterator::~Iterator` joining that thread). With autotuning off no such thread exists and every
call returned when its last step ended.

What autotuning did is kept where it matters here: a `map(num_parallel_calls=AUTOTUNE)` then runs as many
calls in parallel as the machine has cores (what autotuning converges to for the CPU-bound tokenization
maps here), and `prefetch(AUTOTUNE)` buffers still grow on demand (tf.data's prefetch autotuner, which needs
no thread). A dataset whose `autotune.enabled` its author set explicitly keeps that setting.
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
