"""The few TensorFlow protos the check reads (OpList, SavedModel, MetaGraphDef, TensorProto), decoded from
their wire format here: the wheel's generated `*_pb2` modules cannot be imported without running
tensorflow/__init__.py, i.e. TensorFlow's Python package. Field numbers as in tensorflow/core/framework and
tensorflow/core/protobuf (op_def, graph, function, node_def, meta_graph, saved_model, tensor .proto).
"""

import importlib.util

import numpy as np

from .errors import ServabilityError

# TF_DataType codes (tensorflow/c/tf_datatype.h, the same numbers as DataType in types.proto) <-> numpy.
TF_FLOAT, TF_INT32, TF_STRING, TF_INT64, TF_BOOL = 1, 3, 7, 9, 10
NUMPY_OF_TF = {TF_FLOAT: np.float32, TF_INT32: np.int32, TF_INT64: np.int64, TF_BOOL: np.bool_,
               2: np.float64, 19: np.float16, 4: np.uint8}
TF_OF_NUMPY = {np.dtype(v): k for k, v in NUMPY_OF_TF.items()}


def tensorflow_dir():
    """The directory of the installed `tensorflow` wheel (str); `ServabilityError` if none is installed."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise ServabilityError("the tensorflow wheel is not installed in this Python environment")
    return list(spec.submodule_search_locations)[0]


def _varint(data, at):
    """(value, position after it) of the varint at `data[at]`."""
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise ServabilityError("protobuf message ends inside a varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _signed(value):
    """A varint read as int64 (negative values are written as 10-byte two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fields(message):
    """[(field number, value)] of the protobuf bytes `message`, in order: an int for a varint, bytes for a
    length-delimited field (string, bytes, message, packed repeated); fixed-width fields are skipped."""
    found, at = [], 0
    while at < len(message):
        tag, at = _varint(message, at)
        wire = tag & 7
        if wire == 0:
            value, at = _varint(message, at)
            found.append((tag >> 3, value))
        elif wire == 2:
            length, at = _varint(message, at)
            found.append((tag >> 3, message[at:at + length]))
            at += length
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ServabilityError(f"protobuf wire type {wire} is not one a TensorFlow proto uses")
    return found


def repeated(message, number):
    """Every value of field `number` of `message`."""
    return [value for n, value in fields(message) if n == number]


def first(message, number, default=b""):
    """The first value of field `number` of `message`, else `default`."""
    return next((value for n, value in fields(message) if n == number), default)


def _string_map(message, number):
    """{key: value bytes} of the map<string, message> field `number` (entries: key = 1, value = 2)."""
    return {first(entry, 1).decode(): first(entry, 2) for entry in repeated(message, number)}


def op_names(op_list):
    """The op names of an OpList (op = 1, OpDef.name = 1)."""
    return {first(op, 1).decode() for op in repeated(op_list, 1)}


def meta_graphs(saved_model):
    """[(tags, MetaGraphDef bytes)] of a SavedModel (meta_graphs = 2; meta_info_def = 1, its tags = 4)."""
    return [({t.decode() for t in repeated(first(meta, 1), 4)}, meta) for meta in repeated(saved_model, 2)]


def graph_ops(meta_graph):
    """The op names of a MetaGraphDef's graph (graph_def = 2, node = 1, NodeDef.op = 2) and of every
    function of its library (library = 2, function = 1, node_def = 3), less the calls of those functions
    (ops named after a function, signature = 1, OpDef.name = 1: not kernels)."""
    graph = first(meta_graph, 2)
    ops = {first(node, 2).decode() for node in repeated(graph, 1)}
    functions = repeated(first(graph, 2), 1)
    for function in functions:
        ops.update(first(node, 2).decode() for node in repeated(function, 3))
    return ops - {first(first(function, 1), 1).decode() for function in functions}


def signatures(meta_graph):
    """{signature name: {"inputs": {key: tensor name}, "outputs": {...}}} of a MetaGraphDef
    (signature_def = 5; SignatureDef inputs = 1, outputs = 2; TensorInfo.name = 1)."""
    return {name: {"inputs": {k: first(v, 1).decode() for k, v in _string_map(sig, 1).items()},
                   "outputs": {k: first(v, 1).decode() for k, v in _string_map(sig, 2).items()}}
            for name, sig in _string_map(meta_graph, 5).items()}


def _ints(message, number):
    """The repeated integer field `number`, packed (bytes) or not."""
    values = []
    for value in repeated(message, number):
        if isinstance(value, int):
            values.append(_signed(value))
            continue
        at = 0
        while at < len(value):
            item, at = _varint(value, at)
            values.append(_signed(item))
    return values


def tensor_to_numpy(tensor):
    """A TensorProto (dtype = 1, tensor_shape = 2 with dim = 2 of size = 1, tensor_content = 4,
    int_val = 7, string_val = 8) as a numpy array: strings as an object array of bytes."""
    dtype = first(tensor, 1, 0)
    shape = [_signed(first(dim, 1, 0)) for dim in repeated(first(tensor, 2), 2)]
    content = first(tensor, 4)
    if dtype == TF_STRING:
        return np.array(repeated(tensor, 8) + [None], dtype=object)[:-1].reshape(shape)
    if dtype in NUMPY_OF_TF and content:
        return np.frombuffer(content, dtype=NUMPY_OF_TF[dtype]).reshape(shape)
    if dtype == TF_INT32:
        return np.array(_ints(tensor, 7), dtype=np.int32).reshape(shape)
    raise ServabilityError(f"tensor of TF dtype code {dtype} is not supported by this check")
