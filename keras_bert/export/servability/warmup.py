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


def _fields(message):
    """(field number, value) of each field of protobuf bytes `message`: an int (varint) or bytes (length-
    delimited); the wire types a PredictionLog of requests uses (fixed-width ones are skipped)."""
    fields, at = [], 0

    def varint():
        nonlocal at
        value, shift = 0, 0
        while True:
            byte = message[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while at < len(message):
        tag = varint()
        wire = tag & 7
        if wire == 0:
            fields.append((tag >> 3, varint()))
        elif wire == 2:
            length = varint()
            fields.append((tag >> 3, message[at:at + length]))
            at += length
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ServabilityError(f"warmup record: protobuf wire type {wire} is not one a request uses")
    return fields


def warmup_requests(export_dir):
    """The predict requests of `assets.extra/tf_serving_warmup_requests` as (signature, {key: array}),
    decoded here (PredictionLog.predict_log = 6 -> request = 1 -> model_spec = 1 (signature_name = 3) and
    inputs = 2 (key 1, TensorProto 2): the fields `saved_model.prediction_log` writes), so the check needs no
    `tensorflow-serving-api`."""
    path = os.path.join(export_dir, "assets.extra", "tf_serving_warmup_requests")
    if not os.path.exists(path):
        return []
    protos()  # TensorProto is a tensorflow.core proto: through the stub, not TF Python
    from tensorflow.core.framework import tensor_pb2

    requests = []
    for record in _read_tfrecords(path):
        logs = [value for number, value in _fields(record) if number == 6]
        request = [value for number, value in _fields(logs[0]) if number == 1] if logs else []
        if not request:
            raise ServabilityError(f"{path}: a warmup record that is no predict request")
        signature, inputs = "serving_default", {}
        for number, value in _fields(request[0]):
            if number == 1:
                signature = next((v.decode() for n, v in _fields(value) if n == 3), "") or signature
            elif number == 2:
                entry = dict(_fields(value))
                proto = tensor_pb2.TensorProto()
                proto.ParseFromString(entry.get(2, b""))
                inputs[entry.get(1, b"").decode()] = _tensor_proto_to_numpy(proto)
        requests.append((signature, inputs))
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
