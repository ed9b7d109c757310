"""LayerNorm over the last axis, written in the ops that run fastest on TensorFlow's CPU kernels."""

import keras
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

    def call(self, inputs):
        axis = self.axis if isinstance(self.axis, int) else (self.axis[0] if len(self.axis) == 1 else None)
        last = len(inputs.shape) - 1
        if self.rms_scaling or axis is None or axis not in (-1, last):
            return super().call(inputs)
        # As Keras: normalized in at least float32, answered in the input's dtype, then the layer's.
        compute = keras.backend.result_type(inputs.dtype, "float32")
        x = ops.cast(inputs, compute)
        centered = x - ops.mean(x, axis=-1, keepdims=True)
        variance = ops.mean(ops.square(centered), axis=-1, keepdims=True)
        outputs = centered * ops.rsqrt(variance + self.epsilon)
        if self.scale:
            outputs = outputs * ops.cast(self.gamma, compute)
        if self.center:
            outputs = outputs + ops.cast(self.beta, compute)
        return ops.cast(ops.cast(outputs, inputs.dtype), self.compute_dtype)
