"""Export for TF Serving (raw-text SavedModels, the TF Hub layout, the C-API servability check) and for
LiteRT (one raw-text .tflite).

`servability` (the C-API check, run in a fresh process by the top-level package keras_bert_servability)
is imported where it is used.
"""

from keras_bert.export.litert import export_litert, load_litert
from keras_bert.export.saved_model import ExportError, build_archive, export_saved_model, serving_outputs
from keras_bert.export.tfhub import export_tfhub

__all__ = ["ExportError", "build_archive", "export_litert", "export_saved_model", "export_tfhub",
           "load_litert", "serving_outputs"]
