"""The installed TensorFlow wheel's proto definitions and DataType codes, without its Python package.

`protos()` installs a bare `tensorflow` package stub whose submodules are the wheel's generated `*_pb2`
files; it would shadow a later real `import tensorflow`, hence the check runs in a fresh process.
"""

import importlib.util
import sys
import types

import numpy as np

from .errors import ServabilityError

# TF_DataType codes (tensorflow/c/tf_datatype.h) <-> numpy.
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


def protos():
    """The wheel's generated proto modules as a namespace (`op_def`, `meta_graph`, `saved_model`), without
    running tensorflow/__init__.py (see the module doc)."""
    if "tensorflow" not in sys.modules:
        stub = types.ModuleType("tensorflow")
        stub.__path__ = [tensorflow_dir()]
        sys.modules["tensorflow"] = stub
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

    return types.SimpleNamespace(op_def=op_def_pb2, meta_graph=meta_graph_pb2, saved_model=saved_model_pb2)
