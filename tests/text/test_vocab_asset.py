"""A `.keras` file holds its tokenizer's vocabulary as the vocab.txt asset, not inline in config.json: a load
that cannot rebuild the model (keras_bert not imported) prints a short config, and files saved with the
vocabulary inline still load."""

import json
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.text.tokenizer import ASSET_KEY

# A vocabulary the size of BERT's (30,522), whose inline form made Keras' error 323,029 characters.
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "."] + [
    f"word{i}" for i in range(30_512)]
TEXTS = ["the cats sat.", "word17 word29999 sat", "an unknown word4"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(classifier, path of its .keras save) over VOCAB: 1 layer, 8 wide."""
    tokenizer = BertTokenizer(vocabulary=VOCAB, lower_case=True)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    clf = BertClassifier(BertEncoder(config), labels=["neg", "pos"],
                         preprocessor=BertPreprocessor(tokenizer, seq_length=12))
    path = str(tmp_path_factory.mktemp("asset") / "clf.keras")
    clf.save(path)
    return clf, path


def _config_json(path):
    with zipfile.ZipFile(path) as archive:
        return archive.read("config.json").decode("utf-8")


def _tokenizer_config(config):
    return config["config"]["preprocessor"]["config"]["tokenizer"]["config"]


def test_config_json_names_the_asset_and_the_loaded_model_matches(saved):
    clf, path = saved
    text = _config_json(path)
    assert len(text) < 10_000 and "word29999" not in text  # was: 331,097 characters, the vocab inline
    record = _tokenizer_config(json.loads(text))
    assert record["vocabulary"] is None and record[ASSET_KEY]["size"] == 30_522
    assert record[ASSET_KEY]["special_ids"] == {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}
    loaded = keras.saving.load_model(path)
    ids = loaded.preprocessor(tf.constant(TEXTS))["input_word_ids"].numpy()
    np.testing.assert_array_equal(ids, clf.preprocessor(tf.constant(TEXTS))["input_word_ids"].numpy())
    assert ids[0, :7].tolist() == [2, 5, 6, 8, 7, 9, 3]  # [CLS] the cat ##s sat . [SEP]
    assert ids[1, 1:3].tolist() == [10 + 17, 10 + 29_999] and ids[2, 1:3].tolist() == [1, 1]
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), clf.predict(TEXTS, verbose=0), atol=1e-6)
    # In memory the vocabulary stays inline: copies from get_config (clone, float form, students) need no file
    copy = BertClassifier.from_config(loaded.get_config())
    assert _tokenizer_config({"config": copy.get_config()})["vocabulary"] == VOCAB
    np.testing.assert_array_equal(copy.preprocessor(tf.constant(TEXTS))["input_word_ids"].numpy(), ids)


def test_config_alone_rebuilds_a_tokenizer_that_asks_for_its_asset(saved):
    _, path = saved
    own = json.loads(_config_json(path))["config"]["preprocessor"]
    preprocessor = keras.saving.deserialize_keras_object(own)
    tokenizer = preprocessor.tokenizer
    assert (tokenizer.vocab_size, tokenizer.cls_id, preprocessor.packer.end_id) == (30_522, 2, 3)
    with pytest.raises(ValueError, match=r"vocabulary \(30522 tokens\) is the vocab.txt asset of the "
                                         r"\.keras file its config came from and was not read"):
        tokenizer(tf.constant(TEXTS))
    tokenizer.fill_from_keras_file(path)
    assert tokenizer.vocab == VOCAB and tokenizer.token_to_id("word5") == 15


def test_load_without_keras_bert_imported_fails_in_a_short_message(saved):
    _, path = saved
    code = "import keras, sys\nkeras.saving.load_model(sys.argv[1])"
    result = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    error = result.stderr[result.stderr.index("Traceback"):]
    assert "keras_bert>BertClassifier" in error
    assert len(error) < 5_000, f"{len(error)} characters"  # was: 323,029


def test_a_file_with_the_vocabulary_inline_still_loads(saved, tmp_path):
    """Files saved before the asset form: the vocabulary in config.json, the asset checked against it."""
    clf, path = saved
    config = json.loads(_config_json(path))
    record = _tokenizer_config(config)
    del record[ASSET_KEY]
    record["vocabulary"] = VOCAB
    inline = str(tmp_path / "inline.keras")
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(inline, "w") as target:
        for item in source.infolist():
            data = json.dumps(config) if item.filename == "config.json" else source.read(item.filename)
            target.writestr(item, data)
    loaded = keras.saving.load_model(inline)
    assert loaded.preprocessor.tokenizer.vocab == VOCAB
    np.testing.assert_allclose(loaded.predict(TEXTS, verbose=0), clf.predict(TEXTS, verbose=0), atol=1e-6)
