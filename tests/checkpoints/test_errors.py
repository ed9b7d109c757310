"""Checkpoints that do not fit raise one clear error naming the variable or path; nothing loads in part."""

import json
import os

import pytest
from safetensors.numpy import load_file, save_file

from keras_bert import BertEncoder, load_encoder, load_pretrainer
from keras_bert.checkpoints import CheckpointError, detect_format, save_google_checkpoint


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


def test_wrong_hidden_size_names_the_variable_and_shapes(tiny_hf_pretraining):
    directory, _ = tiny_hf_pretraining
    _edit_config(directory, hidden_size=64)
    with pytest.raises(CheckpointError, match=r"'bert\.embeddings\.word_embeddings\.weight' has shape "
                                              r"\(50, 32\), expected \(50, 64\)"):
        BertEncoder.from_pretrained(directory)


def test_missing_encoder_variable_is_named(tiny_hf_pretraining):
    directory, _ = tiny_hf_pretraining
    _drop_key(directory, "bert.encoder.layer.1.attention.self.value.weight")
    with pytest.raises(CheckpointError, match=r"'bert\.encoder\.layer\.1\.attention\.self\.value\.weight' is "
                                              r"missing"):
        load_encoder(directory)


def test_more_layers_than_the_config_is_an_error(tiny_hf_pretraining):
    directory, _ = tiny_hf_pretraining
    _edit_config(directory, num_hidden_layers=1)
    with pytest.raises(CheckpointError, match=r"'bert\.encoder\.layer\.1\..*num_hidden_layers=1"):
        load_encoder(directory)


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
