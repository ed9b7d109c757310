"""The .npz that carries a check's inputs and expected outputs between processes, strings byte-exact."""

import numpy as np


def load_check_arrays(path):
    """(inputs, expected) from an .npz written by `save_check_arrays`."""
    groups = {"input": {}, "expected": {}}
    with np.load(path, allow_pickle=False) as data:
        for name in data.files:
            group, key = name.split("/", 1)
            if key.endswith(":lengths"):
                continue
            if key.endswith(":bytes"):
                key = key[: -len(":bytes")]
                lengths = data[f"{group}/{key}:lengths"]
                raw, ends = data[name].tobytes(), np.cumsum(lengths.reshape(-1))
                values = [raw[end - n:end] for n, end in zip(lengths.reshape(-1), ends, strict=True)]
                groups[group][key] = np.array(values + [None], dtype=object)[:-1].reshape(lengths.shape)
            else:
                groups[group][key] = data[name]
    return groups["input"], groups["expected"] or None


def save_check_arrays(path, inputs, expected):
    """Writes the inputs and expected outputs of a check to `path` (.npz). String arrays (bytes/object)
    are stored as their concatenated bytes plus lengths: numpy's fixed-width bytes would drop trailing
    NULs, which serialized protos can end with."""
    arrays = {}
    for group, values in (("input", inputs), ("expected", expected or {})):
        for key, value in values.items():
            value = np.asarray(value)
            if value.dtype.kind in "OSU":
                flat = [v if isinstance(v, bytes) else str(v).encode() for v in value.reshape(-1)]
                arrays[f"{group}/{key}:bytes"] = np.frombuffer(b"".join(flat), np.uint8)
                arrays[f"{group}/{key}:lengths"] = np.array([len(v) for v in flat],
                                                            np.int64).reshape(value.shape)
            else:
                arrays[f"{group}/{key}"] = value
    np.savez(path, **arrays)


def json_outputs(outputs):
    """{name: numpy array} -> {name: nested lists} for JSON: string tensors as str (UTF-8, an invalid byte
    as U+FFFD, as TF Serving's REST API writes them), numbers as numbers."""
    def value(array):
        if array.dtype == object:
            return np.vectorize(lambda b: b.decode("utf-8", "replace"), otypes=[object])(array).tolist()
        return array.tolist()
    return {name: value(array) for name, array in outputs.items()}
