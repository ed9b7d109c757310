import json

import pytest

from keras_bert.config import PRESETS, BertConfig


def test_presets_follow_the_published_family():
    base = BertConfig.from_preset("base", vocab_size=30522)
    assert (base.num_hidden_layers, base.hidden_size, base.num_attention_heads, base.intermediate_size) == (
        12, 768, 12, 3072)
    tiny = BertConfig.from_preset("tiny", vocab_size=100)
    assert (tiny.num_hidden_layers, tiny.hidden_size, tiny.num_attention_heads) == (2, 128, 2)
    assert set(PRESETS) == {"tiny", "mini", "small", "medium", "base", "large"}


def test_reads_google_and_huggingface_files(tmp_path):
    google = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
              "hidden_size": 256, "initializer_range": 0.02, "intermediate_size": 1024,
              "max_position_embeddings": 512, "num_attention_heads": 4, "num_hidden_layers": 4,
              "type_vocab_size": 2, "vocab_size": 30522}
    (tmp_path / "bert_config.json").write_text(json.dumps(google))
    config = BertConfig.from_json_file(str(tmp_path / "bert_config.json"))
    assert config.hidden_size == 256 and config.layer_norm_eps == 1e-12

    config.to_json_file(str(tmp_path / "config.json"), fmt="huggingface")
    written = json.loads((tmp_path / "config.json").read_text())
    assert written["model_type"] == "bert" and written["hidden_size"] == 256
    assert BertConfig.from_json_file(str(tmp_path / "config.json")) == config

    tanh = BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2, hidden_act="gelu_new")
    assert tanh.hidden_act == "gelu_tanh"
    tanh.to_json_file(str(tmp_path / "hf_tanh.json"), fmt="huggingface")
    assert json.loads((tmp_path / "hf_tanh.json").read_text())["hidden_act"] == "gelu_new"


def test_bad_configs_name_the_field(tmp_path):
    with pytest.raises(ValueError, match="hidden_size=30 is not a multiple of num_attention_heads=4"):
        BertConfig(vocab_size=10, hidden_size=30, num_attention_heads=4)
    with pytest.raises(ValueError, match="hidden_act"):
        BertConfig(vocab_size=10, hidden_act="swishy")
    path = tmp_path / "broken.json"
    path.write_text('{"hidden_size": 8,\n "vocab_size": }')
    with pytest.raises(ValueError, match=r"broken.json:2: not valid JSON"):
        BertConfig.from_json_file(str(path))
    path.write_text('{"hidden_size": 8}')
    with pytest.raises(ValueError, match="no 'vocab_size'"):
        BertConfig.from_json_file(str(path))
    with pytest.raises(FileNotFoundError, match="missing.json"):
        BertConfig.from_json_file(str(tmp_path / "missing.json"))
