"""Export with nothing repeated: the preprocessor comes from the model, overrides that contradict it are
refused, and a classifier serves its label names."""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertConfig, BertEncoder, load_pretrained_model
from keras_bert.export import ExportError, export_saved_model, servability
from keras_bert.export.preprocessing import serving_preprocessor
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie", "film", "the", "was", "!"]
LABELS = ["neg", "neutral", "pos"]
TEXTS = ["Good movie!", "the film was bad", "", "film film film film film film film film"]


def _vocab(tmp_path, words=WORDS, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("\n".join(words) + "\n")
    return str(path)


def _classifier(tmp_path, seq_length=8):
    preprocessor = BertPreprocessor(BertTokenizer(_vocab(tmp_path)), seq_length)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16)
    return BertClassifier(BertEncoder(config), labels=LABELS, preprocessor=preprocessor)


@pytest.mark.slow
def test_loaded_keras_exports_alone_and_serves_label_names(tmp_path):
    clf = _classifier(tmp_path)
    path = str(tmp_path / "clf.keras")
    clf.save(path)
    os.remove(clf.preprocessor.tokenizer.vocab_file)
    loaded = keras.saving.load_model(path)
    version_dir = export_saved_model(loaded, tmp_path / "export")  # no preprocessor, no flags
    logits = loaded.predict(TEXTS, verbose=0)
    want_labels = np.array([LABELS[i].encode() for i in logits.argmax(-1)], dtype=object)
    inputs = {"text": np.array([t.encode() for t in TEXTS], dtype=object)}
    servability.save_check_arrays(tmp_path / "run.npz", inputs, {"logits": logits, "label": want_labels})
    (report,) = servability.check_servable_subprocess(
        [{"export_dir": version_dir,
          "runs": [{"signature": "serving_default", "arrays": tmp_path / "run.npz"}]}])
    assert "error" not in report, report["error"]
    served = report["runs"][0]["outputs"]
    assert served["label"] == [LABELS[i] for i in np.argmax(served["logits"], axis=-1)]
    assert served["label"] == [label.decode() for label in want_labels]
    assert served["label_id"] == logits.argmax(-1).tolist()


def test_contradicting_overrides_are_refused(tmp_path):
    clf = _classifier(tmp_path)
    assert serving_preprocessor(clf) is clf.preprocessor
    path = str(tmp_path / "clf.keras")
    clf.save(path)
    # The loader applies the overrides to a .keras save's own preprocessor (what the export CLIs load).
    longer = load_pretrained_model(path, seq_length=12, lower_case=True).preprocessor
    assert longer.seq_length == 12 and longer.tokenizer.vocab == WORDS and longer.tokenizer.lower_case
    with pytest.raises(ValueError, match="seq_length=17; expected 3 <= seq_length <= the model's "
                       "max_position_embeddings=16"):
        load_pretrained_model(path, seq_length=17)
    bigger = _vocab(tmp_path, WORDS + ["extra"], "bigger.txt")
    with pytest.raises(ValueError, match=r"bigger\.txt has 13 tokens but the model was trained with 12"):
        load_pretrained_model(path, vocab_file=bigger)
    swapped = _vocab(tmp_path, WORDS[:5] + ["bad", "good"] + WORDS[7:], "swapped.txt")
    with pytest.raises(ValueError, match=r"swapped\.txt has 'bad' at id 5 but the model was trained with "
                       "'good'"):
        load_pretrained_model(path, vocab_file=swapped)
    with pytest.raises(ValueError, match=r"lower_case=False but .*clf\.keras was trained with "
                       "lower_case=True"):
        load_pretrained_model(path, lower_case=False)
    cased = BertPreprocessor(BertTokenizer(vocabulary=WORDS, lower_case=False), 8)
    with pytest.raises(ExportError, match="lower_case=False but the model was trained with lower_case=True"):
        export_saved_model(clf, tmp_path / "export", cased)
    assert not os.path.exists(tmp_path / "export")


def test_classifier_label_output_in_graph(tmp_path):
    from keras_bert.export.saved_model import serving_outputs

    clf = _classifier(tmp_path)
    outputs = serving_outputs(clf, clf.preprocessor(tf.constant(TEXTS)))
    assert outputs["label"].dtype == tf.string
    np.testing.assert_array_equal(outputs["label"].numpy(),
                                  [LABELS[i].encode() for i in outputs["logits"].numpy().argmax(-1)])
    assert "label" not in serving_outputs(BertClassifier(clf.encoder, 3),
                                          clf.preprocessor(tf.constant(TEXTS)))
