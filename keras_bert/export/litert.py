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
`load_litert` registers them. Both need LiteRT's runtime (`ai_edge_litert`, the `litert` extra), checked
before any work; the converter's and XNNPACK's log lines are dropped (`native_logs`; KERAS_BERT_VERBOSE=1
shows them).
"""

import contextlib
import os
import tempfile

import numpy as np
import tensorflow as tf

from keras_bert import compat, native_logs, outputs
from keras_bert.export.errors import ExportError
from keras_bert.export.litert_text import fast_ops_preprocessor
from keras_bert.export.preprocessing import serving_preprocessor
from keras_bert.export.saved_model import check_compatible
from keras_bert.export.serving_form import serving_form
from keras_bert.layers.transformer import litert_gelu
from keras_bert.models.buckets import one_graph
from keras_bert.models.served_inputs import served_arrays
from keras_bert.models.serving import text_spec, traced_function

SIGNATURE = "serving_default"
QUANTIZE = ("int8", "float16")
EXPECTED = "a .tflite written by keras_bert.export.export_litert"


class MissingRuntimeError(ExportError, ImportError):
    """LiteRT's runtime (`ai_edge_litert`) is not installed; the message names the extra to install."""


def require_runtime():
    """LiteRT's interpreter module (`ai_edge_litert.interpreter`), which `export_litert` (to check the ops it
    wrote) and `load_litert` run; MissingRuntimeError naming what to install where it is missing."""
    try:
        from ai_edge_litert import interpreter
    except ImportError:
        raise MissingRuntimeError("LiteRT's runtime (module ai_edge_litert) is not installed: pip install "
                                  "'keras-bert-tf[litert]' (or ai-edge-litert)") from None
    return interpreter


def usable_cores():
    """The number of CPUs this process may run on: its CPU affinity where the OS has one, else every core."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def litert_model(model, preprocessor=None, quantize=None, signature=None, options=None):
    """The `.tflite` bytes of `model` (a keras_bert model with a preprocessor), as `export_litert` writes;
    the arguments are `export_litert`'s."""
    require_runtime()
    if quantize not in (None, *QUANTIZE):
        raise ExportError(f"quantize={quantize!r}; expected None, {' or '.join(map(repr, QUANTIZE))}")
    preprocessor = serving_preprocessor(model, preprocessor)
    if preprocessor is None:
        raise ExportError(f"a {type(model).__name__} without a preprocessor cannot take raw text; a LiteRT "
                          "export needs one (BertPreprocessor)")
    check_compatible(model, preprocessor)  # its vocab size, and a seq_length within the position embeddings
    with native_logs.quiet():  # tf-text's, the converter's and MLIR's C++ lines
        return _converted(model, preprocessor, quantize, signature, options)


def _converted(model, preprocessor, quantize, signature, options):
    """`litert_model` once its arguments are checked."""
    model = serving_form(model, None, "float32")  # float weights of a LoRA or quantized model
    fast = fast_ops_preprocessor(preprocessor)
    try:
        endpoint = next(iter(model.serving_endpoints(fast, signature, options or {}).values()))
        with one_graph(), litert_gelu():  # a graph of its own: not the cached trace serve() and exports run
            function = traced_function(endpoint.function, endpoint.input_spec)
    except ValueError as e:
        raise ExportError(f"a {type(model).__name__} cannot be exported to LiteRT: {e}") from None
    with saved_model_converter(function) as converter:
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
    answers need ops it has no kernel for, a tokenizer its fast ops cannot follow, a seq_length beyond the
    position embeddings) and MissingRuntimeError without LiteRT's runtime, before any conversion work.

    Returns:
        `path` (str), what `load_litert` and LiteRT's `Interpreter` take.

    Raises:
        ExportError: naming what LiteRT cannot run or what does not fit: a model without a preprocessor,
            an unknown `quantize`, a `signature` or option the model does not take, a `preprocessor` of
            another vocab or casing than the model's.
        MissingRuntimeError: (an ExportError and ImportError) LiteRT's runtime `ai_edge_litert` is not
            installed.
        keras_bert.outputs.Taken: (a `UserInputError`) `path` exists and `overwrite` is False.
        UserInputError: `path` is a directory, or is the preprocessor's vocab file.
    """
    vocab_file = getattr(getattr(preprocessor or getattr(model, "preprocessor", None), "tokenizer", None),
                         "vocab_file", None)  # an input the output may not replace (nor a link to it)
    with outputs.writing_file(path, [vocab_file], overwrite, label=f"the LiteRT model {path}") as tmp:
        flatbuffer = litert_model(model, preprocessor, quantize, signature, options)
        with open(tmp, "wb") as f:
            f.write(flatbuffer)
    return os.fspath(path)


@contextlib.contextmanager
def saved_model_converter(function):
    """LiteRT's converter of `function` (a tf.function over one dict of named inputs, returning a dict of
    named outputs), within this context: the function written to a temporary directory as a SavedModel's
    `serving_default` with the variables it reads, which the converter imports as constant weights (its
    fully-connected kernels). Handing the converter a frozen concrete function instead costs twice the time
    (MiniLM: ~11 s against ~5 s): it writes that graph, its weights as constants inside, as a SavedModel of
    its own and reads it back."""
    concrete = function.get_concrete_function()
    root = compat.saved_model_root()
    root.weights = list(concrete.variables)
    with tempfile.TemporaryDirectory(prefix="keras_bert_litert_") as directory:
        tf.saved_model.save(root, directory, signatures={SIGNATURE: concrete})
        yield tf.lite.TFLiteConverter.from_saved_model(directory)


def _interpreter(**model):
    """LiteRT's interpreter of `model` (model_path= or model_content=) with tf-text's ops registered."""
    import tensorflow_text as tf_text

    return require_runtime().InterpreterWithCustomOps(
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
    [batch]; lists work too) -> {name: numpy array}, `serve()`'s outputs. The inputs are checked as `serve()`
    checks them (`served_arrays`: names, strings, rank, rows of a fixed width,
    one batch size), a ValueError naming the file and what it takes; each text is passed as `serve()`'s
    tokenizer reads it, invalid UTF-8 and U+FFFD dropped (`_as_read`). `runner.inputs`: the input names;
    `runner.num_threads`: LiteRT's threads.
    """

    def __init__(self, path, num_threads=None):
        self.path = os.fspath(path)
        require_runtime()
        if os.path.isdir(self.path):
            raise IsADirectoryError(f"{self.path} is a directory; expected {EXPECTED}")
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"{self.path}: no such file; expected {EXPECTED}")
        self.num_threads = usable_cores() if num_threads is None else num_threads
        # Allocation creates the XNNPACK delegate, whose INFO line native_logs drops.
        with native_logs.quiet():
            try:
                self._interpreter = _interpreter(model_path=self.path, num_threads=self.num_threads)
                self._interpreter.allocate_tensors()
            except (ValueError, RuntimeError) as e:  # not a flatbuffer, or ops without a kernel
                why = " ".join(str(e).split()) or type(e).__name__
                raise ValueError(f"{self.path} is not a model LiteRT runs ({why}); expected "
                                 f"{EXPECTED}") from None
        signatures = self._interpreter.get_signature_list()
        if SIGNATURE not in signatures:
            raise ValueError(f"{self.path}: no {SIGNATURE} signature (it has {sorted(signatures)}); "
                             f"expected {EXPECTED}")
        self._runner = self._interpreter.get_signature_runner(SIGNATURE)
        self._spec = _text_spec(self.path, self._runner.get_input_details())
        self.inputs = tuple(self._spec)

    def __call__(self, **inputs):
        try:
            tensors = served_arrays(inputs, self._spec)
        except ValueError as e:
            raise ValueError(f"{self.path}: {e}") from None
        arrays = {name: _as_read(value) for name, value in tensors.items()}
        if tensors["text"].shape[0] == 0:
            # LiteRT's UNPACK kernel refuses a zero-size tensor: an empty batch runs one empty text, cut to 0.
            one = {name: np.full((1, *value.shape[1:]), b"", dtype=object) for name, value in arrays.items()}
            return {name: value[:0] for name, value in self._runner(**one).items()}
        return self._runner(**arrays)


def _text_spec(path, details):
    """{name: tf.TensorSpec} of the raw-text form whose inputs LiteRT's signature `details` describes
    (`keras_bert.models.serving.text_spec`); ValueError naming `path` where they are no such form."""
    shapes = {name: [None if size < 0 else int(size) for size in detail["shape_signature"]]
              for name, detail in details.items()}
    strings = all(detail["dtype"] is np.bytes_ for detail in details.values())
    choices = shapes.get("text_b", [None])[1:]
    form = "text_pair" if "text_b" in shapes else "text"
    spec = text_spec(form, *choices) if len(choices) <= 1 else None
    if not strings or spec is None or shapes != {name: s.shape.as_list() for name, s in spec.items()}:
        takes = ", ".join(f"`{name}` ({np.dtype(detail['dtype']).name} {shapes[name]})"
                          for name, detail in details.items())
        raise ValueError(f"{path}: its {SIGNATURE} takes {takes or 'nothing'}; expected {EXPECTED}, which "
                         "takes `text` (and `text_b`) strings [batch]")
    return spec


def _as_read(texts):
    """tf.string texts -> numpy bytes, each as `serve()`'s tokenizer reads it: invalid UTF-8 becomes U+FFFD
    (`keras_bert.text.splitter`), which BERT's cleaning drops, as it drops U+FFFD itself. In the .tflite,
    tf-text's FastBertNormalizer would keep them as U+FFFD (LiteRT has no kernel for the decode)."""
    values = texts.numpy()
    if all(_is_clean(value) for value in values.reshape(-1)):
        return values
    replaced = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace",
                                            replacement_char=0xFFFD)
    return tf.strings.regex_replace(replaced, "\ufffd", "").numpy()


def _is_clean(text):
    """Whether `text` (bytes) is valid UTF-8 without U+FFFD: what `_as_read` passes as it is."""
    try:
        return "\ufffd" not in text.decode("utf-8")
    except UnicodeDecodeError:
        return False


def load_litert(path, num_threads=None):
    """The runner of a `.tflite` that `export_litert` wrote (`LiteRTRunner`): `runner(text=...)` returns
    `serve()`'s outputs as numpy. `num_threads`: LiteRT's threads (default: every CPU this process may run
    on, `usable_cores`). Raises ValueError (OSError where the path is a directory or missing) naming the
    file and what was expected; MissingRuntimeError without LiteRT's runtime.

    Args:
        path: a `.tflite` file `export_litert` wrote.
        num_threads: LiteRT's CPU threads (default: every CPU this process may run on).

    Returns:
        A `LiteRTRunner`: `runner(text=[...])` (one array of str per signature input, [batch]) returns
        {output name: numpy array}, as `model.serve()` does; `runner.inputs` names the inputs.

    Raises:
        FileNotFoundError: `path` does not exist.
        IsADirectoryError: `path` is a directory.
        ValueError: `path` is not a model LiteRT runs, or has no `serving_default` signature taking
            text, as `export_litert` writes.
        MissingRuntimeError: LiteRT's runtime `ai_edge_litert` is not installed.
    """
    return LiteRTRunner(path, num_threads)
