"""`batching_parameters.txt`: TF Serving's batching configuration, written with every export.

`export_saved_model` writes `<version>/assets.extra/batching_parameters.txt`, a text-format
`tensorflow.serving.BatchingParameters` (session_bundle_config.proto) for

    tensorflow_model_server --enable_batching --batching_parameters_file=<base>/<version>/assets.extra/...

The server reads the file from any path given on its command line; beside the version it travels with the
model it was chosen for. The values (BUILD.md, "Batching requests"; measured in benchmarks/README.md,
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
"""

import os

BATCHING_FILE = os.path.join("assets.extra", "batching_parameters.txt")
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


def write_batching_parameters(version_dir, fixed_length=False):
    """Writes `batching_parameters(fixed_length)` to `<version_dir>/assets.extra/batching_parameters.txt`;
    returns its path."""
    path = os.path.join(version_dir, BATCHING_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(batching_parameters(fixed_length))
    return path
