"""Dropout with masks from a counter-based integer hash: the same inverted dropout, far cheaper RNG on CPU.

`keras.layers.Dropout` draws its mask with TensorFlow's stateless Philox generator. Compiled by XLA for
the CPU that costs ~20% of a BERT-mini pre-training step's CPU time (docs/models.md), because BERT decides
~17M dropouts a step, most of them on attention probabilities.
`HashDropout` derives each element's keep/drop decision from a hash of (its flat index, a per-call seed):
two rounds of the MurmurHash3 32-bit finalizer, a bijection with full avalanche, i.e. a handful of 32-bit
integer ops that XLA fuses into the surrounding elementwise code. The per-call seed comes from a
`keras.random.SeedGenerator`, as in Keras' layer, so masks differ every step and are reproducible under
`keras.utils.set_random_seed`. Keep probability is `1 - rate` to within 2^-32; kept values are scaled by
`1 / (1 - rate)`.
"""

import keras
import tensorflow as tf

from keras_bert.execution import in_fusion_scope, in_kernels_scope

_GOLDEN = 0x9E3779B1  # odd: multiplying by it permutes 32-bit integers


def _fmix32(h):
    """MurmurHash3's 32-bit finalizer (uint32 -> uint32, a bijection)."""
    h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))
    h = h * tf.constant(0x85EBCA6B, tf.uint32)
    h = tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 13))
    h = h * tf.constant(0xC2B2AE35, tf.uint32)
    return tf.bitwise.bitwise_xor(h, tf.bitwise.right_shift(h, 16))


def hash_uniform_bits(shape, seed):
    """uint32 tensor of `shape`, element i = hash(i, seed); `seed` is an integer tensor of 2 values. In a
    step traced for XLA's fusions (`execution.fusion_scope`) the ops are built inline, where the scope marks
    them for XLA; elsewhere they are one call of a graph function (`_hash_uniform_bits`)."""
    if in_fusion_scope():
        return _hash_bits(shape, seed)
    return _hash_uniform_bits(shape, seed)


def _hash_bits(shape, seed):
    """`hash_uniform_bits` as ops."""
    seed = tf.cast(tf.bitwise.bitwise_and(tf.cast(seed, tf.int64), 0xFFFFFFFF), tf.uint32)
    key0 = _fmix32(seed[0] + tf.constant(_GOLDEN, tf.uint32))
    key1 = _fmix32(tf.bitwise.bitwise_xor(seed[1], key0))
    index = tf.bitcast(tf.reshape(tf.range(tf.reduce_prod(shape), dtype=tf.int32), shape), tf.uint32)
    # Round 1 decorrelates neighbouring indices; round 2 (keyed again) breaks the "another seed is a shifted
    # stream" structure a single keyed round would have.
    h = _fmix32(index * tf.constant(_GOLDEN, tf.uint32) + key1)
    return _fmix32(tf.bitwise.bitwise_xor(h, key0))


# The hash's ~45 ops as one graph function, traced once per process: a traced step calls it once per dropout
# (BERT's step has 20: a MiniLM train step's trace 0.45 s shorter, tests/layers/test_dropout.py) and grappler
# and XLA inline it, so the step runs the same ops.
_hash_uniform_bits = tf.function(_hash_bits, input_signature=[tf.TensorSpec([None], tf.int32),
                                                              tf.TensorSpec([2], tf.int64)], autograph=False)


def _self_adjoint(inputs, mask):
    """`mask(inputs)` for an elementwise mask-and-scale, differentiated as `mask(upstream)`: dropout's
    gradient is its own mask and scale. TF's gradient of the select and the product is 14 ops (a broadcasting
    select's shape arithmetic and reductions), traced and optimised before a run's first step."""

    @tf.custom_gradient
    def masked(x):
        return mask(x), mask

    return masked(inputs)


def _dropped(x, seed, threshold, scale):
    """`where(hash_uniform_bits(shape(x), seed) >= threshold, x * scale, 0)`."""
    return tf.where(_hash_bits(tf.shape(x), seed) >= threshold, x * scale, tf.zeros([], x.dtype))


# `_dropped` compiled by XLA, per input shape: the hash, the comparison and the select in one pass over x. On
# TF's kernels each of the hash's ~20 elementwise ops is its own pass over a tensor of x's size.
_dropped_in_xla = tf.function(_dropped, jit_compile=True, autograph=False, reduce_retracing=True)


@keras.saving.register_keras_serializable(package="keras_bert")
class HashDropout(keras.layers.Layer):
    """Inverted dropout like `keras.layers.Dropout(rate)`, with hash-derived masks (see module docstring).

    Zeroes each element with probability `rate` in training and scales the rest by 1 / (1 - rate); the
    identity at inference.
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"HashDropout rate={rate}; expected 0 <= rate < 1")
        self.rate = float(rate)
        self.seed = seed
        self.supports_masking = True
        self.built = True
        if self.rate > 0:
            self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        seed = tf.cast(self.seed_generator.next(), tf.int64)
        threshold = tf.constant(min(round(self.rate * 2**32), 2**32 - 1), tf.uint32)
        scale = tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)
        if in_kernels_scope():
            # A step on TF's kernels (`execution.kernels_scope`): forward and gradient each one call of
            # `_dropped_in_xla` with the same seed, the gradient's mask recomputed, not kept; the masks are
            # the graph path's bit for bit (tests/layers/test_dropout.py).
            return _self_adjoint(inputs, lambda x: _dropped_in_xla(x, seed, threshold, scale))
        keep = tf.ensure_shape(hash_uniform_bits(tf.shape(inputs), seed), inputs.shape) >= threshold
        zero = tf.zeros([], inputs.dtype)
        return _self_adjoint(inputs, lambda x: tf.where(keep, x * scale, zero))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config
