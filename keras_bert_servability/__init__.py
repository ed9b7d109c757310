"""Would the stock TF Serving model server load and run this SavedModel? Checked the way the server does it.

This package imports neither keras nor keras_bert nor TensorFlow's Python package (numpy and the standard
library only): it talks to the C API of the installed wheel (`libtensorflow_cc.so.2`) through ctypes,
registers the tensorflow-text kernels with `TF_LoadLibrary` (as the model server links them in), loads the
export with the session-based `TF_LoadSessionFromSavedModel` (the loader TF Serving uses, which fails on some
Keras 3 exports that Python's `tf.saved_model.load` accepts: "Could not find variable ..."), runs a signature
on the given inputs, and lists every op of the graph and its function library that TensorFlow core lacks,
against the tensorflow-text ops each TF Serving release links.

It is a top-level package, beside keras_bert, so that its process (`python -m keras_bert_servability`)
imports it by name without running keras_bert/__init__.py: a process that imported tensorflow_text has the
tf-text ops registered already, which would count them as TF core. The library's side, which checks the
served answers with each task folder's `served.py`, is `keras_bert.export.servability`.

    errors.py   ServabilityError
    protos.py   the protos the check reads, decoded from their wire format; DataType codes
    c_api.py    the C API through ctypes: load a SavedModel as Serving does, run a signature
    ops.py      the ops a SavedModel uses; which Serving release registers each tf-text op
    warmup.py   the export's warmup requests
    codec.py    the .npz of a check's inputs and expected outputs
    check.py    one export checked end to end; several in one process
    __main__.py the checking process
"""

from .c_api import CApiSavedModel, TensorFlowCApi, tf_text_kernel_libraries
from .check import check, run_checks
from .codec import json_outputs, load_check_arrays, save_check_arrays
from .errors import ServabilityError
from .ops import (
    DEFAULT_SERVING_VERSION,
    SERVING_TF_TEXT_VERSION,
    TF_TEXT_OP_FIRST_SERVING,
    op_report,
    saved_model_ops,
)
from .warmup import warmup_requests

__all__ = [
    "DEFAULT_SERVING_VERSION",
    "SERVING_TF_TEXT_VERSION",
    "TF_TEXT_OP_FIRST_SERVING",
    "CApiSavedModel",
    "ServabilityError",
    "TensorFlowCApi",
    "check",
    "json_outputs",
    "load_check_arrays",
    "op_report",
    "run_checks",
    "save_check_arrays",
    "saved_model_ops",
    "tf_text_kernel_libraries",
    "warmup_requests",
]
