"""Hugging Face BERT directories: `config.json` + `model.safetensors` (or `pytorch_model.bin`), or the
sharded form transformers writes past `max_shard_size`: `model.safetensors.index.json` (or
`pytorch_model.bin.index.json`), whose "weight_map" names the shard file of each tensor.

State-dict keys are Google's names with "." for "/", `layer.i` for `layer_i`, an optional `bert.` prefix,
`weight`/`bias` (old files: `gamma`/`beta`) for LayerNorm, and torch Linear weights stored [out, in] where
Google's kernels are [in, out]. safetensors is read with numpy; torch is needed only for `.bin` files.
A task checkpoint's head (`BertFor*`) is one a task folder declares (`keras_bert.checkpoints.heads`).
"""

from __future__ import annotations

import json
import os
import re

import keras
import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from keras_bert import compat, outputs
from keras_bert.checkpoints.files import copy_vocab
from keras_bert.checkpoints.heads import heads_of, huggingface_heads
from keras_bert.checkpoints.huggingface_tokenizer import write_tokenizer_files
from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights, collect_weights, split_model
from keras_bert.config import BertConfig
from keras_bert.textfiles import read_json

CONFIG_FILE = "config.json"
SAFETENSORS_FILE = "model.safetensors"
TORCH_FILE = "pytorch_model.bin"
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


def _unreadable(path, kind, error):
    return CheckpointError(f"{path}: cannot read the {kind} file ({type(error).__name__}: {error}); is it "
                           f"truncated or still being written?")


def _load_file(path: str) -> dict[str, np.ndarray]:
    """The tensors of one weight file; a file that cannot be read (truncated, not safetensors/torch)
    raises CheckpointError naming it."""
    if path.endswith(".safetensors"):
        try:
            return load_file(path)
        except Exception as e:  # safetensors raises its own SafetensorError, or OSError
            raise _unreadable(path, "safetensors", e) from None
    try:
        import torch
    except ImportError:
        raise ImportError(f"{path}: reading a .bin checkpoint needs torch (pip install torch), or convert "
                          f"the checkpoint to model.safetensors") from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises RuntimeError, EOFError or pickle errors by how the file is broken
        raise _unreadable(path, "torch", e) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: expected a state dict (tensor name -> tensor), got "
                              f"{type(state).__name__}")
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


def _load_tensors(path: str, keys: list[str]) -> dict[str, np.ndarray]:
    """The tensors named `keys` (those present) of the weight or index file `path`; from safetensors only
    these are read, a torch file is read whole."""
    found = {}
    for shard, names in _shards(path).items():
        if not shard.endswith(".safetensors"):
            return {key: value for key, value in _load_state_dict(path).items() if key in keys}
        if names is not None and not set(names) & set(keys):
            continue
        try:
            with safe_open(shard, framework="np") as f:
                found.update({key: f.get_tensor(key) for key in keys if key in f.keys()})
        except Exception as e:  # safetensors raises its own SafetensorError, or OSError
            raise _unreadable(shard, "safetensors", e) from None
    return found


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


def huggingface_head(directory: str) -> dict | None:
    """{"task_kind", "layer" (our head layer's name), "kernel" [hidden, n], "bias" [n], "dropout" (None: the
    encoder's), "names" (the state-dict keys of kernel and bias), and for (token) classification
    "num_classes" and "labels" (id2label's names; None for regression: problem_type "regression" or one
    label)} of the BertFor* task checkpoint in `directory` (its config.json `architectures`), or None for
    another architecture. Raises CheckpointError naming the file when its head weights or id2label are
    missing or do not agree, or when the task refuses the head (a problem_type it does not serve)."""
    config_file = os.path.join(directory, CONFIG_FILE)
    values = read_json(config_file)
    known = huggingface_heads()
    architecture = next((name for name in values.get("architectures") or () if name in known), None)
    if architecture is None:
        return None
    kind, head_of = known[architecture]
    prefix = head_of.prefix
    path = weights_file(directory)
    state = _load_tensors(path, [f"{prefix}.weight", f"{prefix}.bias"])
    if f"{prefix}.weight" not in state or f"{prefix}.bias" not in state:
        raise CheckpointError(f"{path}: no {prefix}.weight / {prefix}.bias, the head of the {architecture} "
                              f"that {config_file} names in architectures")
    head = {"task_kind": kind, "layer": head_of.layer,
            "kernel": np.ascontiguousarray(state[f"{prefix}.weight"].T), "bias": state[f"{prefix}.bias"],
            "dropout": values.get("classifier_dropout"), "names": (f"{prefix}.weight", f"{prefix}.bias")}
    if head_of.labelled:
        count = head["kernel"].shape[1]
        try:
            unnamed = head_of.unnamed is not None and head_of.unnamed(values, count)
        except CheckpointError as e:  # a head the task refuses, e.g. a problem_type it does not serve
            raise CheckpointError(f"{config_file}: {e}") from None
        head.update(num_classes=count, labels=None if unnamed else _id2label(values, count, config_file))
    return head


def _id2label(values, count, config_file):
    """The label names of config.json `values`' id2label ({"0": name, ...}) for a `count`-class head."""
    id2label = values.get("id2label")
    if id2label is None:
        return None
    if not isinstance(id2label, dict):
        raise CheckpointError(f"{config_file}: id2label is {id2label!r}; expected an object of class ids and "
                              f"names ({{\"0\": name, ..., \"{count - 1}\": name}})")
    names = [id2label.get(str(i)) for i in range(count)]
    if len(id2label) != count or None in names:
        raise CheckpointError(f"{config_file}: id2label {id2label} does not name the {count} classes of the "
                              f"head (expected keys \"0\"..\"{count - 1}\")")
    return [str(name) for name in names]


def _head_tensors(model, declared):
    """The Hugging Face state-dict entries and config.json keys of task model `model`'s head, `declared` by
    its task (a `HuggingFaceHead`)."""
    prefix = declared.prefix
    dense = model.get_layer(declared.layer)
    kernel, bias = (np.asarray(keras.ops.convert_to_numpy(keras.ops.cast(v, "float32")))
                    for v in (compat.float_kernel(dense), dense.bias))  # int8 dequantized, LoRA merged
    tensors = {f"{prefix}.weight": np.ascontiguousarray(kernel.T), f"{prefix}.bias": bias}
    config = {}
    if declared.labelled:
        labels = model.labels or [f"LABEL_{i}" for i in range(model.num_classes)]
        config["id2label"] = dict(enumerate(labels))
        config["label2id"] = {label: i for i, label in enumerate(labels)}
    if declared.config is not None:
        config.update(declared.config(model))
    if hasattr(model, "dropout"):
        config["classifier_dropout"] = float(model.dropout)
    return tensors, config


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


def read_huggingface(directory: str, config=None) -> tuple[BertConfig, CheckpointWeights]:
    """Reads `config.json` (unless its `config` is given) and the weights of a Hugging Face BERT
    directory."""
    config = config or huggingface_config(directory)
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


def save_huggingface(model, path: str, vocab_file: str | None = None, overwrite: bool = False) -> str:
    """Writes `model` as a Hugging Face directory `path`: `config.json` + `model.safetensors`, and the
    tokenizer files `AutoTokenizer` loads (`vocab.txt`, `tokenizer.json`, `tokenizer_config.json`) of the
    model's preprocessor (or only `vocab_file` copied as vocab.txt, when given). The architecture is the
    model's: `BertModel` for an encoder, `BertForPreTraining` for a BertPretrainer, and for a task model
    `BertForSequenceClassification` (id2label / label2id, problem_type), `BertForTokenClassification`,
    `BertForQuestionAnswering` or `BertForMultipleChoice` with its head (what its task folder declares,
    `keras_bert.checkpoints.heads`), so the matching `transformers.AutoModelFor*` (and `pipeline`) load it.
    Written beside `path` and renamed into place (`keras_bert.outputs.writing_dir`): a non-empty `path` is
    refused unless `overwrite` (then its previous output there is replaced; files it did not write are
    kept), as is one holding `vocab_file`. Returns `path`.

    Args:
        model: a `BertEncoder`, a `BertPretrainer` or a task model (with its head).
        path: the directory to write (what `transformers.AutoModel*.from_pretrained` takes).
        vocab_file: a vocab.txt to write as the tokenizer instead of the model's preprocessor (optional).
        overwrite: replace a previous output in `path`.

    Returns:
        `path`.

    Raises:
        keras_bert.outputs.Taken: (a `UserInputError`) `path` is not empty and `overwrite` is False.
        keras_bert.outputs.Busy: another run or thread is writing `path`.
        UserInputError: `path` is a file, or is (or holds) `vocab_file`.
        FileNotFoundError: `vocab_file` does not exist.
        TypeError: `model` is no BertEncoder, BertPretrainer or task model with an `.encoder`.
    """
    encoder, pretrainer = split_model(model)
    head = heads_of(getattr(model, "task_kind", None))[0]
    head_tensors, head_config = _head_tensors(model, head) if head else ({}, {})
    tensors = {}
    for name, array in collect_weights(encoder, pretrainer).items():
        if head and not head.pooler and name.startswith("bert/pooler/"):
            continue
        key, transpose = huggingface_key(name)
        if model is not encoder and not key.startswith("cls."):
            key = "bert." + key
        tensors[key] = np.ascontiguousarray(array.T if transpose else array)
    tensors.update(head_tensors)
    config = {**encoder.config.to_huggingface_dict(), **head_config}
    config["architectures"] = [head.architecture if head else
                               "BertForPreTraining" if pretrainer is not None else "BertModel"]
    preprocessor = getattr(model, "preprocessor", None)
    with outputs.writing_dir(path, [vocab_file], overwrite) as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
            f.write("\n")
        save_file(tensors, os.path.join(tmp, SAFETENSORS_FILE), metadata={"format": "pt"})
        if vocab_file is not None or preprocessor is None:
            copy_vocab(vocab_file, tmp)
        else:
            write_tokenizer_files(preprocessor.tokenizer, tmp, preprocessor.seq_length)
    return path
