"""SavedModels for TF Serving that take raw text, built with `keras.export.ExportArchive`.

`export_saved_model(model, export_dir, preprocessor)` writes `<export_dir>/<version>/` (saved_model.pb,
variables/, assets/, assets.extra/tf_serving_warmup_requests) with these signatures:

  serving_default  = the raw-text endpoint (registered first, so ExportArchive aliases it):
                     `serve_text`: text tf.string [batch], or `serve_text_pair`: text, text_b [batch]
                     (for BertMultipleChoice text_b is [batch, num_choices]: one ending per choice), or
                     for a span labeler `serve_question_context`: question, context [batch] -> decoded
                     answers over doc-stride windows (`keras_bert.export.span_answers`);
  serve_token_ids:   input_word_ids, input_mask, input_type_ids int32 [batch, seq] ([batch, choices, seq] for
                     multiple choice; the pretrainer also takes masked_lm_positions int32 [batch, k]);
  serve_examples:    examples tf.string [batch] of serialized tf.Example with the raw-text features
                     (`text`, `text_b`) or, without a preprocessor, the int64 token-id features.

The raw-text endpoints run the given `BertPreprocessor` (the tokenizer and packer layers used in training)
inside the graph. Outputs are flat dicts of dense tensors, named per model kind (see `serving_outputs`);
`answers.py` adds finished answers (entities, windowed labels, `choice`, `sentence_embedding`).
"""

import os
import shutil

import keras
import numpy as np
import tensorflow as tf

from keras_bert import tempdirs
from keras_bert.checkpoints import split_model
from keras_bert.data.squad_answers import AnswerRules
from keras_bert.export import answers, span_answers
from keras_bert.export.errors import ExportError
from keras_bert.export.labels import class_outputs, with_label_names
from keras_bert.export.preprocessing import serving_preprocessor
from keras_bert.export.serving_form import serving_form
from keras_bert.models.encoder import INPUT_NAMES

SIGNATURES = ("text", "text_pair", "token_ids", span_answers.SIGNATURE)
WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
# Texts sent by the warmup requests; the empty string also exercises the no-token path at load time.
WARMUP_TEXTS = ("TF Serving warms the model up with this request.", "")


def model_kind(model):
    """The task of `model` (its `task_kind`): "encoder", "classifier", "span_labeler", "token_classifier",
    "multiple_choice" or "pretrainer"."""
    kind = getattr(model, "task_kind", None)
    if kind is None:
        raise ExportError(f"cannot export a {type(model).__name__}: expected a BertEncoder or a keras_bert task "
                          "model (BertClassifier, BertSpanLabeler, BertTokenClassifier, BertMultipleChoice, "
                          "BertPretrainer)")
    return kind


def encoder_of(model):
    """The `BertEncoder` of `model`: the model itself, or a task model's `.encoder`."""
    return split_model(model)[0]


def serving_outputs(model, inputs):
    """Runs `model` (inference mode) on encoder-input tensors and names its outputs for serving, every
    floating output float32 (a model computing in bfloat16 is served with float32 outputs).

    Returns a flat dict of dense tensors:
        encoder: pooled_output [b, h], sequence_output [b, s, h];
        classifier (num_classes > 1), token classifier, multiple choice: logits, probabilities, label_id
            ([b, C] / [b, s, C] / [b, choices], label_id without the last axis); a classifier with
            `labels` also label (tf.string [b], the name of label_id); regression (1 class): logits [b, 1];
        span labeler: start_logits, end_logits [b, s];
        pretrainer: masked_lm_logits [b, k, vocab], masked_lm_ids int32 [b, k] (argmax),
            next_sentence_logits [b, 2]. Without `masked_lm_positions` in `inputs`, k = s: every position.
    """
    return {name: tf.cast(value, tf.float32) if value.dtype.is_floating else value
            for name, value in _named_outputs(model, inputs).items()}


def _named_outputs(model, inputs):
    kind = model_kind(model)
    if kind == "pretrainer":
        inputs = dict(inputs)
        if "masked_lm_positions" not in inputs:
            word_ids = inputs["input_word_ids"]
            positions = tf.range(tf.shape(word_ids)[1], dtype=tf.int32)
            inputs["masked_lm_positions"] = tf.tile(positions[None], [tf.shape(word_ids)[0], 1])
        out = model(inputs, training=False)
        return {"masked_lm_logits": out["masked_lm_logits"],
                "masked_lm_ids": tf.argmax(out["masked_lm_logits"], axis=-1, output_type=tf.int32),
                "next_sentence_logits": out["next_sentence_logits"]}
    out = model(inputs, training=False)
    if kind == "encoder":
        return {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"]}
    if kind == "span_labeler":
        return {"start_logits": out["start_logits"], "end_logits": out["end_logits"]}
    if kind == "classifier" and model.num_classes == 1:
        return {"logits": out}
    if kind == "classifier":
        return with_label_names(model, class_outputs(out))
    return class_outputs(out)


def token_id_spec(model):
    """{name: tf.TensorSpec} of the `serve_token_ids` signature of `model`."""
    kind = model_kind(model)
    shape = [None, model.num_choices, None] if kind == "multiple_choice" else [None, None]
    spec = {name: tf.TensorSpec(shape, tf.int32, name=name) for name in INPUT_NAMES}
    if kind == "pretrainer":
        spec["masked_lm_positions"] = tf.TensorSpec([None, None], tf.int32, name="masked_lm_positions")
    return spec


def text_spec(model, signature):
    """{name: tf.TensorSpec} of the raw-text signature ("text" or "text_pair") of `model`."""
    spec = {"text": tf.TensorSpec([None], tf.string, name="text")}
    if signature == "text_pair":
        shape = [None, model.num_choices] if model_kind(model) == "multiple_choice" else [None]
        spec["text_b"] = tf.TensorSpec(shape, tf.string, name="text_b")
    return spec


def checked_inputs(inputs, spec):
    """`inputs` (dict of tensors) behind run-time checks that name the input at fault: each has the rank
    of its `spec` entry, the same batch size as the first, and the fixed sizes of the spec (multiple
    choice's num_choices). The served signature's shapes are not enforced by TF Serving's session: a
    wrong rank would otherwise be served silently, a batch mismatch fail deep inside the packer."""
    names = list(spec)
    checks = []
    for name in names:
        value, shape = inputs[name], spec[name].shape
        actual = tf.shape(value)
        # Rank from the raw op: tf.rank() would fold to the signature's rank while tracing.
        checks.append(tf.debugging.Assert(
            tf.equal(tf.raw_ops.Rank(input=value), shape.rank),
            [f"serving input {name!r} must have rank {shape.rank} {shape.as_list()}, got shape", actual]))
        with tf.control_dependencies(checks[-1:]):  # rank first: indexing a wrong-rank shape fails obscurely
            if name != names[0]:
                checks.append(tf.debugging.assert_equal(
                    actual[0], tf.shape(inputs[names[0]])[0],
                    message=f"serving inputs {names[0]!r} and {name!r} must have the same batch size"))
            for axis, size in enumerate(shape.as_list()):
                if size is not None:
                    checks.append(tf.debugging.assert_equal(
                        actual[axis], size, message=f"serving input {name!r} must have {size} on axis {axis}"))
    with tf.control_dependencies(checks):
        return {name: tf.identity(inputs[name]) for name in names}


def default_signature(model, preprocessor):
    """The serving_default input form when none is asked for."""
    if preprocessor is None:
        return "token_ids"
    if model_kind(model) == "span_labeler":
        return span_answers.SIGNATURE
    return "text_pair" if model_kind(model) == "multiple_choice" else "text"


def preprocess_text(model, preprocessor, texts):
    """Raw text -> encoder inputs with `preprocessor`, shaped for `model` (multiple choice: `text` [b] is
    each choice's first segment, `text_b` [b, choices] the endings; inputs become [b, choices, seq])."""
    if model_kind(model) != "multiple_choice":
        segments = (texts["text"], texts["text_b"]) if "text_b" in texts else texts["text"]
        return preprocessor(segments)
    endings = texts["text_b"]
    num_choices = model.num_choices
    contexts = tf.repeat(texts["text"], num_choices)
    packed = preprocessor((contexts, tf.reshape(endings, [-1])))
    return {name: tf.reshape(value, [-1, num_choices, preprocessor.seq_length])
            for name, value in packed.items()}


def _example_features(model, signature, seq_length):
    """tf.io parsing spec of `serve_examples`: the raw-text features, or the int64 token-id features."""
    if signature == "token_ids":
        spec = token_id_spec(model)
        shape = [model.num_choices, seq_length] if model_kind(model) == "multiple_choice" else [seq_length]
        features = {name: tf.io.FixedLenFeature(shape, tf.int64) for name in INPUT_NAMES}
        if "masked_lm_positions" in spec:
            features["masked_lm_positions"] = tf.io.VarLenFeature(tf.int64)
        return features
    if signature == span_answers.SIGNATURE:
        return span_answers.EXAMPLE_FEATURES
    features = {"text": tf.io.FixedLenFeature([], tf.string)}
    if signature == "text_pair":
        shape = [model.num_choices] if model_kind(model) == "multiple_choice" else []
        features["text_b"] = tf.io.FixedLenFeature(shape, tf.string)
    return features


def check_compatible(model, preprocessor):
    """Raises ExportError if `preprocessor` cannot feed `model`: vocab size or sequence length."""
    config = encoder_of(model).config
    tokenizer = preprocessor.tokenizer
    if tokenizer.vocab_size != config.vocab_size:
        source = tokenizer.vocab_file or "the tokenizer's vocabulary"
        raise ExportError(f"vocab size mismatch: {source} has {tokenizer.vocab_size} tokens but the model's "
                          f"config.vocab_size is {config.vocab_size}; export with the vocab the model was "
                          "trained with")
    if preprocessor.seq_length > config.max_position_embeddings:
        raise ExportError(f"preprocessor seq_length {preprocessor.seq_length} exceeds the model's "
                          f"max_position_embeddings {config.max_position_embeddings}")


def build_archive(model, preprocessor=None, signature=None, example_seq_length=None, options=None,
                  answer_rules=None):
    """An ExportArchive of `model` (and `preprocessor`) with the endpoints of the module docstring.

    Args:
        model: a BertEncoder or task model (built).
        preprocessor: a `keras_bert.text.BertPreprocessor`, or None for a token-id-only export.
        signature: "text", "text_pair", "token_ids" or "question_context" (span labeler: decoded answers):
            what serving_default takes (default per model kind).
        example_seq_length: length of the token-id features of `serve_examples` without a preprocessor.
        options: `answers.AnswerOptions` (long texts, pooling); default: none of them.
        answer_rules: the `AnswerRules` of "question_context" (default: run_squad's defaults).

    Returns (archive, signature).
    """
    signature = signature or default_signature(model, preprocessor)
    kind = model_kind(model)
    if signature not in SIGNATURES:
        raise ExportError(f"signature={signature!r}; expected one of {SIGNATURES}")
    if signature != "token_ids" and preprocessor is None:
        raise ExportError(f"signature={signature!r} takes raw text and needs a preprocessor (BertPreprocessor); "
                          "pass one, or use signature='token_ids'")
    if signature == "text" and kind in ("span_labeler", "multiple_choice"):
        raise ExportError(f"a {type(model).__name__} needs two text inputs: use signature='text_pair'")
    if signature == span_answers.SIGNATURE and kind != "span_labeler":
        raise ExportError(f"signature={signature!r} serves SQuAD answers and needs a BertSpanLabeler, got a "
                          f"{type(model).__name__}")
    if preprocessor is not None:
        check_compatible(model, preprocessor)
    options = options or answers.AnswerOptions()
    answers.check_options(model, kind, signature, preprocessor, options)
    archive = keras.export.ExportArchive()
    # The model is not `track`ed: its variables are saved through the endpoints that capture them, and
    # `track` would add the Keras variable wrappers as second objects, doubling variables/ on disk.
    if preprocessor is not None:
        if not preprocessor.built:
            preprocessor(tf.constant([""]))  # Keras layers build on their first call; export needs it built
        # Tracked explicitly so every tokenizer resource (vocab tables, tf-text model buffers) is saved.
        archive.track(preprocessor)

    def outputs_of_token_ids(inputs):
        return answers.with_answers(model, kind, inputs, serving_outputs(model, inputs), options)

    def serve_token_ids(inputs):
        return outputs_of_token_ids(checked_inputs(inputs, token_id_spec(model)))

    def serve_text(texts):
        texts = checked_inputs(texts, text_spec(model, signature))
        whole = answers.whole_text_outputs(model, kind, preprocessor, texts, options)
        if whole is not None:
            return whole
        # The packer's own output needs no input check.
        return outputs_of_token_ids(preprocess_text(model, preprocessor, texts))

    # Each endpoint is traced once here; serve_examples calls the traced functions rather than retracing
    # their bodies (the tokenizer graph is large: tracing it dominates export time).
    endpoints = {}
    if signature == span_answers.SIGNATURE:
        try:
            serve = span_answers.serve_answers(model, preprocessor, answer_rules or AnswerRules())
        except ValueError as e:
            raise ExportError(str(e)) from None
        spec = span_answers.input_spec()
        endpoints[f"serve_{signature}"] = _traced(lambda inputs: serve(checked_inputs(inputs, spec)), spec)
    elif signature != "token_ids":
        endpoints[f"serve_{signature}"] = _traced(serve_text, text_spec(model, signature))
    endpoints["serve_token_ids"] = _traced(serve_token_ids, token_id_spec(model))
    seq_length = preprocessor.seq_length if preprocessor is not None else example_seq_length
    if seq_length:
        features = _example_features(model, signature, seq_length)
        serve_parsed = endpoints[f"serve_{signature}"] if signature != "token_ids" else None

        def serve_examples(inputs):
            parsed = tf.io.parse_example(inputs["examples"], features)
            if serve_parsed is not None:
                return serve_parsed(parsed)
            parsed = {name: tf.cast(tf.sparse.to_dense(value) if isinstance(value, tf.SparseTensor) else value,
                                    tf.int32) for name, value in parsed.items()}
            return endpoints["serve_token_ids"](parsed)

        endpoints["serve_examples"] = _traced(
            serve_examples, {"examples": tf.TensorSpec([None], tf.string, name="examples")})
    # The first endpoint registered becomes serving_default (ExportArchive.write_out).
    for name, fn in endpoints.items():
        archive.add_endpoint(name, fn)
    return archive, signature


def _traced(fn, spec):
    """`fn` as a tf.function over one dict argument of `spec`, traced once."""
    function = tf.function(fn, input_signature=[spec], autograph=False)
    function.get_concrete_function()
    return function


def next_version(export_dir):
    """1 + the largest integer-named subdirectory of `export_dir` (1 if none), as TF Serving numbers them."""
    versions = [int(name) for name in os.listdir(export_dir) if name.isdigit()] if os.path.isdir(export_dir) else []
    return max(versions, default=0) + 1


def warmup_inputs(model, signature, preprocessor=None):
    """Numpy inputs of the warmup request for the `signature` endpoint (a batch of 2)."""
    if signature == "token_ids":
        spec = token_id_spec(model)
        length = preprocessor.seq_length if preprocessor is not None else 8
        shape = [2, model.num_choices, length] if model_kind(model) == "multiple_choice" else [2, length]
        inputs = {"input_word_ids": np.zeros(shape, np.int32), "input_mask": np.ones(shape, np.int32),
                  "input_type_ids": np.zeros(shape, np.int32)}
        if "masked_lm_positions" in spec:
            inputs["masked_lm_positions"] = np.zeros([2, 1], np.int32)
        return inputs
    if signature == span_answers.SIGNATURE:
        return span_answers.warmup_inputs()
    inputs = {"text": np.array([t.encode() for t in WARMUP_TEXTS], dtype=object)}
    if signature == "text_pair":
        text_b = inputs["text"][::-1]
        if model_kind(model) == "multiple_choice":
            text_b = np.stack([text_b] * model.num_choices, axis=1)
        inputs["text_b"] = text_b
    return inputs


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
    """Writes `requests` (list of (signature_name, numpy inputs)) to assets.extra/tf_serving_warmup_requests."""
    path = os.path.join(version_dir, WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            writer.write(prediction_log(inputs, signature_name))
    return path


def publish_version(export_dir, version, write):
    """Runs `write(tmp_dir)` in a hidden temporary directory of `export_dir`, then renames it to
    `<export_dir>/<version>`: a server polling `export_dir` (it ignores non-numeric names) sees the
    version whole or not at all. The version gets the umask's usual modes (0755/0644 with umask 022), and
    hidden directories a killed export of ours left in `export_dir` are removed. Of two exports racing for a
    version, the later takes the next one (an explicit `version` fails)."""
    chosen = version is None
    version = next_version(export_dir) if chosen else int(version)
    if version < 0:
        raise ExportError(f"version={version}; expected a non-negative integer (TF Serving version number)")
    version_dir = os.path.join(export_dir, str(version))
    if os.path.exists(version_dir):
        raise ExportError(f"{version_dir} already exists; TF Serving versions are immutable: pass a new "
                          f"version (next free: {next_version(export_dir)}) or remove it")
    tmp_dir = tempdirs.make_temp_dir(export_dir, prefix=f".tmp-{version}-")
    try:
        write(tmp_dir)
        tempdirs.seal(tmp_dir)  # readable by a server running as another user, as a plain mkdir would be
        version_dir = tempdirs.rename_to_free(
            tmp_dir, version_dir, chosen and (lambda: os.path.join(export_dir, str(next_version(export_dir)))))
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return version_dir


def export_saved_model(model, export_dir, preprocessor=None, version=None, signature=None, warmup=True,
                       example_seq_length=None, long_text="truncate", stride=None, pooling=None, normalize=False,
                       answer_rules=None, quantize=None, dtype="float32", calibration_texts=None):
    """Exports `model` for TF Serving as `<export_dir>/<version>`, written atomically.

    Args:
        model: a built BertEncoder, BertClassifier, BertSpanLabeler, BertTokenClassifier,
            BertMultipleChoice or BertPretrainer.
        export_dir: the model base path TF Serving watches.
        preprocessor: a `keras_bert.text.BertPreprocessor` (the training tokenizer + packer) for the
            raw-text signatures; default: `model.preprocessor`. Given beside the model's own, it must have
            the same vocab and casing (ExportError otherwise).
        version: int version; default: one more than the largest existing one (1 for a new directory).
            An existing version directory is an error.
        signature: "text", "text_pair", "token_ids" or "question_context", what serving_default takes
            (default: "text", "question_context" for a span labeler, "text_pair" for multiple choice;
            "token_ids" without preprocessor).
        warmup: write assets.extra/tf_serving_warmup_requests (one request to serving_default).
        example_seq_length: without a preprocessor, the token-id length of `serve_examples` features
            (that signature is omitted if not given).
        long_text, stride, pooling, normalize: the `answers.AnswerOptions` (classifier texts over the
            sequence length, window stride, the encoder's `sentence_embedding`).
        answer_rules: a span labeler's `keras_bert.data.squad_answers.AnswerRules` (doc_stride,
            max_query_length, n_best_size, max_answer_length, version_2_with_negative,
            null_score_diff_threshold); default: run_squad's defaults.
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
            one text (encoder, classifier, span labeler, token classifier).

    Returns the version directory (str).
    """
    preprocessor = serving_preprocessor(model, preprocessor)
    calibration_inputs = None
    if calibration_texts is not None:
        if model_kind(model) in ("multiple_choice", "pretrainer") or preprocessor is None:
            raise ExportError(f"calibration_texts: a {type(model).__name__} "
                              f"{'without a preprocessor ' if preprocessor is None else ''}cannot run on single "
                              "texts; calibrate an encoder, classifier, span labeler or token classifier")
        calibration_inputs = preprocessor(tf.constant(list(calibration_texts)))
    try:
        model = serving_form(model, quantize, dtype, calibration_inputs)
    except ValueError as e:
        raise ExportError(str(e)) from None
    options = answers.AnswerOptions(long_text, stride, pooling, normalize)
    archive, signature = build_archive(model, preprocessor, signature, example_seq_length, options, answer_rules)

    def write(tmp_dir):
        archive.write_out(tmp_dir, verbose=False)
        if warmup:
            write_warmup(tmp_dir, [("serving_default", warmup_inputs(model, signature, preprocessor))])

    return publish_version(export_dir, version, write)
