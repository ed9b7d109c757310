"""The TF Hub BERT API: a preprocess SavedModel and an encoder SavedModel that code written for TF Hub's
BERT models (TF's "Solve GLUE tasks using BERT" tutorial) runs unchanged through `tf.saved_model.load`.

    import tensorflow_text  # registers the tokenizer op; without it: Op type not registered
    preprocess = tf.saved_model.load(preprocess_dir)
    encoder = tf.saved_model.load(encoder_dir)
    inputs = preprocess(tf.constant(["hello world"]))                    # int32 [b, 128] x 3
    tokens = [preprocess.tokenize(s) for s in (sentences_a, sentences_b)]  # int32 ragged [b, words, pieces]
    inputs = preprocess.bert_pack_inputs(tokens, seq_length=tf.constant(64))  # round-robin truncation
    outputs = encoder(inputs)   # pooled_output, sequence_output, default, encoder_outputs (list per layer)

preprocess also has `tokenize_with_offsets` (ids, byte starts, byte limits; same shape) and
`tokenize.get_special_tokens_dict()`; encoder has `vocab_file` (asset), `do_lower_case`, `variables`,
and, exported from a BertPretrainer, `encoder.mlm(inputs + masked_lm_positions)` -> `mlm_logits`. The
tokenizer and packer in the graph are the model's own keras_bert.text layers. Each SavedModel also has a
flat `serving_default` signature (encoder_outputs_<i> per layer), so TF Serving loads either.
"""

import os
import tempfile

import tensorflow as tf

from keras_bert import compat
from keras_bert.checkpoints import split_model
from keras_bert.export.saved_model import check_compatible, encoder_of, publish_version
from keras_bert.models.encoder import INPUT_NAMES, flat_outputs
from keras_bert.models.float_form import float_model
from keras_bert.models.served_inputs import checked_inputs
from keras_bert.text import vocab as vocab_lib

_STRINGS = tf.TensorSpec([None], tf.string, name="text")
_IDS_SPEC = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}


def _checked(strings):
    """Served strings behind `checked_inputs`' shape check (a batch: tf.string [batch])."""
    return checked_inputs({"text": strings}, {"text": _STRINGS})["text"]


def _by_word(values, word_ids):
    """Ragged [b, (pieces)] values and their word ids -> ragged [b, (words), (pieces)] (TF Hub's nesting)."""
    # an empty row's max is -inf
    words = tf.maximum(tf.cast(tf.reduce_max(word_ids, axis=1), tf.int64) + 1, 0)
    first_word = tf.cumsum(words, exclusive=True)
    global_word = tf.cast(word_ids.flat_values, tf.int64) + tf.gather(first_word, word_ids.value_rowids())
    pieces = tf.RaggedTensor.from_value_rowids(values.flat_values, global_word, nrows=tf.reduce_sum(words))
    return tf.RaggedTensor.from_row_lengths(pieces, words)


def _tokenize(tokenizer, strings):
    ids, word_ids = tokenizer.tokenize_with_word_ids(_checked(strings))
    return _by_word(ids, word_ids)


def _tokenize_with_offsets(tokenizer, strings):
    strings = _checked(strings)
    ids, word_ids = tokenizer.tokenize_with_word_ids(strings)
    _, starts, limits = tokenizer.tokenize_with_offsets(strings)
    return tuple(_by_word(values, word_ids) for values in (ids, starts, limits))


class _Tokenize(tf.Module):
    """`preprocess.tokenize`: strings [b] -> int32 ragged [b, words, pieces]; `get_special_tokens_dict()`."""

    def __init__(self, tokenizer):
        super().__init__()
        # The tokenizer is captured by the functions, not tracked: its tables are graph constants, and saving
        # the Keras layers themselves would trace every method (tens of seconds).
        self.__call__ = tf.function(lambda strings: _tokenize(tokenizer, strings), input_signature=[_STRINGS])
        self.get_special_tokens_dict = tf.function(lambda: {
            "vocab_size": tf.constant(tokenizer.vocab_size, tf.int32),
            "start_of_sequence_id": tf.constant(tokenizer.cls_id, tf.int32),
            "end_of_segment_id": tf.constant(tokenizer.sep_id, tf.int32),
            "padding_id": tf.constant(tokenizer.pad_id, tf.int32),
            "mask_id": tf.constant(tokenizer.mask_id, tf.int32)}, input_signature=[])


def _pack(packer, segments, max_length, seq_length=None):
    """1 or 2 segments of ids, ragged [b, (words), (pieces)] -> the encoder inputs, int32 [b, seq_length]
    (default: the preprocessor's; an int32 or int64 scalar at most `max_length`, the encoder's positions);
    pairs are truncated round-robin (the longer one first). Raises InvalidArgument naming what is wrong:
    segments of different batch sizes, a seq_length without room for the special tokens or past the
    encoder's positions."""
    checks = [tf.debugging.Assert(tf.equal(segments[0].nrows(), segment.nrows()), [tf.strings.format(
        "bert_pack_inputs: segments 0 and {} must have the same batch size; got {} and {}",
        (index, segments[0].nrows(), segment.nrows()))]) for index, segment in enumerate(segments[1:], 1)]
    if seq_length is not None:
        least = len(segments) + 1  # [CLS] and one [SEP] after each segment
        seq_length = tf.cast(seq_length, tf.int32)
        checks.append(tf.debugging.Assert(
            (seq_length >= least) & (seq_length <= max_length), [tf.strings.format(
                f"bert_pack_inputs: seq_length must be in [{least}, {max_length}] for {len(segments)} "
                f"segment(s): [CLS] and a [SEP] per segment, at most the encoder positions; got {{}}",
                seq_length)]))
    # No quote in a message: TF escapes it in the error. Nothing packs before the checks pass.
    with tf.control_dependencies(checks):
        segments = [tf.nest.map_structure(_unsized, s, expand_composites=True) for s in segments]
        seq_length = None if seq_length is None else tf.identity(seq_length)
    return packer([segment.merge_dims(1, -1) for segment in segments], seq_length=seq_length)


def _unsized(tensor):
    """`tensor` with its sizes hidden from shape inference, its rank kept: two segments' batch sizes, known
    when called on eager tensors, would otherwise fail the packer's graph before the checks run."""
    return tf.raw_ops.PlaceholderWithDefault(input=tensor, shape=[None] * tensor.shape.rank)


class _Preprocessing(tf.Module):
    """The preprocess SavedModel's root: __call__, tokenize, tokenize_with_offsets, bert_pack_inputs."""

    def __init__(self, preprocessor, max_length):
        super().__init__()
        # captured, not tracked (see _Tokenize)
        tokenizer, packer = preprocessor.tokenizer, preprocessor.packer
        self.tokenize = _Tokenize(tokenizer)
        self.tokenize_with_offsets = tf.function(lambda strings: _tokenize_with_offsets(tokenizer, strings),
                                                 input_signature=[_STRINGS])
        self.bert_pack_inputs = tf.function(
            lambda segments, seq_length=None: _pack(packer, segments, max_length, seq_length))
        # Segments as `tokenize` returns them, as TF Hub's (each trace costs seconds: only these six).
        segment = tf.RaggedTensorSpec([None, None, None], tf.int32, ragged_rank=2)
        for count in (1, 2):
            self.bert_pack_inputs.get_concrete_function([segment] * count)
            for dtype in (tf.int32, tf.int64):
                self.bert_pack_inputs.get_concrete_function([segment] * count, tf.TensorSpec([], dtype))
        self.__call__ = tf.function(lambda strings: preprocessor(_checked(strings)),
                                    input_signature=[_STRINGS])



def _masked_lm(pretrainer, encoder_outputs):
    """`encoder.mlm` and its traced functions: the encoder inputs + masked_lm_positions int32 [b, k] ->
    mlm_logits [b, k, vocab] (float32) and the encoder's outputs, as TF Hub's BERT encoders with an MLM
    head; `training` as the encoder's. Its variables are those it reads (the encoder's and the MLM head's),
    so `hub.KerasLayer(encoder.mlm, trainable=True)` trains them."""
    spec = {**_IDS_SPEC,
            "masked_lm_positions": tf.TensorSpec([None, None], tf.int32, name="masked_lm_positions")}

    def call(inputs, training=False):
        sequence = encoder_outputs(inputs, training=training)
        logits = pretrainer.masked_lm(sequence["sequence_output"], inputs["masked_lm_positions"])
        return {**sequence, "mlm_logits": tf.cast(logits, tf.float32)}

    mlm = compat.saved_model_root()
    mlm.__call__ = tf.function(call)
    functions = [mlm.__call__.get_concrete_function(spec, training) for training in (False, True)]
    _track_variables(mlm, functions)
    return mlm, functions


def _captured(functions):
    """The tf.Variables the traced `functions` read, each once."""
    return list({id(v): v for fn in functions for v in fn.variables}.values())


def _track_variables(module, functions):
    """`module.variables`, `trainable_variables`, `non_trainable_variables` (what hub.KerasLayer and TF Hub's
    users read): the tf.Variables `functions` read, so that a gradient reaches each one listed (a Keras
    variable's wrapper would be saved as a second object that no function reads)."""
    module.variables = _captured(functions)
    module.trainable_variables = [v for v in module.variables if v.trainable]
    module.non_trainable_variables = [v for v in module.variables if not v.trainable]


def _encoder_root(model, preprocessor, vocab_asset):
    """The encoder SavedModel's root object (an AutoTrackable, as Keras' ExportArchive uses)."""
    encoder, pretrainer = split_model(model)

    def outputs(inputs, training=False):
        out = encoder({name: inputs[name] for name in INPUT_NAMES}, training=training)
        cast = {name: tf.cast(out[name], tf.float32) for name in ("pooled_output", "sequence_output")}
        return {**cast, "default": cast["pooled_output"],
                "encoder_outputs": [tf.cast(x, tf.float32) for x in out["encoder_outputs"]]}

    def flat(inputs):
        return flat_outputs(outputs(inputs))

    root = compat.saved_model_root()
    root.vocab_file = vocab_asset
    root.do_lower_case = tf.Variable(preprocessor.tokenizer.lower_case, trainable=False, name="do_lower_case")
    root.__call__ = tf.function(outputs)
    # Traced for training=False and True, as TF Hub's, so a caller may pass either.
    functions = [root.__call__.get_concrete_function(_IDS_SPEC, training) for training in (False, True)]
    # The encoder's variables only: the heads' are under `.mlm`, untouched by a classifier built on `root`.
    _track_variables(root, functions)
    root.serving_default = tf.function(flat, input_signature=[_IDS_SPEC])
    functions.append(root.serving_default.get_concrete_function())
    if pretrainer is not None:
        root.mlm, mlm_functions = _masked_lm(pretrainer, outputs)
        functions.extend(mlm_functions)
    # The tf.Variables the functions capture, tracked by the root: TF Serving's session-based loader finds
    # variables only through the object graph (what ExportArchive's `_all_variables` does too).
    root._all_variables = _captured(functions)
    return root


def export_tfhub(encoder_or_task, preprocessor, export_dir, version=None):
    """Writes `<export_dir>/preprocess/<version>` and `<export_dir>/encoder/<version>` (each atomically),
    the TF Hub BERT pair (see the module docstring for the calls they answer).

    Args:
        encoder_or_task: a `BertEncoder`, a task model (its encoder is exported) or a `BertPretrainer`
            (also its masked-LM head, as `encoder.mlm`).
        preprocessor: the `keras_bert.text.BertPreprocessor` of the encoder's vocab; its seq_length is the
            length `preprocess(strings)` packs to (TF Hub's: 128).
        export_dir: parent directory of the two model base paths.
        version: int version of both (default: next free of each).

    Returns:
        (preprocess_dir, encoder_dir): the two version directories (str), what `tf.saved_model.load`
        and `hub.KerasLayer` take.

    Raises:
        ExportError: the preprocessor's vocab size differs from the model's, or its seq_length exceeds
            the position embeddings; a negative `version`, or one that exists.
    """
    encoder_or_task = float_model(encoder_or_task)  # LoRA merged, Keras int8 dequantized
    check_compatible(encoder_or_task, preprocessor)
    if not preprocessor.built:
        preprocessor(tf.constant([""]))  # built on first call, as export needs
    # Every function is traced in the context tf.saved_model.save looks it up in: traced once, written once.
    with compat.save_tracing():
        module = _Preprocessing(preprocessor, encoder_of(encoder_or_task).config.max_position_embeddings)
        preprocess = module.__call__.get_concrete_function()
    preprocess_dir = publish_version(f"{export_dir}/preprocess", version, lambda tmp: tf.saved_model.save(
        module, tmp, signatures={"serving_default": preprocess}))

    def write_encoder(tmp):
        with tempfile.TemporaryDirectory() as vocab_dir:  # the asset is copied into the SavedModel
            vocab_file = os.path.join(vocab_dir, vocab_lib.VOCAB_ASSET)
            vocab_lib.save_vocab(preprocessor.tokenizer.vocab, vocab_file)
            with compat.save_tracing():
                root = _encoder_root(encoder_or_task, preprocessor, tf.saved_model.Asset(vocab_file))
            tf.saved_model.save(root, tmp, signatures={"serving_default": root.serving_default})

    encoder_dir = publish_version(f"{export_dir}/encoder", version, write_encoder)
    return preprocess_dir, encoder_dir
