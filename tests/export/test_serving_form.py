"""The served forms of a model: int8 (int8 x int8 matmuls or int8 weights) and bfloat16 compute, each close
to float32 on real texts; the int8 form chosen by the CPU's flags (the cpuinfo reader mocked). The int8 x int8
matmul runs only on a CPU with an int8 dot-product flag (VNNI): there its tests run, elsewhere its refusal."""

import logging
import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertEncoder, BertMultipleChoice, execution
from keras_bert.export import ExportError, export_saved_model
from keras_bert.export.saved_model import serving_outputs
from keras_bert.export.serving_form import int8_matmul, resolve_quantize, serving_form, static_int8_matmul
from tests.export.test_export import TEXTS, _expected, preprocessor, tiny_config  # noqa: F401
from tests.test_execution import AVX2_CPU, BF16_CPU, cpu  # noqa: F401

# TF's oneDNN QuantizedMatMulWithBiasAndDequantize returns no output on a CPU without VNNI (AVX2 only).
needs_int8_matmul = pytest.mark.skipif(not execution.has_int8_matmul_hardware(),
                                       reason=f"no {execution.INT8_CPU_FLAGS} flag on this CPU")


def _classifier():
    model = BertClassifier(BertEncoder(tiny_config()), 3)
    rng = np.random.default_rng(0)  # weights large enough that the logits spread (init leaves them ~0)
    model.set_weights([rng.normal(0, 0.3, w.shape).astype("float32") for w in model.get_weights()])
    return model


def _graph_ops(model, inputs):
    """The op names of `model`'s traced inference graph (its function library included)."""
    graph = tf.function(lambda: model(inputs, training=False)).get_concrete_function().graph.as_graph_def()
    return {node.op for node in graph.node} | {node.op for f in graph.library.function for node in f.node_def}


@needs_int8_matmul
def test_int8_matmul_equals_a_float_matmul_of_the_quantized_input():
    rng = np.random.default_rng(1)
    inputs = (rng.normal(0.5, 2.0, [2, 5, 24]) * rng.uniform(0.01, 10, [2, 5, 1])).astype("float32")
    inputs[1, 2] = 0  # an all-zero row
    kernel = rng.integers(-127, 128, [24, 7]).astype("int8")
    scale = rng.uniform(50, 200, [7]).astype("float32")
    got = int8_matmul(tf.constant(inputs), tf.constant(kernel), tf.constant(scale),
                      tf.constant(kernel.astype("float32").sum(0))).numpy()
    # The same computation in numpy: each row quantized to -63..63 by its absolute maximum.
    row_max = np.maximum(np.abs(inputs).max(-1, keepdims=True), 1e-30)
    quantized = np.round(inputs * 63 / row_max) * row_max / 63
    want = quantized @ kernel.astype("float32") / scale
    assert got.shape == (2, 5, 7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


@needs_int8_matmul
@pytest.mark.parametrize("activation, reference", [
    (None, lambda x: x),
    ("GeluExact", lambda x: x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    ("Tanh", np.tanh),
])
def test_static_int8_matmul_equals_a_float_matmul_of_the_clamped_input(activation, reference):
    rng = np.random.default_rng(2)
    inputs = rng.normal(0, 1.0, [3, 4, 24]).astype("float32")
    inputs[0, 0, :3] = [5.0, -5.0, 1.6]  # beyond the range: clamped to 127 and -128 steps
    kernel = rng.integers(-127, 128, [24, 7]).astype("int8")
    scale = rng.uniform(50, 200, [7]).astype("float32")
    bias = rng.normal(0, 1, [7]).astype("float32")
    input_range = 1.6
    step = input_range / 127
    got = tf.function(lambda x: static_int8_matmul(x, kernel, input_range, scale, bias, activation))(
        tf.constant(inputs)).numpy()
    quantized = np.clip(np.round(inputs / step), -128, 127) * step
    want = reference(quantized @ kernel.astype("float32") / scale + bias)
    assert got.shape == (3, 4, 7)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    flat = tf.function(lambda x: static_int8_matmul(x, kernel, input_range, scale, None, activation))(
        tf.constant(inputs[0])).numpy()  # rank 2, no bias
    np.testing.assert_allclose(flat, reference(quantized[0] @ kernel.astype("float32") / scale), rtol=1e-4,
                               atol=1e-4 * np.abs(want).max())


@needs_int8_matmul
def test_calibrated_int8_matmul_has_constant_ranges_and_float32_labels(preprocessor):  # noqa: F811
    texts = {"text": np.array(TEXTS, dtype=object)}
    model = _classifier()
    want = _expected(model, texts, preprocessor)
    calibration = preprocessor(tf.constant(TEXTS * 4))
    served = serving_form(model, "int8_matmul", calibration_inputs=calibration)
    got = _expected(served, texts, preprocessor)
    # Measured here, of the logits' range: 1.6% (per-row ranges: 1.9%).
    assert np.abs(got["logits"] - want["logits"]).max() <= 0.03 * np.abs(want["logits"]).max()
    np.testing.assert_array_equal(got["label_id"], want["label_id"])
    ops = _graph_ops(served, preprocessor(tf.constant(TEXTS[:2])))
    assert {"QuantizeV2", "_QuantizedMatMul"} <= ops
    # no per-row reduction; every Dense int8 (BatchMatMulV2: attention) in the op that caches its reordered
    # kernel; GELU and the pooler's tanh fused into the matmul
    assert not ops & {"Max", "Abs", "MatMul", "QuantizedMatMulWithBiasAndDequantize", "Erf", "Tanh"}
    with pytest.raises(ValueError, match="calibration texts set the input ranges of quantize='int8_matmul'"):
        serving_form(model, "int8_weights", calibration_inputs=calibration)


def test_calibration_texts_need_a_model_of_single_texts(preprocessor, cpu, tmp_path):  # noqa: F811
    cpu(BF16_CPU)  # the check comes before any int8 matmul runs
    model = BertMultipleChoice(BertEncoder(tiny_config()), 2)
    with pytest.raises(ExportError,
                       match="calibration_texts: a BertMultipleChoice cannot run on single texts"):
        export_saved_model(model, tmp_path, preprocessor, quantize="int8_matmul", calibration_texts=["a dog"])


@pytest.mark.parametrize("quantize, dtype, tolerance, op, absent_op", [
    pytest.param("int8_matmul", "float32", 0.03, "QuantizedMatMulWithBiasAndDequantize", "MatMul",
                 marks=needs_int8_matmul),  # every Dense is int8
    ("int8_weights", "float32", 0.03, "MatMul", "QuantizeV2"),
    (None, "bfloat16", 0.02, "MatMul", "QuantizeV2"),
    ("int8_weights", "bfloat16", 0.03, "MatMul", "QuantizeV2"),
])
def test_served_forms_are_close_to_float32(preprocessor, quantize, dtype, tolerance, op, absent_op):  # noqa: F811
    texts = {"text": np.array(TEXTS, dtype=object)}
    model = _classifier()
    want = _expected(model, texts, preprocessor)
    served = serving_form(model, quantize, dtype)
    assert served is not model
    got = _expected(served, texts, preprocessor)
    scale = np.abs(want["logits"]).max()
    # Measured here, of the logits' range: int8_matmul 1.9%, int8_weights 1.2%, bfloat16 0.3%, both 0.8%.
    assert np.abs(got["logits"] - want["logits"]).max() <= tolerance * scale
    np.testing.assert_array_equal(got["label_id"], want["label_id"])
    assert got["logits"].dtype == np.float32
    ops = _graph_ops(served, preprocessor(tf.constant(TEXTS[:2])))
    assert op in ops and absent_op not in ops
    assert not any(name.startswith("_") for name in ops)  # no internal (oneDNN-rewritten) op is traced
    assert not any(w.dtype == "int8" for w in model.weights)  # the caller's model is left as it was


@pytest.mark.parametrize("flags, form", [(BF16_CPU, "int8_matmul"), (AVX2_CPU | {"avx_vnni"}, "int8_matmul"),
                                         (AVX2_CPU, "int8_weights"),
                                         (AVX2_CPU | {"avx512_bf16"}, "int8_weights")])
def test_int8_is_int8_matmul_where_the_cpu_has_vnni(cpu, flags, form, caplog):  # noqa: F811
    cpu(flags)
    with caplog.at_level(logging.INFO, logger="keras_bert"):
        assert resolve_quantize("int8") == form
    assert f"quantize='int8': exporting {form}" in caplog.text
    assert resolve_quantize("int8_weights") == "int8_weights"
    assert resolve_quantize(None) is None
    if form == "int8_matmul":
        assert resolve_quantize("int8_matmul") == "int8_matmul"
    else:  # asked for by name where it cannot run: refused, naming the flags and the form that runs
        with pytest.raises(ValueError, match=r"quantize='int8_matmul' needs a CPU with an int8 dot-product "
                                             r"flag \(avx512_vnni / avx_vnni / amx_int8\).*'int8_weights'"):
            resolve_quantize("int8_matmul")


def test_unknown_forms_are_refused(tmp_path):
    model = BertEncoder(tiny_config())
    with pytest.raises(ExportError, match="quantize must be one of"):
        export_saved_model(model, tmp_path, signature="token_ids", quantize="int4")
    with pytest.raises(ExportError, match="dtype must be one of .*got 'float16'"):
        export_saved_model(model, tmp_path, signature="token_ids", dtype="float16")


def test_bfloat16_encoder_serves_float32_outputs():
    model = BertEncoder(tiny_config())
    inputs = {"input_word_ids": tf.constant([[2, 5, 6, 3]]), "input_mask": tf.ones([1, 4], tf.int32),
              "input_type_ids": tf.zeros([1, 4], tf.int32)}
    served = serving_form(model, dtype="bfloat16")
    assert served.transformer_layers[0].qkv.compute_dtype == "bfloat16"
    assert served.transformer_layers[0].qkv.kernel.dtype == "bfloat16"  # no float32 kernel cast per call
    out = serving_outputs(served, inputs)
    want = serving_outputs(model, inputs)
    for name in ("pooled_output", "sequence_output"):
        assert out[name].dtype == tf.float32
        np.testing.assert_allclose(out[name].numpy(), want[name].numpy(), atol=0.05)


def test_a_mixed_bfloat16_model_serves_float32_unless_asked():
    model = BertEncoder(tiny_config(), dtype="mixed_bfloat16")
    served = serving_form(model)
    assert served is not model
    assert {layer.compute_dtype for layer in served._flatten_layers()} == {"float32"}
    plain = BertEncoder(tiny_config())
    assert serving_form(plain) is plain  # nothing to change
    assert serving_form(model, dtype="bfloat16").transformer_layers[0].qkv.kernel.dtype == "bfloat16"
