"""TF Serving's configuration for an export, written with every export: `batching_parameters.txt` (how
the server batches requests) and `model_server_flags.txt` (its thread pools).

`export_saved_model` writes `<version>/assets.extra/batching_parameters.txt`, a text-format
`tensorflow.serving.BatchingParameters` (session_bundle_config.proto) for

    tensorflow_model_server --enable_batching --batching_parameters_file=<base>/<version>/assets.extra/...

The server reads the file from any path given on its command line; beside the version it travels with the
model it was chosen for. The values (BUILD.md, "Batching requests"; measured in docs/serving_measurements.md,
"Length buckets"):
- max_batch_size 32: with length buckets a batch costs about the sum of its texts, so the cost per text
  keeps falling up to 32 (batch 32 at least as cheap per text as 8 on mixed real texts);
- batch_timeout_micros 2000: a lone request waits at most 2 ms for company, a sixth of one batch-1 call of
  MiniLM-L6 on 2 cores (12 ms) and well under the 10-50 ms a concurrent request saves;
- num_batch_threads 1: one batch at a time, since TensorFlow's own intra-op pool already takes every core;
- max_enqueued_batches 8: a burst waits at most ~8 batches (a few seconds on 2 cores), then UNAVAILABLE;
- allowed_batch_sizes only for a fixed-length export (fixed shapes, as for an accelerator): a dynamic export
  takes any batch size, and padding a batch up to an allowed size would only add rows to compute;
- pad_variable_length_inputs false: raw-text inputs are [batch] strings; a token-id signature's requests
  must then share one sequence length (the server pads nothing).

`<version>/assets.extra/model_server_flags.txt` holds the server's thread flags chosen for the export's form
(`server_threads`), one flag a line (lines starting with # are comments):

    tensorflow_model_server ... $(grep -v '^#' <base>/<version>/assets.extra/model_server_flags.txt)

An "int8_matmul" export of small kernels asks for one intra-op thread (`server_threads`); larger models,
float32 and bfloat16 keep TF's defaults (docs/serving.md, "Thread pools").
"""

import os

BATCHING_FILE = os.path.join("assets.extra", "batching_parameters.txt")
SERVER_FLAGS_FILE = os.path.join("assets.extra", "model_server_flags.txt")
# TF's oneDNN int8 matmul runs on one thread while its 1-byte input, kernel and output count
# (m n + k (m + n)) stay under the L2 size; 1 MiB is the smallest L2 a core of current server CPUs has.
L2_BYTES = 1 << 20
# One intra-op thread when every int8 kernel runs on one thread up to this many rows (a text of 128 pieces).
ONE_THREAD_ROWS = 128
MAX_BATCH_SIZE = 32
BATCH_TIMEOUT_MICROS = 2000
NUM_BATCH_THREADS = 1
MAX_ENQUEUED_BATCHES = 8


def batching_parameters(fixed_length=False):
    """The text proto of the export's BatchingParameters (str); `fixed_length` adds allowed batch sizes
    (powers of 2 up to MAX_BATCH_SIZE)."""
    lines = [f"max_batch_size {{ value: {MAX_BATCH_SIZE} }}",
             f"batch_timeout_micros {{ value: {BATCH_TIMEOUT_MICROS} }}",
             f"max_enqueued_batches {{ value: {MAX_ENQUEUED_BATCHES} }}",
             f"num_batch_threads {{ value: {NUM_BATCH_THREADS} }}"]
    if fixed_length:
        sizes, size = [], 1
        while size < MAX_BATCH_SIZE:
            sizes.append(size)
            size *= 2
        lines += [f"allowed_batch_sizes: {size}" for size in (*sizes, MAX_BATCH_SIZE)]
    lines.append("pad_variable_length_inputs: false")
    return "\n".join(lines) + "\n"


def write_serving_config(version_dir, fixed_length=False, quantize=None, kernel_shapes=()):
    """Writes `batching_parameters(fixed_length)` and `model_server_flags(quantize, kernel_shapes)` to
    `<version_dir>/assets.extra/`; returns their paths."""
    paths = []
    for name, text in ((BATCHING_FILE, batching_parameters(fixed_length)),
                       (SERVER_FLAGS_FILE, model_server_flags(quantize, kernel_shapes))):
        paths.append(os.path.join(version_dir, name))
        os.makedirs(os.path.dirname(paths[-1]), exist_ok=True)
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.write(text)
    return paths


def one_thread_rows(k, n):
    """Up to how many rows TF runs an int8 matmul with a [k, n] kernel on one thread, on an L2_BYTES L2."""
    return (L2_BYTES - k * n) // (k + n)


def server_threads(quantize=None, kernel_shapes=()):
    """(intra-op, inter-op) threads of tensorflow_model_server for an export of the resolved int8 form
    `quantize` (None, "int8_weights" or "int8_matmul"; `serving_form.resolve_quantize`) whose Dense kernels
    have `kernel_shapes` ([k, n] each), as its `--tensorflow_intra_op_parallelism` and
    `--tensorflow_inter_op_parallelism` (0: TF's default, every core). One intra-op thread for int8_matmul
    when every kernel runs on one thread up to ONE_THREAD_ROWS rows (MiniLM-L6's largest, [384, 1536]: 238
    rows); a kernel past that (BERT-base's [768, 3072] never does) would lose the second thread."""
    small = bool(kernel_shapes) and all(one_thread_rows(k, n) >= ONE_THREAD_ROWS for k, n in kernel_shapes)
    return (1, 0) if quantize == "int8_matmul" and small else (0, 0)


def model_server_flags(quantize=None, kernel_shapes=()):
    """The text of the export's model_server_flags.txt: `server_threads(quantize, kernel_shapes)` as the
    server's flags."""
    intra, inter = server_threads(quantize, kernel_shapes)
    form = quantize or "float"
    why = ("one intra-op thread: TF runs its int8 matmuls on one thread anyway and the small ops then run "
           "inline" if intra else "TF's default pools")
    return (f"# tensorflow_model_server thread flags for this export ({form} Dense layers; {why}; "
            "keras_bert/export/batching.py)\n"
            f"--tensorflow_intra_op_parallelism={intra}\n--tensorflow_inter_op_parallelism={inter}\n")
