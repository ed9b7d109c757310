"""The teacher's outputs computed once and cached to a TFRecord: `TaskDistiller` epochs that do not run it.

    rows = distillation_dataset(teacher, texts, labels, unlabeled=more, shuffle=False)
    data = teacher_cache(distiller, rows, "runs/student/teacher_cache.tfrecord", batch_size=32, seed=1,
                         fingerprint={"teacher": file_fingerprint(["teacher.keras"])})
    distiller.fit(data, epochs=3)          # the step reads the cached outputs: the teacher is not called

The file: a header record (JSON: the fingerprint, each stored tensor's key, dtype and row shape), then one
record a row: its inputs, targets, sample weight, the teacher's outputs (float32) and, when the distiller has
a hidden-state term, the outputs of the teacher layers its student layers stand for. Rows are shuffled whole
(a row's inputs and its teacher outputs are one record), then batched. `write_cache` writes through
`keras_bert.outputs.writing_file` (atomic: a killed run leaves no file); `teacher_cache` reuses a file of
the same fingerprint and writes again one that is missing or was written for another (logged).
"""

import json
import logging
import os

import tensorflow as tf

from keras_bert import outputs
from keras_bert.distillation.distiller import CACHED_HIDDEN, CACHED_OUTPUTS
from keras_bert.training.callbacks import file_fingerprint  # noqa: F401  (its home: a run's identity too)

logger = logging.getLogger("keras_bert")
FORMAT = 1
SHUFFLE_BUFFER = 16384  # rows


def full_fingerprint(distiller, fingerprint=None):
    """The caller's `fingerprint` (the teacher's and the data's files) plus what the cached tensors depend on:
    the teacher's class and sequence length, and the teacher layers cached."""
    preprocessor = getattr(distiller.teacher, "preprocessor", None)
    return json.loads(json.dumps({
        **(fingerprint or {}), "format": FORMAT, "teacher_class": type(distiller.teacher).__name__,
        "seq_length": getattr(preprocessor, "seq_length", None),
        "hidden_layers": distiller.layer_map if distiller.hidden_weight else []}))


def _flatten(prefix, value, flat):
    for key, item in (value.items() if isinstance(value, dict) else [(None, value)]):
        flat[prefix if key is None else f"{prefix}/{key}"] = item


def _nested(flat, prefix):
    if prefix in flat:
        return flat[prefix]
    return {key[len(prefix) + 1:]: value for key, value in flat.items() if key.startswith(prefix + "/")}


def write_cache(distiller, rows, path, fingerprint=None, overwrite=False):
    """Runs `distiller`'s teacher once over `rows` (batches of (inputs, targets, sample_weight)) and writes
    `path`: the header, then one record a row. Returns `path`."""
    run = tf.function(distiller.teacher_features, reduce_retracing=True)
    keys = header = None
    with outputs.writing_file(path, overwrite=overwrite) as tmp, tf.io.TFRecordWriter(tmp) as writer:
        for inputs, targets, sample_weight in rows:
            teacher = run(inputs)
            flat = {}
            for prefix, value in (("x", inputs), ("y", targets), ("w", sample_weight),
                                  ("t", teacher["outputs"]), ("h", teacher["hidden"])):
                _flatten(prefix, value, flat)
            shapes = {key: value.shape[1:].as_list() for key, value in flat.items()}
            if header is None:
                keys = sorted(flat)
                header = {"fingerprint": full_fingerprint(distiller, fingerprint),
                          "keys": [[key, flat[key].dtype.name, shapes[key]] for key in keys]}
                writer.write(json.dumps(header).encode("utf-8"))
            elif [shapes[key] for key in keys] != [shape for _, _, shape in header["keys"]]:
                raise ValueError(f"{path}: batches of another row shape ({shapes}) than the first "
                                 f"({header['keys']}); the teacher cache takes rows of one sequence length")
            serialized = tf.data.Dataset.from_tensor_slices(tuple(flat[key] for key in keys)).map(
                lambda *row: tf.io.serialize_tensor(tf.stack([tf.io.serialize_tensor(t) for t in row])))
            for record in serialized:
                writer.write(record.numpy())
        if header is None:
            raise ValueError(f"{path}: no rows to run the teacher on")
    return path


def read_header(path):
    """The header of cache `path` (None when there is none, or it is not one)."""
    if not os.path.isfile(path):
        return None
    try:
        record = next(iter(tf.data.TFRecordDataset(path).take(1)))
        header = json.loads(record.numpy().decode("utf-8"))
    except (StopIteration, ValueError, UnicodeDecodeError, tf.errors.OpError):
        return None
    return header if isinstance(header, dict) and "fingerprint" in header else None


def cached_dataset(path, batch_size=32, shuffle=True, seed=None, shuffle_buffer=SHUFFLE_BUFFER):
    """Batches of (inputs with the teacher's cached outputs, targets, sample_weight) read from cache `path`
    (rows shuffled whole each pass when `shuffle`), for `TaskDistiller.fit`."""
    header = read_header(path)
    if header is None:
        raise ValueError(f"{path}: not a teacher cache (no header record)")
    specs = header["keys"]

    def parse(record):
        tensors = tf.io.parse_tensor(record, tf.string)
        flat = {key: tf.ensure_shape(tf.io.parse_tensor(tensors[i], tf.as_dtype(dtype)), shape)
                for i, (key, dtype, shape) in enumerate(specs)}
        inputs = dict(_nested(flat, "x"))
        inputs[CACHED_OUTPUTS] = _nested(flat, "t")
        hidden = _nested(flat, "h")
        if hidden:
            inputs[CACHED_HIDDEN] = hidden
        return inputs, _nested(flat, "y"), _nested(flat, "w")

    records = tf.data.TFRecordDataset(path).skip(1)
    if shuffle:
        records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    rows = records.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return rows.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def teacher_cache(distiller, rows, path, fingerprint=None, batch_size=32, shuffle=True, seed=None,
                  shuffle_buffer=SHUFFLE_BUFFER):
    """`cached_dataset` of `path`, written first (`write_cache` over `rows`) when it is missing or its
    fingerprint (`full_fingerprint` of `fingerprint`) is not this run's; a reused or rewritten cache is
    logged."""
    expected = full_fingerprint(distiller, fingerprint)
    header = read_header(path)
    if header is not None and header["fingerprint"] == expected:
        logger.info("Reusing the teacher outputs cached in %s", path)
    else:
        if header is not None:
            stored = header["fingerprint"]
            differ = sorted(k for k in set(stored) | set(expected) if stored.get(k) != expected.get(k))
            logger.warning("%s was cached for another teacher or other data (%s differ): computing it again",
                           path, ", ".join(differ))
        elif os.path.exists(path):
            logger.warning("%s is not a teacher cache: computing it again", path)
        else:
            logger.info("Computing the teacher outputs once into %s", path)
        write_cache(distiller, rows, path, fingerprint, overwrite=os.path.exists(path))
    return cached_dataset(path, batch_size, shuffle, seed, shuffle_buffer)
