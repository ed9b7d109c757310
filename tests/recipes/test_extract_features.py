"""extract_features: JSON lines whose vectors are the encoder's layer outputs (checked against the
encoder)."""

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
    assert [r["linex_index"] for r in records] == [0, 1, 2]  # the empty line is skipped

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
