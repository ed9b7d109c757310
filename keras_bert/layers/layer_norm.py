"""LayerNorm over the last axis, written in the ops that run fastest on TensorFlow's CPU kernels."""

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert")
class LayerNorm(keras.layers.LayerNormalization):
    """`keras.layers.LayerNormalization` (same arguments, weights and config) that normalizes the last axis
    as `(x - mean) * rsqrt(var + eps) * gamma + beta` with the variance taken of the centered input.

    Keras computes `x * inv + (beta - mean * inv)` with `inv = rsqrt(var + eps) * gamma` and the variance
    from a broadcast `SquaredDifference`: six full-size broadcasting ops a call. The centered form has
    five, one of them a plain `Square`, and on TF's CPU kernels 13 of them on [1000, 384] rows (a served
    MiniLM batch of 32 texts) run in about half the time (`docs/serving_measurements.md`, "LayerNorm in the
    centered form"). It is also the textbook two-pass variance, no cancellation between `x * inv` and
    `mean * inv`. Other axes and `rms_scaling` fall back to Keras.
    """

    def call(self, inputs, training=None):
        axis = self.axis if isinstance(self.axis, int) else (self.axis[0] if len(self.axis) == 1 else None)
        last = len(inputs.shape) - 1
        if self.rms_scaling or axis is None or axis not in (-1, last):
            return super().call(inputs)
        # As Keras: normalized in at least float32, answered in the input's dtype, then the layer's.
        compute = keras.backend.result_type(inputs.dtype, "float32")
        x = ops.cast(inputs, compute)
        if training and self.scale and self.center:
            outputs = _normalized_with_its_gradient(
                x, ops.cast(self.gamma, compute), ops.cast(self.beta, compute), self.epsilon)
        else:
            centered, inverse = _centered_and_inverse(x, self.epsilon)
            outputs = centered * inverse
            if self.scale:
                outputs = outputs * ops.cast(self.gamma, compute)
            if self.center:
                outputs = outputs + ops.cast(self.beta, compute)
        return ops.cast(ops.cast(outputs, inputs.dtype), self.compute_dtype)


def _centered_and_inverse(x, epsilon):
    """`x - mean` and `rsqrt(variance + epsilon)` over the last axis, the variance of the centered input."""
    centered = x - ops.mean(x, axis=-1, keepdims=True)
    variance = ops.mean(ops.square(centered), axis=-1, keepdims=True)
    return centered, ops.rsqrt(variance + epsilon)


def _normalized_with_its_gradient(x, gamma, beta, epsilon):
    """`(x - mean) * rsqrt(var + eps) * gamma + beta` over the last axis, the forward ops of `LayerNorm.call`,
    with its gradient written out: dx = inv * (g - mean(g) - x_hat * mean(g * x_hat)) for g = dy * gamma,
    dgamma = sum(dy * x_hat), dbeta = sum(dy) over the other axes. Differentiated op by op, a LayerNorm's
    gradient is ~80 ops (two Means' shape arithmetic, four broadcasting ops' shape arithmetic and
    reductions); this is 15 (tests/layers/test_layers.py compares it with autodiff). A train step's trace and
    grappler's passes over it come before a run's first step. Training uses it (`LayerNorm.call`);
    inference keeps the plain ops, the graph that serving and LiteRT convert."""

    @tf.custom_gradient
    def normalized(x, gamma, beta):
        centered, inverse = _centered_and_inverse(x, epsilon)
        x_hat = centered * inverse

        def gradient(upstream):
            others = list(range(len(x.shape) - 1))
            scaled = upstream * gamma
            dx = inverse * (scaled - tf.reduce_mean(scaled, axis=-1, keepdims=True)
                            - x_hat * tf.reduce_mean(scaled * x_hat, axis=-1, keepdims=True))
            return dx, tf.reduce_sum(upstream * x_hat, axis=others), tf.reduce_sum(upstream, axis=others)

        return x_hat * gamma + beta, gradient

    return normalized(x, gamma, beta)
