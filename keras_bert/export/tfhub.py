"""The TF Hub BERT layout: a preprocessing SavedModel and an encoder SavedModel, used as a pair.

    import tensorflow_text  # registers the tokenizer op; without it: Op type not registered
    preprocess = tf.saved_model.load(preprocess_dir)
    encoder = tf.saved_model.load(encoder_dir)
    inputs = preprocess(tf.constant(["hello world"]))          # dict of int32 [b, seq_length]
    # or, for pairs: preprocess.bert_pack_inputs([preprocess.tokenize(a), preprocess.tokenize(b)])
    outputs = encoder(inputs)                                   # pooled_output, sequence_output, ...

Differences from the Hub models: `tokenize` returns ragged int32 [batch, (pieces)] (Hub's has a words
dimension too), and `bert_pack_inputs` packs to the preprocessor's fixed seq_length (no seq_length argument).
Both SavedModels also carry a `serving_default` signature, so TF Serving loads either.
"""

import keras
import tensorflow as tf

from keras_bert.export.saved_model import check_compatible, encoder_of, publish_version
from keras_bert.models.encoder import INPUT_NAMES

_RAGGED_IDS = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)


class _Preprocessing(tf.Module):
    """The preprocessing SavedModel's root object: tokenize, bert_pack_inputs and __call__."""

    def __init__(self, preprocessor):
        super().__init__()
        # Attribute tracking saves the preprocessor's layers and any resources they own.
        self.preprocessor = preprocessor
        self.tokenize = tf.function(lambda text: preprocessor.tokenizer(text),
                                    input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        self.bert_pack_inputs = tf.function(lambda segments: preprocessor.packer(list(segments)))
        for count in (1, 2):
            self.bert_pack_inputs.get_concrete_function([_RAGGED_IDS] * count)
        self.__call__ = tf.function(lambda text: preprocessor(text),
                                    input_signature=[tf.TensorSpec([None], tf.string, name="text")])


def export_tfhub(encoder, preprocessor, export_dir, version=None):
    """Writes `<export_dir>/preprocess/<version>` and `<export_dir>/encoder/<version>` (each atomically).

    Args:
        encoder: a `BertEncoder` (or a task model, whose encoder is exported).
        preprocessor: the `keras_bert.text.BertPreprocessor` of the encoder's vocab.
        export_dir: parent directory of the two model base paths.
        version: int version of both (default: next free of each).

    The encoder takes the dict `input_word_ids`, `input_mask`, `input_type_ids` (int32 [b, s]) and returns
    `pooled_output` [b, h], `sequence_output` [b, s, h], `default` (= pooled_output, as Hub) and
    `encoder_outputs_<i>` [b, s, h] per layer; it is the `__call__` and `serving_default` of the SavedModel
    and the root has `variables` / `trainable_variables`. Returns (preprocess_dir, encoder_dir).
    """
    encoder = encoder_of(encoder)
    check_compatible(encoder, preprocessor)
    if not preprocessor.built:
        preprocessor(tf.constant([""]))  # built on first call, as export needs
    module = _Preprocessing(preprocessor)
    preprocess_dir = publish_version(f"{export_dir}/preprocess", version, lambda tmp: tf.saved_model.save(
        module, tmp, signatures={"serving_default": module.__call__.get_concrete_function()}))

    def call(inputs):
        out = encoder(inputs, training=False)
        named = {"pooled_output": out["pooled_output"], "sequence_output": out["sequence_output"],
                 "default": out["pooled_output"]}
        named.update({f"encoder_outputs_{i}": x for i, x in enumerate(out["encoder_outputs"])})
        return named

    # ExportArchive, not tf.saved_model.save on a Module: the latter's Keras 3 variables are not found by
    # the session-based loader TF Serving uses (see keras_bert.export.servability).
    archive = keras.export.ExportArchive()
    archive.track(encoder)
    spec = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
    archive.add_endpoint("serving_default", call, input_signature=[spec])
    archive.add_endpoint("__call__", call, input_signature=[spec])
    encoder_dir = publish_version(f"{export_dir}/encoder", version, lambda tmp: archive.write_out(tmp, verbose=False))
    return preprocess_dir, encoder_dir
