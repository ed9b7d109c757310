"""Would the stock TF Serving model server load and run this SavedModel? Checked the way the server does it,
in a fresh process, and its served answers checked here.

The check itself is the top-level package `keras_bert_servability` (the C API through ctypes, no keras,
no keras_bert, no TensorFlow Python), run by `check_servable_subprocess` as `python -m
keras_bert_servability`; this package adds what needs keras_bert: each task folder's check of its served
answers (`answers.py`, the folders' `served.py` listed in `keras_bert.tasks.registry`).

    answers.py  the served answers' consistency (entity spans, probabilities)
    worker.py   `check_servable_subprocess`: the check in a fresh process, then the answers here
"""

from keras_bert.export.servability.answers import check_answers
from keras_bert.export.servability.worker import check_servable_subprocess
from keras_bert_servability import (
    DEFAULT_SERVING_VERSION,
    SERVING_TF_TEXT_VERSION,
    TF_TEXT_OP_FIRST_SERVING,
    ServabilityError,
    json_outputs,
    load_check_arrays,
    op_report,
    save_check_arrays,
    saved_model_ops,
    warmup_requests,
)

__all__ = [
    "DEFAULT_SERVING_VERSION",
    "SERVING_TF_TEXT_VERSION",
    "TF_TEXT_OP_FIRST_SERVING",
    "ServabilityError",
    "check_answers",
    "check_servable_subprocess",
    "json_outputs",
    "load_check_arrays",
    "op_report",
    "save_check_arrays",
    "saved_model_ops",
    "warmup_requests",
]
