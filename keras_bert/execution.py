"""Which train step runs fastest for a dtype policy on this machine: XLA-compiled, or TF's own kernels.

Measured on an AMD EPYC with AVX512_BF16 (TF 2.21, benchmarks/results_bf16.md): XLA's CPU dots do not use
the bf16 instructions (2048^3 bf16 matmul: XLA 417, TF's oneDNN kernel 803 GFLOP/s; no XLA_FLAGS option
changed that: xla_cpu_use_onednn, xla_cpu_experimental_onednn_custom_call, xla_cpu_use_xnnpack), so a
mixed_bfloat16 step pays only without XLA, while a float32 step is fastest with XLA (pre-training at base
width, per step: bf16 without XLA 1.34x float32 XLA, bf16 with XLA 0.91x; at mini, float32 without
XLA 0.75x). On a CPU without AVX512_BF16/AMX, bf16 matmuls are emulated (0.70x the float32 peak on an AVX2
EPYC) and XLA stays the choice; float32 is faster there than any bf16 step. On a GPU or TPU, XLA (Keras's
own default there).

The models' `compile()` (`ChoosesExecution`) asks `choose_jit_compile` when `jit_compile` is not given.
"""

import functools
import logging

import keras

logger = logging.getLogger("keras_bert")

CPUINFO = "/proc/cpuinfo"
# CPU flags (as /proc/cpuinfo names them) of bf16 matmul hardware that TF's oneDNN kernels use.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# CPU flags of int8 dot-product hardware (u8 x s8 -> s32 in one instruction) that oneDNN's int8 kernels use.
INT8_CPU_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")


@functools.cache
def cpu_flags(path=CPUINFO):
    """The CPU feature flags listed in `path` (/proc/cpuinfo's first `flags` line), a frozenset of str;
    empty where the file is missing or unreadable (not Linux)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def has_int8_matmul_hardware():
    """True where this CPU has int8 dot-product instructions (`INT8_CPU_FLAGS`), where TF's oneDNN int8
    matmul runs 2.8x its float32 one (keras_bert/export/serving_form.py)."""
    return any(flag in cpu_flags() for flag in INT8_CPU_FLAGS)


def has_accelerator():
    """True where TF sees a GPU or TPU (physical devices: asking does not initialize TF's runtime)."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"))


@functools.cache
def _log_once(level, message):
    logger.log(level, message)


def choose_jit_compile(dtype_policy):
    """Whether to XLA-compile the train step of a model computing in `dtype_policy` (a `keras.DTypePolicy`
    or its name, e.g. "mixed_bfloat16") on this machine. Returns a bool for `Model.compile(jit_compile=)`.

    False only for a bfloat16 compute dtype on a CPU-only machine with bf16 matmul hardware (TF's oneDNN
    kernels use it, XLA's dots do not); True otherwise. A bfloat16 policy on a CPU without that hardware
    logs once why float32 would be faster there.
    """
    policy = keras.dtype_policies.get(dtype_policy)
    if policy.compute_dtype != "bfloat16" or has_accelerator():
        return True
    name = policy.name
    found = [flag for flag in BF16_CPU_FLAGS if flag in cpu_flags()]
    if found:
        _log_once(logging.INFO, f"{name} on a CPU with {found[0]}: train step without XLA (TF's oneDNN "
                  "kernels use the bf16 hardware, XLA's CPU dots do not)")
        return False
    _log_once(logging.WARNING, f"{name}: this CPU has no bf16 matmul hardware ({' or '.join(BF16_CPU_FLAGS)} "
              f"not in {CPUINFO}), so bfloat16 matmuls are emulated and run slower than float32 (0.70x its "
              "peak on an AVX2 CPU); float32 is the faster policy here")
    return True


class ChoosesExecution:
    """Mixin for the models holding an `encoder`: `compile()` without `jit_compile` (or with "auto") XLA-
    compiles the train step or not as `choose_jit_compile` finds fastest for the dtype policy the encoder
    computes in; True/False override it. Put it before `keras.Model` in the bases."""

    def compile(self, *args, jit_compile="auto", **kwargs):
        if jit_compile == "auto" and not kwargs.get("run_eagerly"):
            jit_compile = choose_jit_compile(self.encoder.embeddings.dtype_policy)
        super().compile(*args, jit_compile=jit_compile, **kwargs)
