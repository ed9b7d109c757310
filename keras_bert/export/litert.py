"""Export to LiteRT (TensorFlow Lite): one `.tflite` that takes raw text and returns `serve()`'s answers.

    export_litert(model, "model.tflite")                  # float32
    export_litert(model, "model_int8.tflite", quantize="int8")
    runner = load_litert("model.tflite")
    runner(text=np.array(["a great movie"], dtype=object))  # {"label": ..., "probabilities": ...}

The file holds one signature, `serving_default`, with the inputs of the model's raw-text form (`text`,
`text_b`) and the outputs of `model.serve()`; a model whose answers need ops LiteRT lacks (a token
classifier's entities, a span labeler's answer text: docs/litert.md) is refused. Its graph is the serve
function traced as one flat graph (`keras_bert.models.buckets.one_graph`: the model inline, the whole batch
padded to its longest row) with the tokenizer of `keras_bert.export.litert_text` (tf-text's fast ops) and
GELU as LiteRT's builtin (`keras_bert.layers.transformer.litert_gelu`). The tf-text ops are custom ops: an
app links tf-text's LiteRT kernels (`tensorflow_text.tflite_registrar`; BUILD.md, "LiteRT"), as
`load_litert` registers them.
"""

import os

import numpy as np
import tensorflow as tf

from keras_bert import compat, outputs
from keras_bert.export.errors import ExportError
from keras_bert.export.litert_text import fast_ops_preprocessor
from keras_bert.export.preprocessing import serving_preprocessor
from keras_bert.export.serving_form import serving_form
from keras_bert.layers.transformer import litert_gelu
from keras_bert.models.buckets import one_graph
from keras_bert.models.serving import traced_function

SIGNATURE = "serving_default"
QUANTIZE = ("int8", "float16")


def litert_model(model, preprocessor=None, quantize=None, signature=None, options=None):
    """The `.tflite` bytes of `model` (a keras_bert model with a preprocessor), as `export_litert` writes;
    the arguments are `export_litert`'s."""
    if quantize not in (None, *QUANTIZE):
        raise ExportError(f"quantize={quantize!r}; expected None, {' or '.join(map(repr, QUANTIZE))}")
    preprocessor = serving_preprocessor(model, preprocessor)
    if preprocessor is None:
        raise ExportError(f"a {type(model).__name__} without a preprocessor cannot take raw text; a LiteRT "
                          "export needs one (BertPreprocessor)")
    model = serving_form(model, None, "float32")  # float weights of a LoRA or quantized model
    fast = fast_ops_preprocessor(preprocessor)
    try:
        endpoint = next(iter(model.serving_endpoints(fast, signature, options or {}).values()))
        with one_graph(), litert_gelu():  # a graph of its own: not the cached trace serve() and exports run
            function = traced_function(endpoint.function, endpoint.input_spec)
    except ValueError as e:
        raise ExportError(f"a {type(model).__name__} cannot be exported to LiteRT: {e}") from None
    converter = tf.lite.TFLiteConverter.from_concrete_functions(*_named_constant_function(function))
    converter.allow_custom_ops = True  # tf-text's tokenizer ops, which LiteRT runs with their registrar
    if quantize is not None:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]  # int8 weights, dynamic-range matmuls
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    try:
        flatbuffer = converter.convert()
    except Exception as e:  # the converter raises its own error types, with the MLIR diagnostics
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(f"a {type(model).__name__} cannot be exported to LiteRT: {first}") from None
    unsupported = _unresolved_ops(flatbuffer)
    if unsupported:
        raise ExportError(f"a {type(model).__name__} cannot be exported to LiteRT: its serve() needs "
                          f"{', '.join(unsupported)}, which LiteRT has no kernel for")
    return flatbuffer


def export_litert(model, path, quantize=None, preprocessor=None, signature=None, overwrite=False,
                  **options):
    """Writes `model` as one LiteRT `.tflite` at `path` (atomically) and returns `path`.

    Args:
        model: a BertEncoder or keras_bert task model with a preprocessor (its own, or `preprocessor`).
        path: the `.tflite` file to write (atomically); an existing one only with `overwrite`.
        quantize: None (float32), "int8" (int8 weights, matmuls on int8 with per-request activation ranges:
            LiteRT's dynamic-range quantization) or "float16" (float16 weights, computed in float32).
        preprocessor: a `keras_bert.text.BertPreprocessor` overriding the model's (same vocab and casing).
        signature: the raw-text form served, one of the model's `serving_forms` (default: its first).
        overwrite: replace an existing file at `path`.
        **options: the model's serving options, as `serve()` takes them (e.g. pooling="mean").

    The signature `serving_default` takes the model's raw-text inputs (tf.string [batch] each) and returns
    `model.serve()`'s outputs by name. Raises ExportError naming what LiteRT cannot run (a task whose
    answers need ops it has no kernel for, a tokenizer its fast ops cannot follow).
    """
    flatbuffer = litert_model(model, preprocessor, quantize, signature, options)
    with outputs.writing_file(path, overwrite=overwrite, label=f"the LiteRT model {path}") as tmp:
        with open(tmp, "wb") as f:
            f.write(flatbuffer)
    return os.fspath(path)


def _named_constant_function(function):
    """([concrete function], holder) for the converter: `function` (a tf.function over one dict of inputs)
    with its variables as constants, so LiteRT gets constant weights (its fully-connected kernels) rather
    than resource variables, under its input and output names. The converter names the signature
    serving_default (after writing a SavedModel of it) only when it is given an object to save."""
    concrete = function.get_concrete_function()
    spec, = concrete.structured_input_signature[0]
    names, frozen = sorted(concrete.structured_outputs), compat.frozen_function(concrete)

    def named(inputs):
        return dict(zip(names, frozen(*tf.nest.flatten(inputs)), strict=True))

    named = tf.function(named, input_signature=[spec], autograph=False).get_concrete_function()
    return [named], compat.saved_model_root()


def _interpreter(**model):
    """LiteRT's interpreter of `model` (model_path= or model_content=) with tf-text's ops registered."""
    import tensorflow_text as tf_text
    from ai_edge_litert import interpreter

    return interpreter.InterpreterWithCustomOps(
        custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS, **model)


def _unresolved_ops(flatbuffer):
    """Custom ops of a `.tflite` that tf-text's registrar has no kernel for (LiteRT's builtins are named in
    capitals; tf-text registers FastWordpieceTokenize for its WithOffsets form too)."""
    import tensorflow_text as tf_text

    registered = tuple(add.__name__.removeprefix("Add") for add in tf_text.tflite_registrar.SELECT_TFTEXT_OPS)
    # ai_edge_litert 2.3: the op list is the interpreter's only (underscored) reader of a model's ops.
    ops = {op["op_name"] for op in _interpreter(model_content=flatbuffer)._get_ops_details()}
    return sorted(op for op in ops if not op.isupper() and not op.startswith(registered))


class LiteRTRunner:
    """A `.tflite` of `export_litert` on LiteRT's own runtime (`ai_edge_litert`), tf-text's ops registered.

    Call: `runner(text=np.array([...], dtype=object), ...)`, one array per signature input (str or bytes,
    [batch]; lists work too) -> {name: numpy array}, `serve()`'s outputs. `runner.inputs`: the input names.
    """

    def __init__(self, path, num_threads=None):
        self.path = os.fspath(path)
        self._interpreter = _interpreter(model_path=self.path, num_threads=num_threads)
        signatures = self._interpreter.get_signature_list()
        if SIGNATURE not in signatures:
            raise ValueError(f"{self.path}: no {SIGNATURE} signature (it has {sorted(signatures)}); "
                             "expected a .tflite written by keras_bert.export.export_litert")
        self._runner = self._interpreter.get_signature_runner(SIGNATURE)
        self.inputs = tuple(signatures[SIGNATURE]["inputs"])

    def __call__(self, **inputs):
        if set(inputs) != set(self.inputs):
            raise ValueError(f"{self.path} takes {', '.join(self.inputs)} (arrays of strings [batch]); got "
                             f"{', '.join(sorted(inputs)) or 'nothing'}")
        arrays = {}
        for name, value in inputs.items():
            value = np.asarray(value, dtype=object)
            if value.ndim < 1 or not all(isinstance(v, (str, bytes)) for v in value.reshape(-1)):
                raise ValueError(f"{self.path}: input `{name}` must be strings of shape [batch]; got "
                                 f"{value.dtype} of shape {list(value.shape)}")
            flat = [v.encode() if isinstance(v, str) else v for v in value.reshape(-1)]
            arrays[name] = np.array(flat + [b""], dtype=object)[:-1].reshape(value.shape)  # [b""]: stays 1-D
        if next(iter(arrays.values())).shape[0] == 0:
            # LiteRT's UNPACK kernel refuses a zero-size tensor: an empty batch runs one empty text, cut to 0.
            one = {name: np.full((1, *value.shape[1:]), b"", dtype=object) for name, value in arrays.items()}
            return {name: value[:0] for name, value in self._runner(**one).items()}
        return self._runner(**arrays)


def load_litert(path, num_threads=None):
    """The runner of a `.tflite` that `export_litert` wrote (`LiteRTRunner`): `runner(text=...)` returns
    `serve()`'s outputs as numpy. `num_threads`: LiteRT's threads (default: its own)."""
    return LiteRTRunner(path, num_threads)
