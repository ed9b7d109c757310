"""The form a model is served in: LoRA adapters merged, the compute dtype, and optionally int8 weights.

`serving_form(model, quantize, dtype, calibration_inputs)` returns the model the export writes (a copy where
anything changes). The forms:
  - `dtype="bfloat16"`: rebuilt under Keras's "bfloat16" policy (LayerNorm, softmax and the heads stay
    float32); served outputs are cast to float32. Each Dense kernel and bias is a bf16 graph constant (not a
    variable read), which is what makes TF's oneDNN matmul use its blocked bf16 kernel, and GELU is left in
    bf16 for the matmul to fuse (oneDNN computes it on the float32 accumulator).
  - "int8_weights": each Dense kernel (projections, pooler, heads; embeddings and LayerNorm stay float) as
    int8 with one float scale per output unit, cast to the compute dtype per call. Any TF build and CPU.
  - "int8_matmul": the same int8 kernels; each input row scaled onto 7 bits (-63..63, offset to 1..127) and
    multiplied with TF's oneDNN `QuantizedMatMulWithBiasAndDequantize` (x86 builds with oneDNN ops, on a
    CPU with an int8 dot-product flag: without one the op returns no output, so that export is refused).
    With `calibration_inputs`, each Dense input instead gets one static range (a percentile of |x| on those
    inputs) and runs oneDNN's `_QuantizedMatMul` on constant int8 weights (reordered once, not per call),
    its bias, activation (GELU, tanh) and per-unit scales fused into the op.
  - "int8": "int8_matmul" where the exporting CPU has an int8 dot-product flag (VNNI), else "int8_weights".

Why these forms and defaults (float32 stays the default; 7-bit per-row inputs; static ranges), with the
latency and accuracy measured for each: docs/serving_form.md.
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import compat, execution
from keras_bert.layers.transformer import ACTIVATIONS
from keras_bert.models.float_form import float_model

QUANTIZE_MODES = ("int8", "int8_matmul", "int8_weights")
DTYPES = ("float32", "bfloat16")
# "int8_matmul" inputs: -63..63 per row, offset to 1..127 (7 bits: docs/serving_form.md says why).
INPUT_HALF_RANGE = 63.0
INPUT_OFFSET = 64.0
# Static ranges (`calibration_inputs`): each Dense input's range is this percentile of |x| on the calibration
# inputs, one per tensor; calibration runs in batches of CALIBRATION_BATCH rows.
CALIBRATION_PERCENTILE = 99.99
CALIBRATION_BATCH = 64
# Static-range inputs: x / step + 128 (step = range / 127) on 0..255, i.e. -128..127 steps around 0.
STATIC_HALF_RANGE = 127.0
STATIC_OFFSET = 128.0
# The op of a static-range Dense (oneDNN's, no Python wrapper) and the activations it fuses.
STATIC_INT8_OP = "_QuantizedMatMul"
_FUSED_ACTIVATIONS = ((ACTIVATIONS["gelu"], "GeluExact"), (ACTIVATIONS["gelu_tanh"], "GeluApproximate"),
                      (ACTIVATIONS["tanh"], "Tanh"), (keras.activations.tanh, "Tanh"),
                      (keras.activations.relu, "Relu"))


def resolve_quantize(quantize, log=True):
    """The int8 form `quantize` names on this machine: "int8" becomes "int8_matmul" or "int8_weights" by
    the CPU's flags (said in the log, unless `log` is False); the explicit forms and None are returned as
    they are, except "int8_matmul" on a CPU without an int8 dot-product flag (ValueError: TF's oneDNN int8
    matmul computes nothing there)."""
    if quantize is not None and quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {QUANTIZE_MODES} or None, got {quantize!r}")
    if quantize == "int8_matmul" and not execution.has_int8_matmul_hardware():
        raise ValueError(f"quantize='int8_matmul' needs a CPU with an int8 dot-product flag "
                         f"({' / '.join(execution.INT8_CPU_FLAGS)}), none in {execution.CPUINFO} here: TF's "
                         "oneDNN QuantizedMatMulWithBiasAndDequantize returns no output without one; export "
                         "quantize='int8_weights' (any CPU), or export on a CPU like the server's")
    if quantize != "int8":
        return quantize
    form = "int8_matmul" if execution.has_int8_matmul_hardware() else "int8_weights"
    if log:
        execution.logger.info(
            f"quantize='int8': exporting {form} ({'a' if form == 'int8_matmul' else 'no'} int8 dot-product "
            f"flag of {execution.INT8_CPU_FLAGS} in {execution.CPUINFO} here; the serving CPU may differ: "
            "pass the form explicitly to choose)")
    return form


def serving_form(model, quantize=None, dtype="float32", calibration_inputs=None):
    """`model` as it is exported: its `float_model` (LoRA merged, Keras int8 dequantized); rebuilt under
    Keras's `dtype` policy where its layers compute in another dtype (a model built with mixed_bfloat16
    serves float32 unless `dtype="bfloat16"`); then, for a `quantize` form, with int8 Dense kernels. `model`
    itself is never changed (a copy is made where needed); with nothing to change, `model` itself.

    `calibration_inputs` (a dict of model inputs, e.g. a preprocessor's output for a few hundred texts): for
    "int8_matmul", each Dense input gets one static range, CALIBRATION_PERCENTILE of its |x| there (the
    int8-weight model run in float on them); layers the inputs do not reach keep per-row ranges."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if calibration_inputs is not None and quantize not in ("int8", "int8_matmul"):
        raise ValueError(f"calibration texts set the input ranges of quantize='int8_matmul'; got quantize="
                         f"{quantize!r}, which has no quantized inputs")
    quantize = resolve_quantize(quantize)  # "int8" resolved to "int8_weights" ignores the calibration
    merged = float_model(model)
    # Only a float layer computing in another float dtype calls for a rebuild (the preprocessor's layers
    # compute in int32).
    if dtype != "float32" or any(layer.compute_dtype in ("bfloat16", "float16")
                                 for layer in compat.sublayers(merged)):
        merged = _rebuilt(merged, dtype)
    if quantize is None:
        if dtype == "bfloat16":
            execution.warn_without_bf16_hardware('dtype="bfloat16" served')
            for layer in compat.sublayers(merged, include_self=False):
                if isinstance(layer, keras.layers.Dense):
                    use_constant_weights(layer)
        return merged
    if merged is model:  # quantize a copy, not the caller's model
        merged = _rebuilt(model, None)
    dense_layers = [layer for layer in compat.sublayers(merged, include_self=False)
                    if isinstance(layer, keras.layers.Dense)]
    for layer in dense_layers:
        quantize_kernel(layer)
    if quantize == "int8_matmul":
        ranges = {} if calibration_inputs is None else input_ranges(merged, dense_layers, calibration_inputs)
        for layer in dense_layers:
            use_int8_matmul(layer, ranges.get(id(layer)))
    return merged


def quantize_kernel(layer):
    """Stores the Dense `layer`'s kernel as int8 with one float scale per output unit (Keras's int8
    quantization without its per-call input quantizer): the int8_weights form, and the base of int8_matmul."""
    layer.quantize("int8", config=keras.quantizers.Int8QuantizationConfig(activation_quantizer=None))


def input_ranges(model, dense_layers, inputs, percentile=CALIBRATION_PERCENTILE):
    """{id(layer): `percentile` of |input| (float)} of the int8-quantized `dense_layers` of `model` run on
    `inputs` (dict of arrays, CALIBRATION_BATCH rows at a time), their int8 kernels applied in float32.
    Layers the inputs do not reach are left out. Each layer keeps only its largest (100 - percentile)% of
    values (the total is known from the first batch), so memory stays small for any number of texts."""
    rows = len(next(iter(inputs.values())))
    largest, keep, batch = {}, {}, [0]

    def recorder(layer):
        kernel = (tf.cast(compat.dense_kernel_variable(layer), tf.float32)
                  / tf.cast(layer.kernel_scale, tf.float32))

        def call(x, training=None):
            del training
            x = tf.cast(x, tf.float32)
            values = np.abs(x.numpy()).ravel()
            key = id(layer)
            if key not in keep:
                keep[key] = max(1, int(np.ceil(values.size / batch[0] * rows * (1 - percentile / 100))))
            seen = np.concatenate([largest[key], values]) if key in largest else values
            first_kept = max(seen.size - keep[key], 0)
            largest[key] = np.partition(seen, first_kept)[first_kept:]
            y = tf.tensordot(x, kernel, 1)
            if layer.bias is not None:
                y = y + tf.cast(layer.bias, tf.float32)
            return tf.cast(y if layer.activation is None else layer.activation(y), layer.compute_dtype)
        return call

    for layer in dense_layers:
        compat.set_int8_call(layer, recorder(layer))
    try:
        for start in range(0, rows, CALIBRATION_BATCH):
            chunk = {name: value[start:start + CALIBRATION_BATCH] for name, value in inputs.items()}
            batch[0] = len(next(iter(chunk.values())))
            model(chunk, training=False)
    finally:
        for layer in dense_layers:
            compat.restore_int8_call(layer)
    # The smallest of the values kept is the percentile (an all-0 input: a tiny range, its values stay 0).
    return {key: max(float(values.min()), 1e-30) for key, values in largest.items()}


def use_constant_weights(layer):
    """Makes the float Dense `layer` compute with its kernel and bias as constants in the traced graph
    (`layer` then serves only: its variables are no longer read). TF's oneDNN MatMul takes a variable's
    weights as they lie (bf16 there runs gemm:jit, a non-blocked kernel) but a constant's in its own blocked
    layout, reordered once and cached (brgemm avx512_core_bf16 / AMX): docs/serving_form.md. An activation
    the layers compute in float32 (`in_compute_dtype`: GELU, tanh) is applied in the compute dtype, the
    op pattern grappler's remapper fuses into the matmul."""
    kernel = keras.ops.convert_to_numpy(layer.kernel)
    bias = None if layer.bias is None else keras.ops.convert_to_numpy(layer.bias)
    activation = getattr(layer.activation, "in_compute_dtype", layer.activation)

    def call(inputs, training=None):
        del training
        x = tf.matmul(inputs, tf.constant(kernel))  # made in the traced graph: a Const node, not a capture
        if bias is not None:
            x = tf.nn.bias_add(x, tf.constant(bias))
        return x if activation is None else activation(x)

    layer.call = call


def _rebuilt(model, dtype_policy):
    """A copy of `model` (same config and weights), its layers built under `dtype_policy` (None: as now).
    Layers whose dtype is fixed (LayerNorm, the float32 heads) keep it."""
    previous = keras.config.dtype_policy()
    if dtype_policy is not None:
        keras.config.set_dtype_policy(dtype_policy)
    try:
        copy = type(model).from_config(model.get_config())
    finally:
        keras.config.set_dtype_policy(previous)
    copy.set_weights(model.get_weights())
    return copy


def use_int8_matmul(layer, input_range=None):
    """Makes the int8-quantized Dense `layer` compute with `int8_matmul` (its int8 call is replaced); with an
    `input_range` (the calibrated |input| bound), with `static_int8_matmul`, its bias folded in."""
    kernel = keras.ops.convert_to_numpy(compat.dense_kernel_variable(layer))
    if input_range is not None:
        kernel_scale = keras.ops.convert_to_numpy(layer.kernel_scale).astype(np.float32)
        bias = None if layer.bias is None else keras.ops.convert_to_numpy(layer.bias).astype(np.float32)
        fused = fused_activation(layer.activation)

        def call(inputs, training=None):
            del training
            x = tf.cast(static_int8_matmul(inputs, kernel, input_range, kernel_scale, bias, fused),
                        layer.compute_dtype)
            return x if fused or layer.activation is None else layer.activation(x)
    else:
        # Column sums of the int8 kernel: the float bias that undoes the shift of the input by its minimum.
        column_sums = tf.constant(kernel.astype(np.float32).sum(axis=0))

        def call(inputs, training=None):
            del training
            x = int8_matmul(inputs, compat.dense_kernel_variable(layer), layer.kernel_scale, column_sums)
            x = tf.cast(x, layer.compute_dtype)
            if layer.bias is not None:
                x = x + tf.cast(layer.bias, layer.compute_dtype)
            return x if layer.activation is None else layer.activation(x)

    compat.set_int8_call(layer, call)


def fused_activation(activation):
    """The oneDNN post-op name of the Dense activation `activation` that `static_int8_matmul` fuses
    ("GeluExact", "GeluApproximate", "Tanh", "Relu"), or None (no activation, or one it does not fuse)."""
    for known, name in _FUSED_ACTIVATIONS:
        if activation is known:
            return name
    return None


def static_int8_matmul(inputs, kernel, input_range, kernel_scale, bias=None, activation=None):
    """inputs [..., k] float @ (int8 `kernel` [k, n] / `kernel_scale` [n]) + `bias` [n], then `activation`
    (a `fused_activation` name or None) -> float32 [..., n], with one constant input range: the input
    shifted by STATIC_OFFSET steps and quantized (`_quantized_on_tf_kernel`: x / step + STATIC_OFFSET
    rounded, clamped to 0..255, step = input_range / STATIC_HALF_RANGE), then oneDNN's `_QuantizedMatMul`
    fused with BiasAdd, the activation and Dequantize (one weight scale per output unit), which reads the
    quantized input as MIN_FIRST over [-STATIC_OFFSET, 255 - STATIC_OFFSET] steps. `kernel` and `bias`
    (numpy) become graph constants: the op reorders the kernel into its blocked int8 layout once and caches
    it, with the bias corrected for the input's offset (`is_weight_const`), where
    QuantizedMatMulWithBiasAndDequantize reorders the kernel every call."""
    if not compat.has_op(STATIC_INT8_OP):
        raise ValueError(f"calibrated quantize='int8_matmul' needs TensorFlow's oneDNN op {STATIC_INT8_OP} "
                         "(x86 builds with oneDNN); this build has none")
    k, n = kernel.shape
    flat = inputs.shape.rank == 2  # the pooler and heads: no reshapes
    shape = None if flat else tf.shape(inputs)
    x = tf.cast(inputs, tf.float32) if flat else tf.reshape(tf.cast(inputs, tf.float32), [-1, k])
    step = input_range / STATIC_HALF_RANGE
    quantized = _quantized_on_tf_kernel(x + np.float32(STATIC_OFFSET * step), 255.0 * step)
    low = tf.constant(-STATIC_OFFSET * step, tf.float32)
    high = tf.constant((255.0 - STATIC_OFFSET) * step, tf.float32)
    unit_range = (STATIC_HALF_RANGE / np.asarray(kernel_scale, np.float32)).astype(np.float32)
    bias = np.zeros([n], np.float32) if bias is None else np.asarray(bias, np.float32)
    out, = compat.graph_op(
        STATIC_INT8_OP, "static_int8_matmul",
        device_inputs=[quantized, tf.bitcast(tf.constant(kernel), tf.qint8), tf.constant(bias)],
        host_inputs=[low, high, tf.constant(-unit_range), tf.constant(unit_range)],
        Tdevice_outputs=[tf.float32], Thost_outputs=[], T1=tf.quint8, T2=tf.qint8, Tbias=tf.float32,
        Tout=tf.float32, U=tf.float32, transpose_a=False, transpose_b=False, is_weight_const=True,
        is_bias_const=True, fused_ops=["BiasAdd", *([activation] if activation else []), "Dequantize"],
        input_quant_mode="MIN_FIRST", output_quant_mode="SCALED", leakyrelu_alpha=0.0)
    return out if flat else tf.reshape(out, tf.concat([shape[:-1], [n]], 0))


def _quantized_on_tf_kernel(x, high):
    """float32 `x` on [0, `high`] -> quint8 round(x / high * 255), clamped to 0..255 (ties away from 0).

    QuantizeV2 in SCALED mode with HALF_AWAY_FROM_ZERO rounding, which oneDNN's graph rewrite leaves to TF's
    own kernel; the MIN_FIRST form becomes oneDNN's QuantizeV2, which hands every call to the intra-op pool
    (~60 us a Dense at a few rows: 25 per MiniLM call, a third of a batch-1 int8 call; docs/serving_form.md,
    "Static ranges quantized on TF's kernel")."""
    quantized, _, _ = tf.raw_ops.QuantizeV2(input=x, min_range=0.0, max_range=high, T=tf.quint8,
                                            mode="SCALED", round_mode="HALF_AWAY_FROM_ZERO",
                                            ensure_minimum_range=0.0)
    return quantized


def int8_matmul(inputs, kernel, kernel_scale, column_sums):
    """inputs [..., k] float @ (kernel [k, n] int8 / kernel_scale [n]) -> float32 [..., n], through
    QuantizeV2 + QuantizedMatMulWithBiasAndDequantize (`column_sums`: the kernel's, float32 [n]).

    Each row (token) of `inputs` is scaled by its own absolute maximum onto -63..63 and offset by 64 into
    1..127 (oneDNN's matmul takes unsigned 8-bit inputs); the offset's 64 x column sums is subtracted as the
    op's bias, and the row and unit scales are applied to its float output."""
    k, n = kernel.shape
    shape = tf.shape(inputs)
    x = tf.reshape(tf.cast(inputs, tf.float32), [-1, k])
    row_max = tf.maximum(tf.reduce_max(tf.abs(x), axis=1, keepdims=True), 1e-30)  # an all-0 row stays 0
    # QuantizeV2 SCALED over [0, 255] only rounds: the values are already 1..127.
    quantized, min_a, max_a = tf.raw_ops.QuantizeV2(input=x * (INPUT_HALF_RANGE / row_max) + INPUT_OFFSET,
                                                    min_range=0.0, max_range=255.0, T=tf.quint8,
                                                    mode="SCALED")
    product = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=quantized, b=tf.bitcast(tf.convert_to_tensor(kernel), tf.qint8), bias=column_sums * -INPUT_OFFSET,
        min_a=min_a, max_a=max_a, min_b=-127.0, max_b=127.0, min_freezed_output=-1.0, max_freezed_output=1.0,
        Toutput=tf.float32, input_quant_mode="SCALED")
    out = product * (row_max / INPUT_HALF_RANGE) / tf.cast(kernel_scale, tf.float32)
    return tf.reshape(out, tf.concat([shape[:-1], [n]], 0))
