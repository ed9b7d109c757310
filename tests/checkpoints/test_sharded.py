"""Sharded Hugging Face checkpoints (an index JSON + the shards its weight_map names) load like one file."""

import json
import os
import re

import huggingface_hub
import numpy as np
import pytest
import torch
import transformers
from safetensors.numpy import load_file, save_file

from keras_bert import load_pretrainer
from keras_bert.checkpoints import CheckpointError, detect_format
from tests.checkpoints.conftest import TINY, hf_pretraining_logits, randomize
from tests.checkpoints.test_pretrainer import assert_logits_match

# The tiny model is ~90 KB of float32: 20 KB shards give several files.
SHARD_SIZE = "20KB"
INDEX = {"safetensors": "model.safetensors.index.json", "bin": "pytorch_model.bin.index.json"}


def _save_torch_shards(model, directory):
    """The `.bin` shards + index transformers 4 wrote with safe_serialization=False (transformers 5 writes
    only safetensors): huggingface_hub splits the state dict, torch.save writes each shard."""
    model.config.save_pretrained(directory)
    state = model.state_dict()
    split = huggingface_hub.split_torch_state_dict_into_shards(
        state, filename_pattern="pytorch_model{suffix}.bin", max_shard_size=SHARD_SIZE)
    for filename, keys in split.filename_to_tensors.items():
        torch.save({key: state[key].contiguous() for key in keys}, directory / filename)
    index = {"metadata": split.metadata, "weight_map": split.tensor_to_filename}
    (directory / INDEX["bin"]).write_text(json.dumps(index, indent=2))


@pytest.fixture(params=["safetensors", "bin"])
def sharded_hf(request, tmp_path):
    """(directory, model, index path, shard file names): a random BertForPreTraining saved in shards."""
    model = randomize(transformers.BertForPreTraining(transformers.BertConfig(**TINY)))
    directory = tmp_path / request.param
    if request.param == "safetensors":
        model.save_pretrained(directory, max_shard_size=SHARD_SIZE)
    else:
        _save_torch_shards(model, directory)
    index = directory / INDEX[request.param]
    with open(index) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    assert len(shards) > 1 and all((directory / shard).is_file() for shard in shards)
    assert not {"model.safetensors", "pytorch_model.bin"} & set(os.listdir(directory))
    return directory, model, index, shards


def test_sharded_checkpoint_matches_transformers(sharded_hf, tiny_batch):
    directory, model, _, _ = sharded_hf
    assert detect_format(str(directory)) == "huggingface"
    reference = hf_pretraining_logits(model, tiny_batch)
    assert_logits_match(load_pretrainer(str(directory)), reference, tiny_batch)
    # transformers reads the same shards back: the hand-written .bin index is the real format.
    reloaded = transformers.BertForPreTraining.from_pretrained(str(directory)).eval()
    for ours, ref in zip(hf_pretraining_logits(reloaded, tiny_batch), reference, strict=True):
        np.testing.assert_allclose(ours, ref, atol=0, rtol=0)


def test_missing_shard_names_the_index_and_the_shard(sharded_hf):
    directory, _, index, shards = sharded_hf
    os.remove(directory / shards[-1])
    message = f"{index.name}: shard {shards[-1]} listed in weight_map is missing from {directory}"
    with pytest.raises(CheckpointError, match=re.escape(message)):
        load_pretrainer(str(directory))


@pytest.mark.parametrize("sharded_hf", ["safetensors"], indirect=True)
def test_tensor_absent_from_its_shard_is_named(sharded_hf):
    directory, _, index, _ = sharded_hf
    with open(index) as f:
        weight_map = json.load(f)["weight_map"]
    key = "bert.encoder.layer.1.output.dense.weight"
    tensors = load_file(directory / weight_map[key])
    del tensors[key]
    save_file(tensors, directory / weight_map[key], metadata={"format": "pt"})
    message = f"{index.name}: 1 tensors of weight_map are not in their shard {weight_map[key]}: {key}"
    with pytest.raises(CheckpointError, match=re.escape(message)):
        load_pretrainer(str(directory))
