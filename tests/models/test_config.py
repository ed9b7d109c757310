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


@pytest.mark.parametrize("field, value, expected", [
    ("hidden_dropout_prob", -0.1, r"hidden_dropout_prob must be a probability in \[0, 1\], got -0\.1"),
    ("attention_probs_dropout_prob", 1.5, r"attention_probs_dropout_prob must be a probability in \[0, 1\]"),
    ("hidden_dropout_prob", "0.1", r"hidden_dropout_prob must be a number, got '0\.1' \(str\)"),
    ("layer_norm_eps", 0.0, r"layer_norm_eps must be > 0, got 0\.0"),
    ("layer_norm_eps", None, r"layer_norm_eps must be a number, got None"),
    ("initializer_range", True, r"initializer_range must be a number, got True"),
])
def test_out_of_range_and_mistyped_values_are_refused(field, value, expected):
    with pytest.raises(ValueError, match=expected):
        BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2, **{field: value})
    assert BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2, hidden_dropout_prob=0,
                      attention_probs_dropout_prob=1).hidden_dropout_prob == 0


def test_unknown_keys_warn_once_naming_them(tmp_path, caplog):
    values = {"vocab_size": 10, "hidden_size": 8, "num_attention_heads": 2, "hiden_dropout_prob": 0.3,
              "num_layers": 4, "model_type": "bert", "transformers_version": "4.8.2"}
    (tmp_path / "config.json").write_text(json.dumps(values))
    with caplog.at_level("WARNING", logger="keras_bert"):
        config = BertConfig.from_json_file(str(tmp_path / "config.json"))
    assert config.hidden_dropout_prob == 0.1
    (record,) = caplog.records
    assert "config.json: ignoring unknown config keys hiden_dropout_prob, num_layers" in record.getMessage()


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_tanh", "relu", "silu"])
@pytest.mark.parametrize("fmt", ["google", "huggingface"])
def test_written_configs_read_back_equal(tmp_path, hidden_act, fmt):
    config = BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2, hidden_act=hidden_act,
                        layer_norm_eps=1e-5, hidden_dropout_prob=0.2, initializer_range=0.05)
    config.to_json_file(str(tmp_path / "config.json"), fmt=fmt)
    written = json.loads((tmp_path / "config.json").read_text())
    assert BertConfig.from_json_file(str(tmp_path / "config.json")) == config
    if fmt == "google":
        # Google's modeling.py reads "gelu" as its tanh gelu and ignores keys it does not know.
        assert written["hidden_act"] == {"gelu_tanh": "gelu"}.get(hidden_act, hidden_act)
        assert written.get("keras_bert_hidden_act") == ("gelu_tanh" if hidden_act == "gelu_tanh" else None)
