"""The predict requests of an export's `assets.extra/tf_serving_warmup_requests`, read without TF Python."""

import os
import struct

import numpy as np

from .errors import ServabilityError
from .protos import NUMPY_OF_TF, TF_INT32, TF_STRING, protos


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
    """The predict requests of `assets.extra/tf_serving_warmup_requests` as (signature, {key: array}), or
    None without `tensorflow-serving-api` (needed to parse PredictionLog)."""
    path = os.path.join(export_dir, "assets.extra", "tf_serving_warmup_requests")
    if not os.path.exists(path):
        return []
    protos()  # tensorflow_serving's *_pb2 import tensorflow.core protos: through the stub, not TF Python
    try:
        from tensorflow_serving.apis import prediction_log_pb2
    except ImportError:
        return None
    requests = []
    for record in _read_tfrecords(path):
        log = prediction_log_pb2.PredictionLog()
        log.ParseFromString(record)
        request = log.predict_log.request
        inputs = {key: _tensor_proto_to_numpy(proto) for key, proto in request.inputs.items()}
        requests.append((request.model_spec.signature_name or "serving_default", inputs))
    return requests


def _tensor_proto_to_numpy(proto):
    shape = [d.size for d in proto.tensor_shape.dim]
    if proto.dtype == TF_STRING:
        return np.array(list(proto.string_val), dtype=object).reshape(shape)
    if proto.dtype in NUMPY_OF_TF and proto.tensor_content:
        return np.frombuffer(proto.tensor_content, dtype=NUMPY_OF_TF[proto.dtype]).reshape(shape)
    if proto.dtype == TF_INT32:
        return np.array(proto.int_val, dtype=np.int32).reshape(shape)
    raise ServabilityError(f"warmup tensor of TF dtype code {proto.dtype} is not supported by this check")
