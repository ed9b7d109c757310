"""Checkpoints that do not fit raise one clear error naming the variable or path; nothing loads in part."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_bert import BertEncoder, load_encoder, load_pretrainer
from keras_bert.checkpoints import CheckpointError, detect_format, save_google_checkpoint, save_keras_hub


def _edit_config(directory, **changes):
    path = os.path.join(directory, "config.json")
    with open(path) as f:
        config = json.load(f)
    config.update(changes)
    with open(path, "w") as f:
        json.dump(config, f)


def _drop_key(directory, key):
    path = os.path.join(directory, "model.safetensors")
    tensors = load_file(path)
    del tensors[key]
    save_file(tensors, path, metadata={"format": "pt"})


def test_missing_encoder_variable_is_named(tiny_hf_pretraining):
    directory, _ = tiny_hf_pretraining
    _drop_key(directory, "bert.encoder.layer.1.attention.self.value.weight")
    with pytest.raises(CheckpointError, match=r"'bert\.encoder\.layer\.1\.attention\.self\.value\.weight' is "
                                              r"missing"):
        load_encoder(directory)


# How each format's config file names the sizes (the tiny checkpoint: 2 layers, 32 wide, 50 tokens).
CONFIG_KEYS = {"huggingface": ("config.json", "num_hidden_layers", "hidden_size"),
               "keras_hub": ("config.json", "num_layers", "hidden_dim"),
               "google": ("bert_config.json", "num_hidden_layers", "hidden_size")}


def _checkpoint_of(directory, fmt, tmp_path):
    """The tiny Hugging Face checkpoint `directory` written in format `fmt`; its directory."""
    if fmt == "huggingface":
        return directory
    encoder = load_encoder(directory)
    if fmt == "keras_hub":
        return save_keras_hub(encoder, str(tmp_path / "preset"))
    save_google_checkpoint(encoder, str(tmp_path / "google" / "bert_model.ckpt"))
    return str(tmp_path / "google")


def _edit_sizes(directory, fmt, **changes):
    name, layers, hidden = CONFIG_KEYS[fmt]
    path = os.path.join(directory, name)
    with open(path) as f:
        values = json.load(f)
    keys = {"layers": layers, "hidden": hidden}
    settings = values["config"] if fmt == "keras_hub" else values
    settings.update({keys[key]: value for key, value in changes.items()})
    with open(path, "w") as f:
        json.dump(values, f)
    return path


@pytest.mark.parametrize("fmt", sorted(CONFIG_KEYS))
@pytest.mark.parametrize("changes, stated, held", [
    ({"layers": 1}, "{layers}=1", "holds 2 transformer layers"),  # fewer: once loaded silently (KerasHub)
    ({"layers": 3}, "{layers}=3", "holds 2 transformer layers"),
    ({"hidden": 64}, "hidden_size=64", "holds word embeddings of 32"),
])
def test_a_config_that_disagrees_with_its_weights_is_refused_naming_both(tiny_hf_pretraining, tmp_path, fmt,
                                                                         changes, stated, held):
    directory = _checkpoint_of(tiny_hf_pretraining[0], fmt, tmp_path)
    config_file = _edit_sizes(directory, fmt, **changes)
    stated = stated.format(layers="num_hidden_layers")  # the BertConfig field, whatever the file calls it
    with pytest.raises(CheckpointError) as raised:
        BertEncoder.from_pretrained(directory)
    message = str(raised.value)
    assert message.startswith(f"{config_file} states {stated} but ") and held in message, message


def test_partial_head_is_an_error_not_a_silent_init(tiny_hf_pretraining):
    directory, _ = tiny_hf_pretraining
    _drop_key(directory, "cls.predictions.transform.LayerNorm.weight")
    load_encoder(directory)  # heads do not matter to the encoder
    with pytest.raises(CheckpointError, match=r"'cls\.predictions\.transform\.LayerNorm\.weight' is missing"):
        load_pretrainer(directory)


def test_unknown_and_missing_paths(tmp_path):
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match=r"unknown checkpoint format \(found \['notes\.txt'\]\)"):
        load_encoder(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_encoder(str(tmp_path / "nowhere"))


def test_google_checkpoint_needs_its_config(tiny_hf_pretraining, tmp_path):
    prefix = str(tmp_path / "google" / "bert_model.ckpt")
    save_google_checkpoint(load_encoder(tiny_hf_pretraining[0]), prefix)
    assert detect_format(prefix) == detect_format(str(tmp_path / "google")) == "google"
    os.remove(tmp_path / "google" / "bert_config.json")
    with pytest.raises(CheckpointError, match=r"without bert_config\.json"):
        load_encoder(prefix)


def test_truncated_weight_files_name_the_file(tiny_hf_pretraining, tmp_path):
    directory, _ = tiny_hf_pretraining
    path = os.path.join(directory, "model.safetensors")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    with pytest.raises(CheckpointError, match=r"model\.safetensors: cannot read the safetensors file"):
        load_encoder(directory)
    (tmp_path / "torch").mkdir()
    with open(os.path.join(directory, "config.json")) as f:
        (tmp_path / "torch" / "config.json").write_text(f.read())
    (tmp_path / "torch" / "pytorch_model.bin").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin: cannot read the torch file"):
        load_encoder(str(tmp_path / "torch"))
    (tmp_path / "model.keras").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(CheckpointError, match=r"model\.keras: not a complete \.keras \(zip\) file"):
        load_encoder(str(tmp_path / "model.keras"))


def test_truncated_tf1_checkpoint_names_the_prefix(tiny_hf_pretraining, tmp_path):
    prefix = str(tmp_path / "google" / "bert_model.ckpt")
    save_google_checkpoint(load_encoder(tiny_hf_pretraining[0]), prefix)
    (data_file,) = [str(path) for path in (tmp_path / "google").glob("bert_model.ckpt.data-*")]
    with open(data_file, "r+b") as f:
        f.truncate(os.path.getsize(data_file) // 2)
    with pytest.raises(CheckpointError, match=r"bert_model\.ckpt: cannot read the TF1 checkpoint"):
        load_encoder(prefix)


@pytest.mark.parametrize("text, expected", [
    ("[1, 2]", r"config\.json: expected a JSON object of config fields, got list"),
    ('{"vocab_size": 50,', r"config\.json:1: not valid JSON"),
    ('{"vocab_size": "50"}', r"config\.json: BertConfig\.vocab_size must be a positive integer, got '50'"),
])
def test_malformed_huggingface_config_names_the_file(tiny_hf_pretraining, text, expected):
    directory, _ = tiny_hf_pretraining
    with open(os.path.join(directory, "config.json"), "w") as f:
        f.write(text)
    with pytest.raises(CheckpointError, match=expected):
        load_encoder(directory)


def test_a_refused_checkpoint_changes_no_variable(tiny_hf_pretraining):
    from keras_bert.checkpoints.huggingface import read_huggingface
    from keras_bert.checkpoints.mapping import assign_encoder

    directory, _ = tiny_hf_pretraining
    config, weights = read_huggingface(directory)
    config.num_hidden_layers = 1  # the checkpoint's layer_1 has no place: refused after the shape checks
    encoder = BertEncoder(config)
    before = [variable.numpy().copy() for variable in encoder.weights]
    with pytest.raises(CheckpointError, match=r"has no place in a model with num_hidden_layers=1"):
        assign_encoder(encoder, weights)
    for variable, value in zip(encoder.weights, before, strict=True):
        np.testing.assert_array_equal(variable.numpy(), value, err_msg=variable.path)
