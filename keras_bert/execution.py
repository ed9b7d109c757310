"""How the train step runs for a dtype policy on this machine: XLA-compiled whole, TF's own kernels, or
TF's kernels for the matmuls with XLA fusing everything between them.

XLA's CPU dots do not use the bf16 instructions (avx512_bf16, amx_bf16) that TF's oneDNN kernels use, so a
mixed_bfloat16 step on such a CPU runs as "fusions": the train/test/predict steps are traced inside
`tf.xla.experimental.jit_scope` marking every op but the dots (MatMul, BatchMatMul, Einsum) and the row
reductions (Sum, BiasAddGrad) for XLA, so TF's clustering pass compiles the chains between them (forward and
gradients) into XLA clusters while the dots run on oneDNN; the optimizer's update stays on TF's kernels
(`fusion_scope` says why). It is per model: nothing global (no TF_XLA_FLAGS, no auto-jit) changes.
float32, and bf16 on a CPU without bf16 hardware or on a GPU/TPU, keep XLA whole.

The models' `compile()` (`ChoosesExecution`) asks `choose_execution` when `jit_compile` is not given. The
measurements behind each choice (matmul peaks, step times per execution): docs/execution.md.
"""

import contextlib
import contextvars
import functools
import logging

import keras

from keras_bert.contexts import setting

# Set while a step is traced in `fusion_scope`.
_FUSING = contextvars.ContextVar("fusing", default=False)
# Set while a step is traced to run on TF's kernels (`kernels_scope`).
_ON_KERNELS = contextvars.ContextVar("on_kernels", default=False)

logger = logging.getLogger("keras_bert")

CPUINFO = "/proc/cpuinfo"
# CPU flags (as /proc/cpuinfo names them) of bf16 matmul hardware that TF's oneDNN kernels use.
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
EXECUTIONS = ("xla", "fusions", "kernels")
# Ops left to TF's kernels under "fusions": the dots, which oneDNN runs on the bf16 hardware.
DOT_OPS = frozenset({"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"})
# Reductions also left to TF's kernels under "fusions": XLA's CPU code for a reduction over rows (bias and
# LayerNorm gradients, [4096, n] -> [n] in a mini step) ran as unfused reduce-window kernels (~35 ms a step);
# TF's are vectorized and multi-threaded (~20 ms for the same sums).
REDUCTION_OPS = frozenset({"Sum", "BiasAddGrad"})
TF_KERNEL_OPS = DOT_OPS | REDUCTION_OPS
# An XLA step compiles once per input shape; on a CPU a compile costs about what this many steps on TF's
# kernels lose to XLA, so a run with fewer steps per shape than this runs on TF's kernels. MiniLM-L6
# fine-tuning, batch 32, lengths 16-128, 2 cores: a new length's first XLA step costs ~5 s over a steady one
# (its trace, XLA's lowering and LLVM), and XLA saves ~0.13 s a step over the run's length mix (0.11 s at
# length 16, 0.4 s at 128), so ~40 steps a shape repay it (docs/execution.md, "Padding").
STEPS_PER_COMPILE = 40
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


def has_bf16_matmul_hardware():
    """True where this CPU has bf16 matmul instructions (`BF16_CPU_FLAGS`) that TF's oneDNN kernels use."""
    return any(flag in cpu_flags() for flag in BF16_CPU_FLAGS)


def warn_without_bf16_hardware(what):
    """Logs once that `what` (a bf16 computation) is emulated, and slower than float32, on this CPU where it
    has none of `BF16_CPU_FLAGS`; True where it warned."""
    if has_bf16_matmul_hardware():
        return False
    _log_once(logging.WARNING, f"{what}: this CPU has no bf16 matmul hardware ({' or '.join(BF16_CPU_FLAGS)} "
              f"not in {CPUINFO}), so bfloat16 matmuls are emulated and run slower than float32 (0.70x its "
              "peak on an AVX2 CPU); float32 is the faster policy here")
    return True


def has_accelerator():
    """True where TF sees a GPU or TPU (physical devices: asking does not initialize TF's runtime)."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"))


@functools.cache
def _log_once(level, message):
    logger.log(level, message)


def choose_execution(dtype_policy):
    """How to run the train step of a model computing in `dtype_policy` (a `keras.DTypePolicy` or its
    name, e.g. "mixed_bfloat16") on this machine: "xla" (the whole step XLA-compiled), "fusions" (TF's
    oneDNN kernels for the matmuls, XLA clusters for the ops between them) or "kernels" (TF's kernels only).

    "fusions" only for a bfloat16 compute dtype on a CPU-only machine with bf16 matmul hardware (TF's
    oneDNN kernels use it, XLA's dots do not); "xla" otherwise ("kernels" only when asked for, as
    `jit_compile=False`). A bfloat16 policy on a CPU without that hardware logs once why float32 would be
    faster there.
    """
    policy = keras.dtype_policies.get(dtype_policy)
    if policy.compute_dtype != "bfloat16" or has_accelerator():
        return "xla"
    name = policy.name
    if warn_without_bf16_hardware(name):
        return "xla"
    found = [flag for flag in BF16_CPU_FLAGS if flag in cpu_flags()]
    _log_once(logging.INFO, f"{name} on a CPU with {found[0]}: matmuls on TF's oneDNN kernels (they use "
              "the bf16 hardware, XLA's CPU dots do not), XLA fusing the ops between them")
    return "fusions"


def choose_for_shapes(dtype_policy, num_steps, num_shapes):
    """`choose_execution(dtype_policy)` for a run of `num_steps` train steps whose batches take at most
    `num_shapes` input shapes: "xla" is "kernels" on a CPU-only machine when the run has fewer than
    STEPS_PER_COMPILE steps a shape (its compiles would cost more than XLA saves; TF's kernels trace the step
    for a shape of unknown length once); other choices as they are. Logs which and why."""
    execution = choose_execution(dtype_policy)
    if execution != "xla" or has_accelerator() or num_steps >= STEPS_PER_COMPILE * num_shapes:
        return execution
    _log_once(logging.INFO, f"{num_steps} train steps over up to {num_shapes} batch shapes: TF's kernels, "
              f"not XLA (a compile per shape costs ~{STEPS_PER_COMPILE} steps; set jit_compile to override)")
    return "kernels"


def resolve_execution(jit_compile, dtype_policy):
    """`compile(jit_compile=...)` -> an execution: True "xla", False "kernels", "auto" (or None) the
    machine's choice (`choose_execution`), or one of EXECUTIONS by name."""
    if jit_compile is True:
        return "xla"
    if jit_compile is False:
        return "kernels"
    if jit_compile in (None, "auto"):
        return choose_execution(dtype_policy)
    if jit_compile not in EXECUTIONS:
        raise ValueError(f"jit_compile={jit_compile!r}; expected True, False, 'auto' or one of {EXECUTIONS}")
    return jit_compile


@contextlib.contextmanager
def fusion_scope(optimizer_name=None):
    """Context in which the ops a traced step creates are marked for XLA clustering, except TF_KERNEL_OPS and
    the ops under the name scope `optimizer_name` (Keras optimizers apply updates in a scope of their name):
    the update of every variable as one XLA cluster ran on one thread (mini, 177 ms a step), as TF's
    kernels it uses all cores. The body of a graph function the step calls is traced apart, unmarked: a
    layer asks `in_fusion_scope()` to build its ops inline instead."""
    import tensorflow as tf

    scope = f"{optimizer_name}/" if optimizer_name else None

    def compile_op(node_def):
        return node_def.op not in TF_KERNEL_OPS and not (
            scope and (node_def.name.startswith(scope) or f"/{scope}" in node_def.name))

    with setting(_FUSING), tf.xla.experimental.jit_scope(compile_ops=compile_op,
                                                         separate_compiled_gradients=False):
        yield


def in_fusion_scope():
    """Whether a step is being traced in `fusion_scope` (its ops marked for XLA clustering)."""
    return _FUSING.get()


def kernels_scope():
    """Context in which a step is traced to run on TF's kernels (the "kernels" execution): a layer may then
    compile a chain of elementwise ops that TF would run op by op as one small XLA function
    (`HashDropout`), where a whole-XLA or fused step would fuse it anyway."""
    return setting(_ON_KERNELS)


def in_kernels_scope():
    """Whether a step is being traced in `kernels_scope` (to run on TF's kernels)."""
    return _ON_KERNELS.get()


class ChoosesExecution:
    """Mixin for the models holding an `encoder`: their one `compile` asks `_execution_for(jit_compile,
    run_eagerly)` how to run the train, test and predict steps: "auto" (or None) as `choose_execution` finds
    fastest for the dtype policy the encoder computes in; True/False (or an execution's name) override it.
    `model.execution` says which ran. Put it first in the bases: its steps wrap every other train_step
    (e.g. gradient accumulation)."""

    execution = None

    def _execution_for(self, jit_compile="auto", run_eagerly=False):
        """Sets `self.execution` for `compile(jit_compile=..., run_eagerly=...)` and returns the
        `jit_compile` Keras' compile takes (True only for "xla")."""
        self._execution_chosen = jit_compile in (None, "auto") and not run_eagerly
        if run_eagerly:
            self.execution = "eager"
            return False
        self.execution = resolve_execution(jit_compile, self.encoder.embeddings.dtype_policy)
        return self.execution == "xla"

    def choose_for_run(self, num_steps, num_shapes):
        """Before the first train step: an execution compile() chose ("auto") chosen again for a run of
        `num_steps` steps whose batches take at most `num_shapes` shapes (`choose_for_shapes`)."""
        if getattr(self, "_execution_chosen", False) and self.train_function is None:
            self.execution = choose_for_shapes(self.encoder.embeddings.dtype_policy, num_steps, num_shapes)
            self.jit_compile = self.execution == "xla"

    def _scope(self):
        if self.execution == "kernels":
            return kernels_scope()
        if self.execution != "fusions":
            return contextlib.nullcontext()
        return fusion_scope(self.optimizer.name if self.optimizer is not None else None)

    def train_step(self, data):
        with self._scope():
            return super().train_step(data)

    def test_step(self, data):
        with self._scope():
            return super().test_step(data)

    def predict_step(self, data):
        with self._scope():
            return super().predict_step(data)
