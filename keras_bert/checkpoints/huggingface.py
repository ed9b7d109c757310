"""Hugging Face BERT directories: `config.json` + `model.safetensors` (or `pytorch_model.bin`), or the
sharded form transformers writes past `max_shard_size`: `model.safetensors.index.json` (or
`pytorch_model.bin.index.json`), whose "weight_map" names the shard file of each tensor.

State-dict keys are Google's names with "." for "/", `layer.i` for `layer_i`, an optional `bert.` prefix,
`weight`/`bias` (old files: `gamma`/`beta`) for LayerNorm, and torch Linear weights stored [out, in] where
Google's kernels are [in, out]. safetensors is read with numpy; torch is needed only for `.bin` files.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
from safetensors.numpy import load_file, save_file

from keras_bert.checkpoints.files import atomic_files, copy_vocab
from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights, collect_weights, split_model
from keras_bert.config import BertConfig
from keras_bert.text.unicode_rules import MAX_CHARS_PER_WORD
from keras_bert.textfiles import read_json

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
TORCH_FILE = "pytorch_model.bin"
FAST_TOKENIZER_FILE = "tokenizer.json"  # a `tokenizers` fast tokenizer, all transformers 5 writes beside the weights
INDEX_SUFFIX = ".index.json"
# In order of preference: safetensors before torch, one file before shards.
WEIGHTS_FILES = (SAFETENSORS_FILE, SAFETENSORS_FILE + INDEX_SUFFIX, TORCH_FILE, TORCH_FILE + INDEX_SUFFIX)
_EMBEDDINGS = ("word_embeddings", "position_embeddings", "token_type_embeddings")
# Buffers and tied copies that carry no weights of their own.
_NOT_WEIGHTS = ("embeddings.position_ids", "embeddings.token_type_ids", "cls.predictions.decoder.weight")


def weights_file(directory: str) -> str | None:
    for name in WEIGHTS_FILES:
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return None


def is_huggingface_directory(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, CONFIG_FILE)) and weights_file(directory) is not None


def _shards(path: str) -> dict[str, list[str] | None]:
    """Weight file -> the tensor names it must hold (None: whatever it holds). A single file is its own
    shard; an index file lists its shards in "weight_map"."""
    if not path.endswith(INDEX_SUFFIX):
        return {path: None}
    try:
        weight_map = read_json(path)["weight_map"]
        shards = {}
        for key, shard in weight_map.items():
            shards.setdefault(os.path.join(os.path.dirname(path), shard), []).append(key)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointError(f"{path}: not a Hugging Face index file (expected JSON with a \"weight_map\" "
                              f"of tensor name -> shard file): {e}") from None
    for shard in shards:
        if not os.path.isfile(shard):
            raise CheckpointError(f"{path}: shard {os.path.basename(shard)} listed in weight_map is missing "
                                  f"from {os.path.dirname(path)}")
    return shards


def _load_file(path: str) -> dict[str, np.ndarray]:
    """The tensors of one weight file; a file that cannot be read (truncated, not safetensors/torch)
    raises CheckpointError naming it."""
    if path.endswith(".safetensors"):
        try:
            return load_file(path)
        except Exception as e:  # safetensors raises its own SafetensorError, or OSError
            raise CheckpointError(f"{path}: cannot read the safetensors file ({type(e).__name__}: {e}); is it "
                                  f"truncated or still being written?") from None
    try:
        import torch
    except ImportError:
        raise ImportError(f"{path}: reading a .bin checkpoint needs torch (pip install torch), or convert "
                          f"the checkpoint to model.safetensors") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises RuntimeError, EOFError or pickle errors by how the file is broken
        raise CheckpointError(f"{path}: cannot read the torch file ({type(e).__name__}: {e}); is it "
                              f"truncated or still being written?") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: expected a state dict (tensor name -> tensor), got {type(state).__name__}")
    return {key: value.float().numpy() if value.is_floating_point() else value.numpy()
            for key, value in state.items()}


def _load_state_dict(path: str) -> dict[str, np.ndarray]:
    """All tensors of the weight file or index file `path`, every shard read."""
    state = {}
    for shard, keys in _shards(path).items():
        tensors = _load_file(shard)
        absent = [key for key in keys or () if key not in tensors]
        if absent:
            raise CheckpointError(f"{path}: {len(absent)} tensors of weight_map are not in their shard "
                                  f"{os.path.basename(shard)}: {', '.join(absent[:6])}")
        state.update(tensors)
    return state


def google_name(key: str) -> tuple[str, bool] | None:
    """Hugging Face key -> (Google name, transpose?), or None for a key that is not a BERT weight."""
    key = key.removeprefix("bert.")
    if key in _NOT_WEIGHTS or not key.startswith(("embeddings.", "encoder.", "pooler.", "cls.")):
        return None
    module, _, leaf = re.sub(r"\blayer\.(\d+)\b", r"layer_\1", key).rpartition(".")
    module = module.replace(".", "/")
    if not module.startswith("cls/"):
        module = "bert/" + module
    if module.endswith("/LayerNorm"):
        return f"{module}/{'gamma' if leaf in ('weight', 'gamma') else 'beta'}", False
    if module.endswith(_EMBEDDINGS):
        return module, False
    if module in ("cls/predictions", "cls/predictions/decoder"):
        return "cls/predictions/output_bias", False
    if module == "cls/seq_relationship":
        return f"{module}/output_{'weights' if leaf == 'weight' else 'bias'}", False
    return f"{module}/{'kernel' if leaf == 'weight' else 'bias'}", leaf == "weight"


def huggingface_key(name: str) -> tuple[str, bool]:
    """Google name -> (Hugging Face key without the `bert.` prefix, transpose?)."""
    module, _, leaf = name.rpartition("/")
    module = module.removeprefix("bert/")
    if leaf in _EMBEDDINGS:
        return f"{module}.{leaf}.weight".replace("/", "."), False
    if name == "cls/predictions/output_bias":
        return "cls.predictions.bias", False
    if module == "cls/seq_relationship":
        return f"cls.seq_relationship.{'weight' if leaf == 'output_weights' else 'bias'}", False
    hf_leaf = {"gamma": "weight", "beta": "bias", "kernel": "weight", "bias": "bias"}[leaf]
    key = re.sub(r"\blayer_(\d+)\b", r"layer.\1", module).replace("/", ".") + "." + hf_leaf
    return key, leaf == "kernel"


# tokenizer.json settings that Google's BasicTokenizer + WordPiece (our BertTokenizer) reproduce exactly.
_FAST_TOKENIZER = {("model", "type"): "WordPiece", ("model", "continuing_subword_prefix"): "##",
                   ("model", "max_input_chars_per_word"): MAX_CHARS_PER_WORD,
                   ("normalizer", "type"): "BertNormalizer", ("normalizer", "clean_text"): True,
                   ("normalizer", "handle_chinese_chars"): True, ("pre_tokenizer", "type"): "BertPreTokenizer"}


def huggingface_text(directory: str) -> dict | None:
    """{"vocabulary" (tokens by id), "lower_case", "strip_accents" (None: as lower_case), "source"} of the
    fast tokenizer `tokenizer.json` in the Hugging Face directory, or None when there is none. Raises
    CheckpointError naming the file and key of a setting our BertTokenizer does not reproduce."""
    source = os.path.join(directory, FAST_TOKENIZER_FILE)
    if not os.path.isfile(source):
        return None
    values = read_json(source)
    for (section, key), expected in _FAST_TOKENIZER.items():
        found = (values.get(section) or {}).get(key) if isinstance(values, dict) else None
        if found != expected:
            raise CheckpointError(f"{source}: {section}.{key} is {found!r}; keras_bert reads only a BERT "
                                  f"tokenizer with {section}.{key}={expected!r}")
    vocab = values["model"].get("vocab")
    if not isinstance(vocab, dict) or sorted(vocab.values()) != list(range(len(vocab))):
        raise CheckpointError(f"{source}: model.vocab must map each token to a distinct id 0..n-1")
    normalizer = values["normalizer"]
    strip_accents = normalizer.get("strip_accents")
    return {"vocabulary": sorted(vocab, key=vocab.get), "lower_case": bool(normalizer.get("lowercase")),
            "strip_accents": None if strip_accents is None else bool(strip_accents), "source": source}


def huggingface_config(directory: str) -> BertConfig:
    """The `config.json` of a Hugging Face BERT directory; CheckpointError naming the file."""
    config_file = os.path.join(directory, CONFIG_FILE)
    try:
        values = read_json(config_file)
        config = BertConfig.from_dict(values, source=config_file)
    except ValueError as e:  # the message names the file; CheckpointError says which loader failed
        raise CheckpointError(str(e)) from None
    position_type = values.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(f"{config_file}: position_embedding_type={position_type!r}; only 'absolute' "
                              f"position embeddings are supported")
    return config


def read_huggingface(directory: str) -> tuple[BertConfig, CheckpointWeights]:
    """Reads `config.json` and the weights of a Hugging Face BERT directory."""
    config = huggingface_config(directory)
    path = weights_file(directory)
    state = _load_state_dict(path)
    prefix = "bert." if any(key.startswith("bert.") for key in state) else ""
    arrays, ignored = {}, []
    for key, value in state.items():
        mapped = google_name(key)
        if mapped is None:
            if key.removeprefix("bert.") not in _NOT_WEIGHTS:
                ignored.append(key)
            continue
        name, transpose = mapped
        if name in arrays and name == "cls/predictions/output_bias":
            continue  # cls.predictions.bias and decoder.bias are one tied tensor
        arrays[name] = value.T if transpose else value

    def rename(name):
        key = huggingface_key(name)[0]
        return key if key.startswith("cls.") else prefix + key

    return config, CheckpointWeights(path=path, arrays=arrays, rename=rename, ignored=ignored)


def save_huggingface(model, path: str, vocab_file: str | None = None) -> str:
    """Writes `model` as a Hugging Face directory `path`: `config.json` + `model.safetensors` (+ `vocab.txt`
    when given). A BertPretrainer is written with `BertForPreTraining` keys (`bert.` + `cls.` heads), an
    encoder with `BertModel` keys; `transformers.BertModel.from_pretrained(path)` loads either. Returns
    `path`."""
    encoder, pretrainer = split_model(model)
    tensors = {}
    for name, array in collect_weights(encoder, pretrainer).items():
        key, transpose = huggingface_key(name)
        if pretrainer is not None and not key.startswith("cls."):
            key = "bert." + key
        tensors[key] = np.ascontiguousarray(array.T if transpose else array)
    config = encoder.config.to_huggingface_dict()
    config["architectures"] = ["BertForPreTraining" if pretrainer is not None else "BertModel"]
    with atomic_files(path, last=SAFETENSORS_FILE) as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        save_file(tensors, os.path.join(tmp, SAFETENSORS_FILE), metadata={"format": "pt"})
        copy_vocab(vocab_file, tmp)
    return path
