"""Would the stock TF Serving model server load and run this SavedModel? Checked the way the server does it.

This package imports neither keras nor keras_bert nor TensorFlow's Python package: it talks to the C API of
the installed wheel (`libtensorflow_cc.so.2`) through ctypes, registers the tensorflow-text kernels with
`TF_LoadLibrary` (as the model server links them in), loads the export with the session-based
`TF_LoadSessionFromSavedModel` (the loader TF Serving uses, which fails on some Keras 3 exports that Python's
`tf.saved_model.load` accepts: "Could not find variable ..."), runs a signature on the given inputs, and lists
every op of the graph and its function library that TensorFlow core lacks, against the tensorflow-text ops
each TF Serving release links.

Run it in a fresh process (`export/check_servable.py`, or `check_servable_subprocess()` from the library):
for the proto definitions it installs a bare `tensorflow` package stub (`protos.py`), which would shadow a
later real `import tensorflow` in the same process. Its modules import each other relatively only, so the
package also loads as the top-level `servability` without `keras_bert/__init__.py` (see `worker.py`).

    errors.py   ServabilityError
    protos.py   the wheel's *_pb2 modules and DataType codes, without TF Python
    c_api.py    the C API through ctypes: load a SavedModel as Serving does, run a signature
    ops.py      the ops a SavedModel uses; which Serving release registers each tf-text op
    warmup.py   the export's warmup requests
    codec.py    the .npz of a check's inputs and expected outputs
    check.py    one export checked end to end; several in one process
    worker.py   the same in a fresh process (`__main__.py` is the worker's side)
"""

from .c_api import CApiSavedModel, TensorFlowCApi, tf_text_kernel_libraries
from .check import check, json_outputs, run_checks
from .codec import load_check_arrays, save_check_arrays
from .errors import ServabilityError
from .ops import (
    DEFAULT_SERVING_VERSION,
    SERVING_TF_TEXT_VERSION,
    TF_TEXT_OP_FIRST_SERVING,
    op_report,
    saved_model_ops,
)
from .warmup import warmup_requests
from .worker import check_servable_subprocess

__all__ = [
    "DEFAULT_SERVING_VERSION",
    "SERVING_TF_TEXT_VERSION",
    "TF_TEXT_OP_FIRST_SERVING",
    "CApiSavedModel",
    "ServabilityError",
    "TensorFlowCApi",
    "check",
    "check_servable_subprocess",
    "json_outputs",
    "load_check_arrays",
    "op_report",
    "run_checks",
    "save_check_arrays",
    "saved_model_ops",
    "tf_text_kernel_libraries",
    "warmup_requests",
]
