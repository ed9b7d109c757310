"""The train step's execution chosen by dtype and CPU features: the cpuinfo reader mocked, real steps run."""

import dataclasses
import logging

import numpy as np
import pytest

import keras_bert as kb
from keras_bert import execution

AVX2_CPU = frozenset({"fpu", "sse2", "avx", "avx2", "fma"})
BF16_CPU = AVX2_CPU | {"avx512f", "avx512_vnni", "avx512_bf16"}


@pytest.fixture
def cpu(monkeypatch):
    """Sets the CPU flags `execution` reads (a CPU-only machine) and clears its once-only log."""
    execution._log_once.cache_clear()
    monkeypatch.setattr(execution, "has_accelerator", lambda: False)
    return lambda flags: monkeypatch.setattr(execution, "cpu_flags", lambda: flags)


def test_cpu_flags_reads_the_flags_line(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512_bf16\n\n"
                       "processor\t: 1\nflags\t\t: fpu\n")
    assert execution.cpu_flags(str(cpuinfo)) == {"fpu", "avx2", "avx512_bf16"}
    assert execution.cpu_flags(str(tmp_path / "absent")) == frozenset()


@pytest.mark.parametrize("flags, policy, expected", [
    (BF16_CPU, "mixed_bfloat16", "fusions"),
    (AVX2_CPU | {"amx_bf16"}, "bfloat16", "fusions"),
    (BF16_CPU, "float32", "xla"),
    (BF16_CPU, "mixed_float16", "xla"),
    (AVX2_CPU, "mixed_bfloat16", "xla"),
    (AVX2_CPU, "float32", "xla"),
])
def test_choice_by_dtype_and_cpu(cpu, flags, policy, expected):
    cpu(flags)
    assert execution.choose_execution(policy) == expected


def test_accelerator_keeps_xla_for_bf16(cpu, monkeypatch):
    cpu(BF16_CPU)
    monkeypatch.setattr(execution, "has_accelerator", lambda: True)
    assert execution.choose_execution("mixed_bfloat16") == "xla"


def test_short_runs_over_many_shapes_skip_xla(cpu, monkeypatch, caplog):
    cpu(AVX2_CPU)
    with caplog.at_level(logging.INFO, logger="keras_bert"):
        assert execution.choose_for_shapes("float32", 319, 8) == "kernels"  # < 40 steps a shape
    assert "319 train steps over up to 8 batch shapes: TF's kernels" in caplog.text
    assert execution.choose_for_shapes("float32", 320, 8) == "xla"
    assert execution.choose_for_shapes("float32", 40, 1) == "xla"
    cpu(BF16_CPU)
    assert execution.choose_for_shapes("mixed_bfloat16", 20, 8) == "fusions"
    monkeypatch.setattr(execution, "has_accelerator", lambda: True)
    assert execution.choose_for_shapes("float32", 20, 8) == "xla"


def test_jit_compile_values_map_to_executions():
    assert execution.resolve_execution(True, "float32") == "xla"
    assert execution.resolve_execution(False, "mixed_bfloat16") == "kernels"
    assert execution.resolve_execution("fusions", "float32") == "fusions"
    with pytest.raises(ValueError, match="jit_compile='xl'"):
        execution.resolve_execution("xl", "float32")


def test_bf16_without_hardware_says_once_why(cpu, caplog):
    cpu(AVX2_CPU)
    with caplog.at_level(logging.INFO, logger="keras_bert"):
        for _ in range(3):
            execution.choose_execution("mixed_bfloat16")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "avx512_bf16 or amx_bf16 not in /proc/cpuinfo" in warnings[0].getMessage()
    assert "float32 is the faster policy" in warnings[0].getMessage()


@pytest.fixture
def one_layer(tiny_config):
    """tiny_config with one transformer layer: the choice and the ops it runs are those of every layer, and a
    layer fewer is less to trace and compile."""
    return dataclasses.replace(tiny_config, num_hidden_layers=1)


def _pretraining_batch(batch=4, seq=12, predictions=3, vocab=60):
    rng = np.random.default_rng(0)
    return {
        "input_word_ids": rng.integers(5, vocab, (batch, seq)).astype("int32"),
        "input_mask": np.ones((batch, seq), "int32"),
        "input_type_ids": np.zeros((batch, seq), "int32"),
        "masked_lm_positions": np.tile(np.arange(1, predictions + 1, dtype="int32"), (batch, 1)),
        "masked_lm_ids": rng.integers(5, vocab, (batch, predictions)).astype("int32"),
        "masked_lm_weights": np.ones((batch, predictions), "float32"),
        "next_sentence_labels": rng.integers(0, 2, (batch, 1)).astype("int32"),
    }


@pytest.mark.parametrize("flags, policy, jit_compile, expected", [
    (BF16_CPU, "mixed_bfloat16", "auto", "fusions"),  # TF's oneDNN dots, XLA between them
    (AVX2_CPU, "mixed_bfloat16", "auto", "xla"),
    (BF16_CPU, "float32", "auto", "xla"),
    (BF16_CPU, "mixed_bfloat16", True, "xla"),  # an explicit choice wins
    (BF16_CPU, "mixed_bfloat16", False, "kernels"),
])
def test_pretrainer_compile_chooses_and_steps(cpu, one_layer, flags, policy, jit_compile, expected):
    cpu(flags)
    model = kb.BertPretrainer(kb.BertEncoder(one_layer, dtype=policy))
    kwargs = {} if jit_compile == "auto" else {"jit_compile": jit_compile}
    model.compile(optimizer="adam", **kwargs)
    assert model.execution == expected
    assert model.jit_compile is (expected == "xla")
    logs = model.fit(_pretraining_batch(), batch_size=4, epochs=2, verbose=0).history
    assert np.isfinite(logs["loss"]).all() and logs["loss"][-1] < logs["loss"][0]


def _executed_op_types(run):
    """Op types TF's profiler saw while `run()` ran (an XLA cluster runs as `_XlaRun`)."""
    import glob
    import tempfile

    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with tempfile.TemporaryDirectory(prefix="keras_bert-profile-") as logdir:  # no trace left in /tmp
        tf.profiler.experimental.start(logdir)
        try:
            run()
        finally:
            tf.profiler.experimental.stop()
        with open(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True)[0], "rb") as f:
            space.ParseFromString(f.read())
    return {plane.event_metadata[event.metadata_id].name.rsplit(":", 1)[-1].strip()
            for plane in space.planes for line in plane.lines for event in line.events}


@pytest.mark.parametrize("accumulation", [1, 2])
def test_fusions_cluster_the_ops_between_the_dots(cpu, one_layer, accumulation):
    import tensorflow as tf

    cpu(BF16_CPU)
    batch = _pretraining_batch()
    ops = {}
    for jit_compile in ("auto", False):
        model = kb.BertPretrainer(kb.BertEncoder(one_layer, dtype="mixed_bfloat16"))
        model.compile(optimizer="adam", jit_compile=jit_compile, gradient_accumulation_steps=accumulation)
        model.fit(batch, batch_size=4, epochs=1, verbose=0)  # traces
        ops[model.execution] = _executed_op_types(lambda m=model: m.fit(batch, batch_size=4, epochs=1,
                                                                        verbose=0))
    assert "_XlaRun" in ops["fusions"]  # the ops between the dots run as XLA clusters
    assert any("MatMul" in op for op in ops["fusions"])  # the dots stay TF's kernels (oneDNN's here)
    assert "AssignSubVariableOp" in ops["fusions"]  # and so does the optimizer's update
    assert "BiasAddGrad" in ops["fusions"]  # and the row reductions (XLA's CPU reductions were slower)
    assert "_XlaRun" not in ops["kernels"]
    assert not tf.config.optimizer.get_jit()  # nothing global was turned on


def test_task_model_compile_chooses(cpu, one_layer):
    cpu(BF16_CPU)
    model = kb.BertClassifier(kb.BertEncoder(one_layer, dtype="mixed_bfloat16"), num_classes=2)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert model.execution == "fusions" and model.jit_compile is False
    batch = _pretraining_batch()
    inputs = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    model.fit(inputs, np.array([0, 1, 0, 1]), batch_size=4, verbose=0)
