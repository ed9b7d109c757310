"""extract_features: JSON lines whose vectors are the encoder's layer outputs (checked against the
encoder)."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder, save_pretrained
from keras_bert.config import BertConfig
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import run_recipe, write_vocab

LINES = ["The quick brown fox.", "Who jumped? ||| The quick brown fox jumped over the dog.", "",
         "Dogs sleep."]


@pytest.mark.slow
def test_layers_of_single_and_pair_lines(tmp_path):
    vocab, size = write_vocab(tmp_path / "vocab.txt", LINES)
    encoder = BertEncoder(BertConfig(vocab_size=size, hidden_size=32, num_hidden_layers=3,
                                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=64))
    checkpoint = save_pretrained(encoder, str(tmp_path / "ckpt"), vocab)
    (tmp_path / "input.txt").write_text("\n".join(LINES) + "\n")
    output = tmp_path / "features.jsonl"
    run_recipe("extract_features", f"--init_checkpoint={checkpoint}",
               f"--input_file={tmp_path / 'input.txt'}", f"--output_file={output}", "--layers=-1,0",
               "--max_seq_length=24", "--batch_size=2")
    records = [json.loads(line) for line in output.read_text().splitlines()]
    # Every line has its record, numbered as the input (was: the empty line dropped, "Dogs sleep." as 2).
    assert [r["linex_index"] for r in records] == [0, 1, 2, 3]
    assert [t["token"] for t in records[2]["features"]] == ["[CLS]", "[SEP]"]
    assert [t["token"] for t in records[3]["features"]] == ["[CLS]", "dogs", "sleep", ".", "[SEP]"]

    preprocessor = BertPreprocessor(BertTokenizer(vocab), 24)
    inputs = preprocessor((tf.constant(["Who jumped?"]),
                           tf.constant(["The quick brown fox jumped over the dog."])))
    outputs = encoder(inputs)["encoder_outputs"]
    tokens = records[1]["features"]
    length = int(np.asarray(inputs["input_mask"]).sum())
    assert len(tokens) == length and tokens[0]["token"] == "[CLS]" and tokens[-1]["token"] == "[SEP]"
    assert [t["token"] for t in tokens].count("[SEP]") == 2
    for layer_position, layer in ((0, -1), (1, 0)):
        got = np.array([t["layers"][layer_position]["values"] for t in tokens])
        assert tokens[0]["layers"][layer_position]["index"] == layer
        np.testing.assert_allclose(got, np.asarray(outputs[layer])[0, :length], atol=2e-6)


def test_every_input_line_keeps_its_index(tmp_path, tiny_config):
    # As the original extract_features.py: a blank line is an example ([CLS] [SEP]), not a renumbering.
    from keras_bert.tasks import feature_extraction

    (tmp_path / "input.txt").write_text("a b\n\n   \nc ||| d\n", encoding="utf-8")
    pairs = feature_extraction.read_lines(tmp_path / "input.txt")
    assert pairs == [("a b", None), ("", None), ("", None), ("c", "d")]
    vocab, size = write_vocab(tmp_path / "vocab.txt", ["a b c d"])
    encoder = BertEncoder(dataclasses.replace(tiny_config, vocab_size=size))
    output = tmp_path / "features.jsonl"
    feature_extraction.write_features(encoder, BertPreprocessor(BertTokenizer(vocab), 16), pairs, [-1],
                                      str(output), batch_size=3)
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [(r["linex_index"], [t["token"] for t in r["features"]]) for r in records] == [
        (0, ["[CLS]", "a", "b", "[SEP]"]), (1, ["[CLS]", "[SEP]"]), (2, ["[CLS]", "[SEP]"]),
        (3, ["[CLS]", "c", "[SEP]", "d", "[SEP]"])]
    (tmp_path / "blank.txt").write_text("\n \n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"blank\.txt: no non-empty lines"):
        feature_extraction.read_lines(tmp_path / "blank.txt")
