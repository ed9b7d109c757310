"""The TF Hub pair trains as TF Hub's BERT models do: TF's BERT tutorials' model code (tf_keras, which
`tf.keras` is under TF_USE_LEGACY_KERAS=1, + tensorflow_hub) fine-tunes the encoder and `encoder.mlm`,
saves and reloads; `bert_pack_inputs` refuses what it cannot pack. A tiny BertPretrainer (16 hidden units)."""

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_hub as hub
import tf_keras

from keras_bert import BertConfig, BertEncoder, BertPretrainer
from keras_bert.export import export_tfhub
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "dog", "lazy", "a"]
TEXTS = ["the quick fox", "a lazy dog", "the brown fox", "the dog", "a quick brown fox", "lazy lazy dog"]
LABELS = np.array([1, 0, 1, 0, 1, 0], np.float32)  # 1: a fox
MAX_POSITIONS = 32


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(pretrainer, preprocess_dir, encoder_dir)."""
    (vocab := tmp_path_factory.mktemp("vocab") / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    encoder = BertEncoder(BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=MAX_POSITIONS))
    pretrainer = BertPretrainer(encoder, preprocessor=BertPreprocessor(BertTokenizer(str(vocab)), 16))
    pretrainer(pretrainer.preprocessor(tf.constant(TEXTS[:1]))
               | {"masked_lm_positions": tf.zeros([1, 2], tf.int32)})
    return (pretrainer, *export_tfhub(pretrainer, pretrainer.preprocessor, tmp_path_factory.mktemp("hub")))


@pytest.fixture(scope="module")
def preprocess(exported):
    """The preprocessing SavedModel loaded once (it has no variables a test could change)."""
    return tf.saved_model.load(exported[1])


def _values(variables):
    return [v.numpy().copy() for v in variables]


def test_tutorial_classifier_fine_tunes_saves_and_reloads(exported, tmp_path):
    pretrainer, preprocess_dir, encoder_dir = exported
    # The model code of TF's "Classify text with BERT" tutorial, as BUILD.md shows it.
    text_input = tf_keras.layers.Input(shape=(), dtype=tf.string, name="text")
    encoder_inputs = hub.KerasLayer(preprocess_dir, name="preprocessing")(text_input)
    encoder = hub.KerasLayer(encoder_dir, trainable=True, name="BERT_encoder")
    net = tf_keras.layers.Dropout(0.1)(encoder(encoder_inputs)["pooled_output"])
    model = tf_keras.Model(text_input, tf_keras.layers.Dense(1, name="classifier")(net))
    model.compile(optimizer=tf_keras.optimizers.Adam(1e-2),
                  loss=tf_keras.losses.BinaryCrossentropy(from_logits=True), metrics=["accuracy"])
    # The encoder's own variables only: the pretrainer's heads are not trained by a classifier.
    assert len(encoder.trainable_weights) == len(pretrainer.encoder.trainable_variables)
    before = _values(encoder.trainable_weights)
    history = model.fit(tf.constant(TEXTS), LABELS, batch_size=3, epochs=15, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.5 * losses[0], losses
    unchanged = [w.name for w, old in zip(encoder.trainable_weights, before, strict=True)
                 if np.array_equal(w.numpy(), old)]
    assert unchanged == []  # every encoder variable had a gradient

    model.save(str(tmp_path / "classifier"), include_optimizer=False)
    reloaded = tf.saved_model.load(str(tmp_path / "classifier"))
    np.testing.assert_allclose(tf.sigmoid(reloaded(tf.constant(TEXTS))).numpy(),
                               tf.sigmoid(model(tf.constant(TEXTS))).numpy(), atol=1e-6)


def _names(variables):
    """Sorted names of tf.Variables, or of the Keras variables' own tf.Variables."""
    return sorted((v.value if isinstance(v, keras.Variable) else v).name for v in variables)


def test_mlm_fine_tunes_through_hub_keras_layer(exported, preprocess):
    pretrainer, _, encoder_dir = exported
    loaded = tf.saved_model.load(encoder_dir)
    assert _names(loaded.trainable_variables) == _names(pretrainer.encoder.trainable_variables)
    # `.mlm` reads the encoder and the MLM head, not the next-sentence head.
    assert _names(loaded.mlm.trainable_variables) == [
        name for name in _names(pretrainer.trainable_variables) if not name.startswith("next_sentence/")]
    mlm = hub.KerasLayer(loaded.mlm, trainable=True)
    names = ("input_word_ids", "input_mask", "input_type_ids", "masked_lm_positions")
    inputs = {name: tf_keras.layers.Input(shape=(None,), dtype=tf.int32, name=name) for name in names}
    model = tf_keras.Model(inputs, mlm(inputs)["mlm_logits"])
    model.compile(optimizer=tf_keras.optimizers.Adam(1e-2),
                  loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    packed = {name: value.numpy() for name, value in preprocess(tf.constant(TEXTS)).items()}
    positions = np.array([[1, 2]] * len(TEXTS), np.int32)
    targets = np.take_along_axis(packed["input_word_ids"], positions, axis=1)
    masked = packed["input_word_ids"].copy()
    np.put_along_axis(masked, positions, WORDS.index("[MASK]"), axis=1)
    before = _values(mlm.trainable_weights)
    losses = model.fit({**packed, "input_word_ids": masked, "masked_lm_positions": positions}, targets,
                       batch_size=3, epochs=10, verbose=0).history["loss"]
    assert losses[-1] < 0.7 * losses[0], losses
    unchanged = sorted(w.name for w, old in zip(mlm.trainable_weights, before, strict=True)
                       if np.array_equal(w.numpy(), old))
    assert unchanged == ["pooler/bias:0", "pooler/kernel:0"]  # pooled_output is not in an MLM loss


def _segments(preprocess, *batches):
    return [preprocess.tokenize(tf.constant(batch)) for batch in batches]


# (segments' batches, seq_length, the line): what bert_pack_inputs refuses.
PACK_ROWS = [
    ((TEXTS[:2], TEXTS[:3]), None,
     "bert_pack_inputs: segments 0 and 1 must have the same batch size; got 2 and 3"),
    ((TEXTS[:2], TEXTS[:2]), 2, "bert_pack_inputs: seq_length must be in [3, 32] for 2 segment(s): [CLS] and "
                                "a [SEP] per segment, at most the encoder positions; got 2"),
    ((TEXTS[:2],), 1, "bert_pack_inputs: seq_length must be in [2, 32]"),
    ((TEXTS[:2],), 0, "seq_length must be in [2, 32]"),
    ((TEXTS[:2],), -1, "[2, 32] for 1 segment(s)"),
    ((TEXTS[:2], TEXTS[:2]), tf.constant(1000, tf.int64), "encoder positions; got 1000"),
]


def test_bert_pack_inputs_refuses_with_one_line(preprocess):
    for batches, seq_length, line in PACK_ROWS:
        segments = _segments(preprocess, *batches)
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            preprocess.bert_pack_inputs(segments, seq_length=seq_length)
        assert line in caught.value.message, (seq_length, caught.value.message)
    # The flat signature TF Serving calls (Python's binding refuses a scalar before the graph).
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"serving input `text` must be tf.string of shape \[batch\]; got shape \[\]"):
        preprocess.signatures["serving_default"](text=tf.constant("the fox"))


def test_bert_pack_inputs_takes_int32_and_int64_lengths_up_to_the_encoders(exported, preprocess):
    pretrainer = exported[0]
    segments = _segments(preprocess, TEXTS[:2], TEXTS[2:4])
    for seq_length in (tf.constant(3, tf.int32), tf.constant(MAX_POSITIONS, tf.int64), 7):
        packed = preprocess.bert_pack_inputs(segments, seq_length=seq_length)
        want = BertPreprocessor(pretrainer.preprocessor.tokenizer, int(seq_length))(
            (tf.constant(TEXTS[:2]), tf.constant(TEXTS[2:4])))
        for name, value in want.items():
            np.testing.assert_array_equal(packed[name].numpy(), value.numpy())
