"""The predict requests of an export's `assets.extra/tf_serving_warmup_requests`, read without TF Python."""

import os
import struct

from .errors import ServabilityError
from .protos import first, repeated, tensor_to_numpy


def _read_tfrecords(path):
    """Record payloads of a TFRecord file (length, length-crc, data, data-crc), CRCs not verified."""
    records = []
    with open(path, "rb") as f:
        while header := f.read(12):
            if len(header) < 12:
                raise ServabilityError(f"{path}: truncated TFRecord header")
            (length,) = struct.unpack("<Q", header[:8])
            data = f.read(length)
            if len(data) != length or len(f.read(4)) != 4:
                raise ServabilityError(f"{path}: truncated TFRecord of {length} bytes")
            records.append(data)
    return records


def warmup_requests(export_dir):
    """The predict requests of `assets.extra/tf_serving_warmup_requests` as (signature, {key: array}),
    decoded here (PredictionLog.predict_log = 6 -> request = 1 -> model_spec = 1 (signature_name = 3) and
    inputs = 2 (key 1, TensorProto 2): the fields `saved_model.prediction_log` writes), so the check needs no
    `tensorflow-serving-api`."""
    path = os.path.join(export_dir, "assets.extra", "tf_serving_warmup_requests")
    if not os.path.exists(path):
        return []
    requests = []
    for record in _read_tfrecords(path):
        logs = repeated(record, 6)
        request = repeated(logs[0], 1) if logs else []
        if not request:
            raise ServabilityError(f"{path}: a warmup record that is no predict request")
        signature = first(first(request[0], 1), 3).decode() or "serving_default"
        inputs = {first(entry, 1).decode(): tensor_to_numpy(first(entry, 2))
                  for entry in repeated(request[0], 2)}
        requests.append((signature, inputs))
    return requests
