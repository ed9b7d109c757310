"""SavedModels for TF Serving that take raw text, built with `keras.export.ExportArchive`.

`export_saved_model(model, export_dir)` writes `<export_dir>/<version>/` (saved_model.pb, variables/,
assets/, assets.extra/: tf_serving_warmup_requests, batching_parameters.txt and model_server_flags.txt)
with the endpoints the model states (`model.serving_endpoints`, `keras_bert.models.serving`), the first
one registered as serving_default:

  serve_<form>     the model's raw-input form: `text`, `text_pair` (text, text_b) or a span labeler's
                   `question_context`, in [batch] strings -> its finished answers (labels, spans,
                   entities, choices, embeddings), the function `model.serve` runs;
  serve_token_ids: input_word_ids, input_mask, input_type_ids int32 (as the model takes them);
  serve_examples:  examples tf.string [batch] of serialized tf.Example with the form's features (or,
                   without a preprocessor, the int64 token-id features).

This module knows no task: what a model takes and returns is the model's. The raw-text endpoints run the
model's `BertPreprocessor` (the tokenizer and packer layers used in training) inside the graph.
"""

import itertools
import os

import keras
import tensorflow as tf

from keras_bert import compat, outputs
from keras_bert.checkpoints import split_model
from keras_bert.export.batching import write_serving_config
from keras_bert.export.errors import ExportError
from keras_bert.export.preprocessing import serving_preprocessor
from keras_bert.export.serving_form import resolve_quantize, serving_form
from keras_bert.models.pretrained import check_seq_length
from keras_bert.models.serving import traced_function

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def model_kind(model):
    """The task of `model` (its `task_kind`); ExportError for a model keras_bert cannot
    serve."""
    if not hasattr(model, "serving_endpoints"):
        raise ExportError(f"cannot export a {type(model).__name__}: expected a BertEncoder or a keras_bert "
                          "task model (keras_bert.models.serving.Serving)")
    return model.task_kind


def encoder_of(model):
    """The `BertEncoder` of `model`: the model itself, or a task model's `.encoder`."""
    return split_model(model)[0]


def serving_outputs(model, inputs):
    """`model.serving_outputs(inputs)`: the model (inference mode) on encoder-input tensors, outputs named
    for serving and float32 (`keras_bert.models.serving.Serving`).

    Args:
        model: a BertEncoder or keras_bert task model.
        inputs: the encoder-input dict: int32 tensors `input_word_ids`, `input_mask`, `input_type_ids`
            [batch, seq] (a multiple-choice model's [batch, choices, seq]).

    Returns:
        A dict {serving name: float32 tensor}, e.g. a classifier's `logits` [batch, num_classes] and
        `probabilities`, an encoder's `sequence_output` and `pooled_output`.

    Raises:
        ExportError: `model` is not a BertEncoder or a keras_bert task model.
    """
    model_kind(model)
    return model.serving_outputs(inputs)


def check_compatible(model, preprocessor):
    """Raises ExportError if `preprocessor` cannot feed `model`: vocab size or sequence length."""
    config = encoder_of(model).config
    tokenizer = preprocessor.tokenizer
    if tokenizer.vocab_size != config.vocab_size:
        source = tokenizer.vocab_file or "the tokenizer's vocabulary"
        raise ExportError(f"vocab size mismatch: {source} has {tokenizer.vocab_size} tokens but the model's "
                          f"config.vocab_size is {config.vocab_size}; export with the vocab the model was "
                          "trained with")
    try:
        check_seq_length(config, preprocessor.seq_length, "the preprocessor's seq_length")
    except ValueError as e:
        raise ExportError(str(e)) from None


def build_archive(model, preprocessor=None, signature=None, example_seq_length=None, options=None):
    """An ExportArchive of `model` (and `preprocessor`) with the endpoints of the module docstring.

    Args:
        model: a built BertEncoder or task model.
        preprocessor: a `keras_bert.text.BertPreprocessor`, or None for a token-id-only export.
        signature: what serving_default takes: one of the model's `serving_forms` or "token_ids"
            (default: the model's first form; "token_ids" without preprocessor).
        example_seq_length: length of the token-id features of `serve_examples` without a preprocessor.
        options: the model's serving options (an instance of its `options_class`, or {name: value}).

    Returns:
        (archive, signature, endpoints): the `keras.export.ExportArchive` (its `write_out(dir)` writes
        the SavedModel), the resolved serving_default form (str), and {endpoint name: `Endpoint`},
        serving_default first.

    Raises:
        ExportError: `model` is not a keras_bert model; the preprocessor's vocab size or seq_length
            does not fit the model; a `signature` or option the model does not take (named).
    """
    model_kind(model)
    signature = signature or model.default_form(preprocessor)
    if preprocessor is not None:
        check_compatible(model, preprocessor)
    try:
        endpoints = model.serving_endpoints(preprocessor, signature, options, example_seq_length)
    except ExportError:
        raise
    except ValueError as e:
        raise ExportError(str(e)) from None
    archive = compat.save_traced_archive()  # each endpoint traced once (below), written from that trace
    # The model is not `track`ed: its variables are saved through the endpoints that capture them, and
    # `track` would add the Keras variable wrappers as second objects, doubling variables/ on disk.
    if preprocessor is not None:
        if not preprocessor.built:
            preprocessor(tf.constant([""]))  # Keras layers build on their first call; export needs it built
        # Tracked explicitly so every tokenizer resource (vocab tables, tf-text model buffers) is saved.
        archive.track(preprocessor)
    # Each endpoint is traced once, in the context saving looks it up in (compat.save_traced_archive), and
    # serve_examples calls the traced default rather than retracing its body (the tokenizer graph is large:
    # tracing it dominates export time).
    with compat.save_tracing():
        traced = {name: endpoint.traced() for name, endpoint in endpoints.items()}  # `serve`'s, if it ran
        default_name, default = next(iter(endpoints.items()))
        if default.example_features:
            serve_default = traced[default_name]

            def serve_examples(inputs):
                parsed = tf.io.parse_example(inputs["examples"], default.example_features)
                parsed = {name: tf.sparse.to_dense(value) if isinstance(value, tf.SparseTensor) else value
                          for name, value in parsed.items()}
                return serve_default({name: tf.cast(parsed[name], spec.dtype)
                                      for name, spec in default.input_spec.items()})

            traced["serve_examples"] = traced_function(
                serve_examples, {"examples": tf.TensorSpec([None], tf.string, name="examples")})
        # The first endpoint registered becomes serving_default (ExportArchive.write_out).
        for name, function in traced.items():
            archive.add_endpoint(name, function)
    return archive, signature, endpoints


def next_version(export_dir):
    """1 + the largest integer-named subdirectory of `export_dir` (1 if none), as TF Serving numbers them;
    a version another export is writing (its lock `.<version>.keras_bert_lock`) counts as taken."""
    names = os.listdir(export_dir) if os.path.isdir(export_dir) else []
    locked = (name[1 : -len(outputs.LOCK_SUFFIX)] for name in names
              if name.startswith(".") and name.endswith(outputs.LOCK_SUFFIX))
    return max((int(name) for name in (*names, *locked) if name.isdigit()), default=0) + 1


def _field(number, payload):
    """One length-delimited protobuf field (wire type 2): tag, varint length, bytes."""
    def varint(value):
        out = bytearray()
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def prediction_log(inputs, signature_name="serving_default", model_name=""):
    """Serialized `tensorflow.serving.PredictionLog` holding a PredictRequest of `inputs` (numpy).

    Encoded by hand so export needs no `tensorflow-serving-api`: PredictionLog.predict_log = 6,
    PredictLog.request = 1, PredictRequest.model_spec = 1 / inputs = 2 (map entries key = 1, value = 2),
    ModelSpec.name = 1 / signature_name = 3; TensorProto bytes come from `tf.make_tensor_proto`. The
    tests parse the result with tensorflow_serving.apis.
    """
    model_spec = _field(1, model_name.encode()) + _field(3, signature_name.encode())
    request = _field(1, model_spec)
    for key in sorted(inputs):
        value = inputs[key]
        tensor = tf.make_tensor_proto(value, dtype=tf.string if value.dtype == object else None)
        request += _field(2, _field(1, key.encode()) + _field(2, tensor.SerializeToString()))
    return _field(6, _field(1, request))


def write_warmup(version_dir, requests):
    """Writes `requests` (list of (signature_name, numpy inputs)) to
    assets.extra/tf_serving_warmup_requests."""
    path = os.path.join(version_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            writer.write(prediction_log(inputs, signature_name))
    return path


def first_requests(inputs):
    """The warmup requests of serving_default, as `write_warmup` takes them: `inputs` (numpy, a batch of
    several rows) and its first row alone. A raw-text signature runs a lone row on a graph path of its own
    (`keras_bert.models.buckets.model_outputs`); left out, a server's first single-text request would build
    its kernels: 12x a steady one (benchmarks/README.md, "First answer")."""
    lone = {name: value[:1] for name, value in inputs.items()}
    return [("serving_default", inputs), ("serving_default", lone)]


def publish_version(export_dir, version, write):
    """Runs `write(tmp_dir)` in a hidden temporary directory of `export_dir`, then renames it to
    `<export_dir>/<version>`: a server polling `export_dir` (it ignores non-numeric names) sees the
    version whole or not at all. The version directory is claimed through `keras_bert.outputs` (its lock
    beside it, `.<version>.keras_bert_lock`): of two exports at once, a chosen version (`version=None`) is
    the first whose directory and lock are free, so they get distinct versions; an explicit `version`
    another export is writing is refused at once, naming it. The version gets the umask's usual modes
    (0755/0644 with umask 022), and hidden directories a killed export of ours left are removed."""
    export_dir = os.fspath(export_dir)
    if version is None:
        held = outputs.claim_first(os.path.join(export_dir, str(number))
                                   for number in itertools.count(next_version(export_dir)))
    else:
        if int(version) < 0:
            raise ExportError(f"version={version}; expected a non-negative integer (TF Serving version "
                              "number)")
        version_dir = os.path.join(export_dir, str(int(version)))
        try:
            if os.path.exists(version_dir):
                raise outputs.Taken(version_dir)
            held = outputs.claim(version_dir, kind="dir", label=f"version {int(version)} of {export_dir}")
        except outputs.Taken:
            raise ExportError(f"{version_dir} already exists; TF Serving versions are immutable: pass a new "
                              f"version (next free: {next_version(export_dir)}) or remove it") from None
        except outputs.Busy as e:
            raise ExportError(str(e)) from None
    # readable by a server running as another user, as a plain mkdir would be (`outputs.seal`)
    with held, outputs.filling(held) as tmp_dir:
        write(tmp_dir)
    return held.path


def export_saved_model(model, export_dir, preprocessor=None, version=None, signature=None, warmup=True,
                       example_seq_length=None, quantize=None, dtype="float32", calibration_texts=None,
                       options=None, **task_options):
    """Exports `model` for TF Serving as `<export_dir>/<version>`, written atomically.

    Args:
        model: a built BertEncoder or keras_bert task model (any `keras_bert.models.serving.Serving`).
        export_dir: the model base path TF Serving watches.
        preprocessor: a `keras_bert.text.BertPreprocessor` (the training tokenizer + packer) for the
            raw-text signatures; default: `model.preprocessor`. Given beside the model's own, it must have
            the same vocab and casing (ExportError otherwise).
        version: int version; default: one more than the largest existing one (1 for a new directory).
            An existing version directory is an error.
        signature: what serving_default takes: one of the model's `serving_forms` ("text", "text_pair",
            "question_context") or "token_ids" (default: the model's first form; "token_ids" without
            preprocessor).
        warmup: write assets.extra/tf_serving_warmup_requests (requests to serving_default: a batch and a
            lone row, `first_requests`).
        example_seq_length: without a preprocessor, the token-id length of `serve_examples` features
            (that signature is omitted if not given).
        quantize: None, or serve int8 Dense kernels: "int8_matmul" (int8 x int8 matmuls, oneDNN; 2.8x a
            float32 matmul on a VNNI CPU), "int8_weights" (int8 weights computed in `dtype`), or "int8"
            (int8_matmul where this CPU has VNNI, else int8_weights). See `keras_bert.export.serving_form`.
            A model with LoRA adapters is exported merged.
        dtype: "float32" (default; a model built with mixed_bfloat16 is served float32) or "bfloat16": the
            encoder's weights and matmuls in bfloat16 (LayerNorm, softmax and the task heads float32; outputs
            float32). Pays only on CPUs with avx512_bf16 / amx_bf16 and large batches
            (`keras_bert.export.serving_form`).
        calibration_texts: for "int8_matmul" (or "int8" resolved to it), a few hundred texts like those
            served: the model runs on them at export and each Dense input gets one constant int8 range
            (no per-row ranges computed per request; see `keras_bert.export.serving_form`). Models that take
            one text.
        options: an instance of the model's `options_class` (its serving options); or instead
        **task_options: those options by name, e.g. `long_text="windows"`, `pooling="mean"`,
            `answer_rules=...`, `fixed_length=True`: the fields of the model's Options (the docstring of
            its `options_class`). An option of another model is an ExportError naming it and this model.

    Also writes assets.extra/batching_parameters.txt, TF Serving's `--batching_parameters_file`, and
    assets.extra/model_server_flags.txt, the server's thread flags for this form
    (`keras_bert.export.batching`).

    Returns:
        The version directory `<export_dir>/<version>` (str).

    Raises:
        ExportError: naming what does not fit: a model that is not a keras_bert model; a `preprocessor`
            of another vocab or casing than the model's, or of another vocab size or a seq_length beyond
            the position embeddings; a `signature` or option the model does not take; `options=` beside
            options by name; `calibration_texts` for a model that serves no single texts; an unknown
            `quantize` / `dtype`; a negative `version` or one that exists or another export writes.
    """
    preprocessor = serving_preprocessor(model, preprocessor)
    model_kind(model)
    if options is not None and task_options:
        raise ExportError(f"options= and {', '.join(task_options)}= given together; pass one of them")
    try:  # checked before the (slow) serving form is built
        form = signature or model.default_form(preprocessor)
        options = model.serving_options(form, options or task_options)
    except ValueError as e:
        raise ExportError(str(e)) from None
    calibration_inputs = None
    if calibration_texts is not None:
        if not model.serving_calibration or preprocessor is None:
            raise ExportError(f"calibration_texts: a {type(model).__name__} "
                              f"{'without a preprocessor ' if preprocessor is None else ''}cannot run on "
                              "single texts; calibrate a model that serves single texts")
        calibration_inputs = preprocessor(tf.constant(list(calibration_texts)))
    try:
        model = serving_form(model, quantize, dtype, calibration_inputs)
    except ValueError as e:
        raise ExportError(str(e)) from None
    archive, signature, endpoints = build_archive(model, preprocessor, signature, example_seq_length, options)
    kernel_shapes = [tuple(compat.dense_kernel_variable(layer).shape) for layer in compat.sublayers(model)
                     if isinstance(layer, keras.layers.Dense)]

    def write(tmp_dir):
        archive.write_out(tmp_dir, verbose=False)
        # TF Serving's --batching_parameters_file and thread flags for this form
        write_serving_config(tmp_dir, options.fixed_length, resolve_quantize(quantize, log=False),
                             kernel_shapes)
        if warmup:
            write_warmup(tmp_dir, first_requests(next(iter(endpoints.values())).warmup))

    return publish_version(export_dir, version, write)
