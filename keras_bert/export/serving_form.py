"""The form a model is served in: LoRA adapters merged, the compute dtype, and optionally int8 weights.

Measured on a 2-core AMD EPYC (avx512_vnni, avx_vnni, avx512_bf16; no AMX), TF 2.21 with oneDNN, machine
shared (load average 2-4), every form interleaved in one process: one Dense layer [1024, 384] x [384, 1536]
with bias (`python -m benchmarks.int8_matmul`), and MiniLM-L6-H384 served from raw text at seq 48
(`python -m benchmarks.adaptation --run=serve`), as float32's time / the form's:

| form | Dense layer | MiniLM batch 1 / 8 / 32 | dev accuracy | SavedModel |
|---|---|---|---|---|
| float32 | 7.2 ms | 14.1 / 60.5 / 229 ms | 74.0% | 96.5 MB |
| dtype="bfloat16" | 1.55x | 0.96x / 0.98x / 1.11x | 74.0% | 53.2 MB |
| Keras's own int8 (before) | 0.21x | 0.36x / 0.23x / 0.21x | 74.0% | 66.3 MB |
| "int8_weights" | 0.91x | 0.82x / 1.05x / 0.97x | 74.0% | 66.5 MB |
| "int8_weights", bfloat16 | 1.24x | 0.78x / 0.95x / 1.03x | 74.0% | 43.7 MB |
| "int8_matmul" | 1.67x | 0.83x / 1.22x / 1.56x | 74.5% | 66.4 MB |

and "int8_matmul" with `calibration_inputs` (static ranges), measured 2026-11-30 16:48 UTC on the same machine
quieter (load 1.2), interleaved with float32 and per-row int8_matmul in one process:

| form | Dense layer (1024 / 384 rows) | MiniLM batch 1 / 8 / 32 | dev accuracy | SavedModel |
|---|---|---|---|---|
| float32 | 3.45 / 1.41 ms | 9.3 / 35.2 / 116 ms | 74.0% | 96.4 MB |
| "int8_matmul", per-row ranges | 1.40x / 1.08x | 0.76x / 1.07x / 1.37x | 75.5% | 66.4 MB |
| "int8_matmul", static ranges | 1.90x / 1.48x | 0.76x / **1.35x** / **1.72x** | 74.5% | 65.7 MB |

`dtype="bfloat16"` rebuilds the model under Keras's "bfloat16" policy: the encoder's weights and matmuls in
bfloat16 (LayerNorm, softmax and the task heads stay float32, their dtype fixed by the layers); served
outputs are cast to float32. bfloat16 weights, not mixed_bfloat16's float32 ones: casting every kernel per
call made mixed_bfloat16 0.81x at batch 1. The bf16 Dense is 1.55x float32's, but at MiniLM's serving sizes
the rest of the graph (attention, LayerNorm, op dispatch) is half the time, so the default stays float32;
without avx512_bf16/amx_bf16 bf16 is emulated and slower.

Every int8 form stores each Dense kernel (projections, pooler, heads; embeddings and LayerNorm stay float)
as int8 with one float scale per output unit (Keras `Dense.quantize("int8")`). They differ in the call:
  - Keras's own int8 call (no longer exported) quantizes its input per row, then runs an int8 x int8 ->
    int32 tf.matmul, which TF computes with a generic Eigen kernel, not oneDNN.
  - "int8_matmul": each row (token) of the input is scaled by its absolute maximum onto -63..63 and offset
    by 64 into 1..127 (QuantizeV2 to quint8), multiplied by the int8 kernel with
    `QuantizedMatMulWithBiasAndDequantize` (u8 x s8 -> f32, oneDNN's VNNI kernel; the offset's 64 x column
    sums subtracted as its bias), then scaled back per row and per unit. The op alone ran at 2.8x a float32
    matmul (one range per tensor, 2.4 vs 6.8 ms); the per-row scaling, the bias, and the GELU that float32
    fuses into its matmul are separate TF ops, hence 1.67x per layer and 1.22x for the whole model at
    batch 8. Measured alternatives: one range per tensor lost 1.5 points of dev accuracy (72.5%); rows
    mapped by their minimum and span onto 0..127 were as accurate (75.0%) but slower (1.09x at batch 8:
    two more elementwise passes). 7-bit inputs because oneDNN's u8 x s8 kernels on x86 CPUs without VNNI
    sum pairs of products in int16 (vpmaddubsw), which 255 x 127 x 2 would overflow and 127 x 127 x 2
    does not (not run on such a CPU here). Both ops are core TF ops, but
    `QuantizedMatMulWithBiasAndDequantize` has a CPU kernel only where TF's oneDNN ops are on (x86 Linux
    builds; with TF_ENABLE_ONEDNN_OPTS=0 export/check_servable.py reports "Missing 0-th output from ...
    QuantizedMatMulWithBiasAndDequantize" on the first request: an error, never wrong numbers).
  - "int8_matmul" with `calibration_inputs` (`export_saved_model(calibration_texts=...)`, `--calibration_file`):
    the model runs once at export on a few hundred texts (the int8 kernels applied in float32) and each
    Dense input gets one range, the 99.99th percentile of its |x| there (the benchmark: the task's 400
    training texts). Served, each Dense is one QuantizeV2 with that constant range (MIN_FIRST: x / step +
    128 rounded onto 0..255, step = range / 127; values past the range clamped), the matmul with the layer's
    bias and the offset's correction folded into the op's float bias, and one multiply by step / kernel scale
    per unit: no per-row reductions or scale arithmetic. Per layer 1.90x float32 (1.48x at 384 rows);
    MiniLM 1.35x at batch 8 (per-row: 1.07x in the same run), 1.72x at batch 32, dev accuracy 74.5%
    (max |logit diff| to float32 0.108, per-row 0.031). Still short of 1.5x at batch 8: the op profile
    (RunMetadata, batch 8) has the int8 matmuls at 9.2 ms (float32's 21.0 with bias), but QuantizeV2 1.5 ms,
    the per-unit multiplies 1.0 ms, and the unquantized rest (GELU's Erfc and multiplies, attention's
    transposes and batch matmuls, LayerNorm) as float32's. Batch 1 stays 0.76x: there the int8 matmuls
    take 5.2 ms against float32's 4.8 (with bias) and QuantizeV2 still 1.4 ms (a cost per call), likely
    because the op reorders every int8 kernel into oneDNN's blocked layout on every call (in TF's
    mkl_qmatmul_op.cc the reordered-weight cache is compiled only for oneDNN < 3; read there, not profiled
    here). Measured alternatives: 7 bits (ranges clamped to -64..63 steps; an extra clip) 73.5%, 1.28x;
    the 99.9th percentile 74.5%, 1.36x; one scale per kernel tensor instead of per unit (no
    multiply after the op) 73.5%, 1.43x at batch 8 and 1.82x at batch 32 (not adopted: a point of accuracy
    for 0.1x). 8-bit inputs (0..255) rely on VNNI's int32 accumulation; on x86 CPUs without VNNI oneDNN's
    int16 pair sums can saturate (not run on such a CPU here), so export static ranges for VNNI servers
    ("int8" picks "int8_matmul" only where the exporting CPU has VNNI). TF's other public quantized matmuls
    (…AndRelu, …AndRequantize) fuse ReLU or an int8 output; BERT's GELU, residuals and LayerNorm between
    Dense layers leave nothing for them to fuse, and every Dense here has its own input (QKV is one Dense).
  - "int8_weights": weight-only; the int8 kernel is cast to the compute dtype per call and the matmul runs
    there (Keras's int8 call with no input quantizer). Every TF build and CPU runs it.
  - "int8": "int8_matmul" where the exporting CPU has VNNI (`execution.has_int8_matmul_hardware`), else
    "int8_weights". /proc/cpuinfo at export time describes the exporting machine, not the server: pass
    the explicit form when they differ (each form computes the same numbers on any x86 CPU; only its
    speed depends on the hardware).
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import compat, execution

QUANTIZE_MODES = ("int8", "int8_matmul", "int8_weights")
DTYPES = ("float32", "bfloat16")
# "int8_matmul" inputs: -63..63 per row, offset to 1..127 (7 bits: see the module docstring).
INPUT_HALF_RANGE = 63.0
INPUT_OFFSET = 64.0
# Static ranges (`calibration_inputs`): each Dense input's range is this percentile of |x| on the calibration
# inputs, one per tensor; calibration runs in batches of CALIBRATION_BATCH rows.
CALIBRATION_PERCENTILE = 99.99
CALIBRATION_BATCH = 64
# Static-range inputs: x / step + 128 (step = range / 127) on 0..255, i.e. -128..127 steps around 0.
STATIC_HALF_RANGE = 127.0
STATIC_OFFSET = 128.0


def resolve_quantize(quantize):
    """The int8 form `quantize` names on this machine: "int8" becomes "int8_matmul" or "int8_weights" by
    the CPU's flags; the explicit forms and None are returned as they are."""
    if quantize is not None and quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {QUANTIZE_MODES} or None, got {quantize!r}")
    if quantize != "int8":
        return quantize
    form = "int8_matmul" if execution.has_int8_matmul_hardware() else "int8_weights"
    execution.logger.info(f"quantize='int8': exporting {form} ({'a' if form == 'int8_matmul' else 'no'} int8 "
                          f"dot-product flag of {execution.INT8_CPU_FLAGS} in {execution.CPUINFO} here; the "
                          "serving CPU may differ: pass the form explicitly to choose)")
    return form


def serving_form(model, quantize=None, dtype="float32", calibration_inputs=None):
    """`model` as it is exported: `model.merged_lora()` when it has LoRA adapters; rebuilt under Keras's
    `dtype` policy where its layers compute in another dtype (a model built with mixed_bfloat16 serves
    float32 unless `dtype="bfloat16"`); then, for a `quantize` form, with int8 Dense kernels. `model` itself
    is never changed (a copy is made where needed); with nothing to change, `model` itself.

    `calibration_inputs` (a dict of model inputs, e.g. a preprocessor's output for a few hundred texts): for
    "int8_matmul", each Dense input gets one static range, CALIBRATION_PERCENTILE of its |x| there (the
    int8-weight model run in float on them); layers the inputs do not reach keep per-row ranges."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if calibration_inputs is not None and quantize not in ("int8", "int8_matmul"):
        raise ValueError(f"calibration texts set the input ranges of quantize='int8_matmul'; got quantize="
                         f"{quantize!r}, which has no quantized inputs")
    quantize = resolve_quantize(quantize)  # "int8" resolved to "int8_weights" ignores the calibration
    merged = model.merged_lora() if getattr(model, "lora_rank", None) is not None else model
    if dtype != "float32" or any(layer.compute_dtype != "float32" for layer in compat.sublayers(merged)):
        merged = _rebuilt(merged, dtype)
    if quantize is None:
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
        kernel = tf.cast(compat.dense_kernel_variable(layer), tf.float32) / tf.cast(layer.kernel_scale, tf.float32)

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
    # Column sums of the int8 kernel: the float bias that undoes the shift of the input by its minimum.
    column_sums = kernel.astype(np.float32).sum(axis=0)
    if input_range is not None:
        kernel_scale = keras.ops.convert_to_numpy(layer.kernel_scale).astype(np.float32)
        bias = 0.0 if layer.bias is None else keras.ops.convert_to_numpy(layer.bias).astype(np.float32)
        step = input_range / STATIC_HALF_RANGE  # one input step, in the input's units
        # product = q @ kernel + quantized_bias, with q = x / step + offset: y = product * step / kernel_scale.
        quantized_bias = tf.constant(bias * kernel_scale / step - STATIC_OFFSET * column_sums)
        output_scale = tf.constant(step / kernel_scale)

        def call(inputs, training=None):
            del training
            x = static_int8_matmul(inputs, compat.dense_kernel_variable(layer), input_range, quantized_bias, output_scale)
            x = tf.cast(x, layer.compute_dtype)
            return x if layer.activation is None else layer.activation(x)
    else:
        column_sums = tf.constant(column_sums)

        def call(inputs, training=None):
            del training
            x = int8_matmul(inputs, compat.dense_kernel_variable(layer), layer.kernel_scale, column_sums)
            x = tf.cast(x, layer.compute_dtype)
            if layer.bias is not None:
                x = x + tf.cast(layer.bias, layer.compute_dtype)
            return x if layer.activation is None else layer.activation(x)

    compat.set_int8_call(layer, call)


def static_int8_matmul(inputs, kernel, input_range, quantized_bias, output_scale):
    """inputs [..., k] float @ int8 `kernel` [k, n] -> float32 [..., n] with one constant input range: one
    QuantizeV2 (MIN_FIRST: x / step rounded, + STATIC_OFFSET, clamped to 0..255, step = input_range /
    STATIC_HALF_RANGE) and one QuantizedMatMulWithBiasAndDequantize adding `quantized_bias` [n] (the layer's
    bias and the offset's correction, in product units), times `output_scale` [n] (step / kernel scale)."""
    k, n = kernel.shape
    flat = inputs.shape.rank == 2  # the pooler and heads: no reshapes
    shape = None if flat else tf.shape(inputs)
    x = tf.cast(inputs, tf.float32) if flat else tf.reshape(tf.cast(inputs, tf.float32), [-1, k])
    step = input_range / STATIC_HALF_RANGE
    quantized, _, _ = tf.raw_ops.QuantizeV2(input=x, min_range=-STATIC_OFFSET * step,
                                            max_range=(255.0 - STATIC_OFFSET) * step, T=tf.quint8,
                                            mode="MIN_FIRST", ensure_minimum_range=0.0)
    product = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=quantized, b=tf.bitcast(tf.convert_to_tensor(kernel), tf.qint8), bias=quantized_bias,
        min_a=0.0, max_a=255.0, min_b=-127.0, max_b=127.0, min_freezed_output=-1.0, max_freezed_output=1.0,
        Toutput=tf.float32, input_quant_mode="SCALED")
    out = product * output_scale
    return out if flat else tf.reshape(out, tf.concat([shape[:-1], [n]], 0))


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
                                                    min_range=0.0, max_range=255.0, T=tf.quint8, mode="SCALED")
    product = tf.raw_ops.QuantizedMatMulWithBiasAndDequantize(
        a=quantized, b=tf.bitcast(tf.convert_to_tensor(kernel), tf.qint8), bias=column_sums * -INPUT_OFFSET,
        min_a=min_a, max_a=max_a, min_b=-127.0, max_b=127.0, min_freezed_output=-1.0, max_freezed_output=1.0,
        Toutput=tf.float32, input_quant_mode="SCALED")
    out = product * (row_max / INPUT_HALF_RANGE) / tf.cast(kernel_scale, tf.float32)
    return tf.reshape(out, tf.concat([shape[:-1], [n]], 0))
