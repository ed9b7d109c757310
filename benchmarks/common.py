"""What every benchmark shares: its command line, thread settings, the machine's description, load average,
peak RSS, latency timing, the result protocol between a benchmark subprocess and `run_all`, and synthetic
BERT batches.

Each measured configuration runs in its own subprocess (`python -m benchmarks.<module> --flags`): dtype
policies are process-global, XLA caches would leak between configs, and the peak resident memory
(VmHWM) of a process is only that configuration's if the process ran nothing else. The subprocess prints
one line `BENCH_RESULT {json}`; `run_subprocess` returns that dict.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

RESULT_PREFIX = "BENCH_RESULT "
NUM_THREADS = int(os.environ.get("BENCH_THREADS", "2"))
VOCAB_SIZE = 30522  # BERT's uncased WordPiece vocab: the MLM head's matmul is sized by it
SEQ_LENGTH = 128
MAX_PREDICTIONS = 20  # the original's max_predictions_per_seq at seq 128

# name -> (layers, hidden, heads, intermediate)
SIZES = {
    "mini": (4, 256, 4, 1024),
    "base4": (4, 768, 12, 3072),  # base width, 4 layers to keep the run short
    "base": (12, 768, 12, 3072),
}


def argument_parser(doc):
    """The command line of a benchmark script: an argparse parser whose `--help` shows `doc` (the script's
    module docstring: its first line as the description, the rest as the epilogue). Every benchmark script
    builds its flags on it in `parser()` and parses them in `main(argv=None)`."""
    summary, _, details = doc.strip().partition("\n")
    return argparse.ArgumentParser(description=summary, epilog=details.strip() or None,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


# The `help` of a flag a parent script sets for its children: left out of `--help`.
HIDDEN = argparse.SUPPRESS


def comma_separated(item_type=str):
    """An argparse `type` reading "a,b,c" as [item_type("a"), item_type("b"), item_type("c")]."""

    def parse(value):
        return [item_type(item) for item in value.split(",") if item]

    parse.__name__ = f"comma-separated {item_type.__name__}"  # argparse names it in its error message
    return parse


def quiet_tensorflow():
    """Fewer log lines from TF/XLA; call before importing tensorflow."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def configure_tensorflow(threads=NUM_THREADS, intra_op_threads=None):
    """TF intra/inter-op pools sized to the cores we benchmark on (the intra-op pool `intra_op_threads`
    where given) on a process's first call: TF sets them once, before it runs; later calls keep them.
    Returns the tensorflow module."""
    quiet_tensorflow()
    import tensorflow as tf

    if not tf.config.threading.get_inter_op_parallelism_threads():  # 0 until set; settable before TF runs
        tf.config.threading.set_intra_op_parallelism_threads(intra_op_threads or threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    return tf


def configure_torch(threads=NUM_THREADS):
    import torch

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    return torch


def load_average():
    """1-minute load average: above the core count means others shared the CPUs during the run."""
    return round(os.getloadavg()[0], 2)


def steal_seconds():
    """CPU time the hypervisor gave to others while this VM wanted it (/proc/stat `steal`, all CPUs), s."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return 0.0
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def peak_rss_mb():
    """Peak resident set size of this process (VmHWM), MiB: counts TF's and torch's native allocations."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


# CPU flags the results name: vector widths, and the bf16 and int8 matmul hardware TF's oneDNN kernels use.
REPORTED_CPU_FLAGS = ("avx2", "fma", "avx512f")


def reported_cpu_flags():
    """The flags of `REPORTED_CPU_FLAGS` and of the library's bf16 / int8 hardware lists this CPU has, as
    one space-separated str (the library's feature detection, keras_bert/execution.py)."""
    from keras_bert import execution

    wanted = (*REPORTED_CPU_FLAGS, *execution.BF16_CPU_FLAGS, *execution.INT8_CPU_FLAGS)
    return " ".join(flag for flag in dict.fromkeys(wanted) if flag in execution.cpu_flags())


def machine_description():
    """A dict describing the machine and the library versions the figures were measured with."""
    import importlib.metadata as md

    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    versions = {}
    for package in ("tensorflow", "keras", "keras-hub", "torch", "transformers", "tokenizers"):
        try:
            versions[package] = md.version(package)
        except md.PackageNotFoundError:
            versions[package] = "absent"
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "threads_used": NUM_THREADS,
        "simd": reported_cpu_flags(),
        "memory_gib": round(mem_kb / 2**20, 1),
        "python": platform.python_version(),
        "versions": versions,
    }


def median_latency(fn, repeats):
    """Median seconds of `repeats` calls of `fn` after two warm-up calls (they build oneDNN primitives)."""
    fn()
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved_latency_ms(calls, repeats):
    """{name: median ms} of each of `calls` ({name: fn}), timed in turn within each of `repeats` rounds, so
    that a change in the machine's load hits every configuration alike."""
    times = {name: [] for name in calls}
    for fn in calls.values():  # warm up: the first calls build oneDNN primitives
        fn()
        fn()
    for _ in range(repeats):
        for name, fn in calls.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: round(1e3 * statistics.median(values), 2) for name, values in times.items()}


def text_latencies_ms(servings, texts, batches, repeats):
    """{batch: {name: median ms}}: each of `servings` ({name: raw-text serving function}) called on the
    first `batch` of `texts`, interleaved (`interleaved_latency_ms`), for every batch size in `batches`."""
    import tensorflow as tf

    found = {}
    for batch in batches:
        batch_texts = tf.constant(texts[:batch])
        found[batch] = interleaved_latency_ms(
            {name: lambda s=s, t=batch_texts: s(text=t) for name, s in servings.items()}, repeats)
    return found


def emit(result):
    """Prints the result line `run_subprocess` parses (load average and peak RSS added)."""
    result = dict(result, load_after=load_average(), peak_rss_mb=peak_rss_mb())
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def run_subprocess(module, args=(), timeout=600):
    """Runs `python -m benchmarks.<module> *args` and returns its result dict (with load before/after),
    or {"error": ...} with the tail of its output when it failed."""
    command = [sys.executable, "-m", f"benchmarks.{module}", *args]
    load_before = load_average()
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        output = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        output = f"timed out after {timeout}s\n{e.stdout or ''}{e.stderr or ''}"
        proc = None
    wall = round(time.perf_counter() - start, 1)
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            result = json.loads(line[len(RESULT_PREFIX):])
            return dict(result, load_before=load_before, wall_s=wall)
    tail = "\n".join(output.splitlines()[-15:])
    return {"error": f"{' '.join(command[2:])} failed (rc={proc.returncode if proc else 'timeout'}):\n{tail}",
            "load_before": load_before, "wall_s": wall}


def pretraining_batch(batch_size, seq_length=SEQ_LENGTH, max_predictions=MAX_PREDICTIONS,
                      vocab_size=VOCAB_SIZE, seed=0):
    """A synthetic pre-training batch as numpy int32/float32 arrays under the original feature names.

    Full-length sequences (as create_pretraining_data mostly makes), two segments, `max_predictions`
    distinct sorted masked positions per row (never [CLS]), random NSP labels.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    word_ids = rng.integers(1000, vocab_size, size=(batch_size, seq_length), dtype=np.int32)
    type_ids = np.zeros((batch_size, seq_length), np.int32)
    type_ids[:, seq_length // 2:] = 1
    positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length), max_predictions, replace=False)
                                  for _ in range(batch_size)]), axis=1).astype(np.int32)
    return {
        "input_word_ids": word_ids,
        "input_mask": np.ones((batch_size, seq_length), np.int32),
        "input_type_ids": type_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": np.take_along_axis(word_ids, positions, axis=1),
        "masked_lm_weights": np.ones((batch_size, max_predictions), np.float32),
        "next_sentence_labels": rng.integers(0, 2, size=(batch_size, 1), dtype=np.int32),
    }


def epoch_timer():
    """A Keras callback whose `.times` holds each epoch's wall time (`fit` syncs the logs at epoch end),
    `.cpu_times` the CPU time of this process (all threads) and `.steals` the VM's steal time over it.

    They tell a slow epoch's cause apart: others' load on the machine grows the wall time, not the CPU time;
    CPU time near the wall time on a multi-core run means the work ran on one thread; steal time means the
    hypervisor took the CPUs."""
    import keras

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.times, self.cpu_times, self.steals, self.logs = [], [], [], []

        def on_epoch_begin(self, epoch, logs=None):
            self._start, self._cpu_start, self._steal_start = (time.perf_counter(), time.process_time(),
                                                               steal_seconds())

        def on_epoch_end(self, epoch, logs=None):
            self.times.append(time.perf_counter() - self._start)
            self.cpu_times.append(time.process_time() - self._cpu_start)
            self.steals.append(steal_seconds() - self._steal_start)
            self.logs.append({k: float(v) for k, v in (logs or {}).items()})

    return EpochTimer()


def fit_timed(model, tf, batches, steps, to_inputs=lambda b: b, timed_epochs=1, fit_per_epoch=False,
              tf_data_autotune=None):
    """`model.fit`: a warm-up epoch (compiles every input shape), then `timed_epochs` timed epochs over the
    same batches.

    `batches`: one batch (repeated for `steps` steps) or a list of batches (an epoch is the list; shapes may
    differ). With `fit_per_epoch`, each epoch is its own `fit` call, timed from the call to its return (what
    a user calling `fit` in a loop waits for: it includes dropping the data iterator, where tf.data's
    autotuning stalled, keras_bert/data/options.py); `tf_data_autotune` True/False sets the dataset's
    `autotune.enabled` explicitly (None: as the model's fit leaves it). Returns (median seconds per step,
    the last epoch's loss, steps per epoch, (each timed epoch's seconds per step, its CPU seconds per step,
    the VM's steal seconds over it)).
    """
    import statistics

    if len(batches) == 1:
        dataset = tf.data.Dataset.from_tensors(to_inputs(batches[0])).repeat()
    else:
        dataset = tf.data.Dataset.from_tensors(to_inputs(batches[0]))
        for batch in batches[1:]:
            dataset = dataset.concatenate(tf.data.Dataset.from_tensors(to_inputs(batch)))
        dataset, steps = dataset.repeat(), len(batches)
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    if tf_data_autotune is not None:
        options = tf.data.Options()
        options.autotune.enabled = tf_data_autotune
        dataset = dataset.with_options(options)
    timer = epoch_timer()
    if not fit_per_epoch:
        model.fit(dataset, steps_per_epoch=steps, epochs=1 + timed_epochs, callbacks=[timer], verbose=0)
        times = timer.times[1:]
    else:
        times = []
        for _ in range(1 + timed_epochs):
            start = time.perf_counter()
            model.fit(dataset, steps_per_epoch=steps, epochs=1, callbacks=[timer], verbose=0)
            times.append(time.perf_counter() - start)
        times = times[1:]
    per_step = [t / steps for t in times]
    cpu_per_step = [t / steps for t in timer.cpu_times[1:]]
    return (statistics.median(per_step), timer.logs[-1]["loss"], steps,
            (per_step, cpu_per_step, timer.steals[1:]))
