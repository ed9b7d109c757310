"""Reading and writing BERT weights: Google TF1 checkpoints, Hugging Face directories and our own saves.

This floor knows no model class: `read_checkpoint(path)` returns `(config, weights)`, checked to agree
(`check_config_fits`), and the one assembly one floor up (`keras_bert.models.assembly.assemble`) builds the
model and copies the weights in with `assign_encoder` / `assign_heads`. The format of `path` is detected:
  - Google TF1: a prefix such as `.../bert_model.ckpt`, or a directory holding it, with `bert_config.json`;
  - Hugging Face: a directory with `config.json` + `model.safetensors` (or `pytorch_model.bin`), or
    sharded: `model.safetensors.index.json` (or `pytorch_model.bin.index.json`) + the shards it lists;
  - KerasHub: a preset directory (`config.json` of a `keras_hub>BertBackbone` + `model.weights.h5`);
  - keras_bert: a directory written by `save_pretrained` or a `.keras` file (a task model's encoder too).
"""

from __future__ import annotations

import logging
import os

from keras_bert.checkpoints.files import find_lower_case, find_vocab_file
from keras_bert.checkpoints.google import (
    checkpoint_prefix,
    google_config,
    google_config_file,
    read_google_checkpoint,
    save_google_checkpoint,
)
from keras_bert.checkpoints.huggingface import (
    huggingface_config,
    huggingface_head,
    is_huggingface_directory,
    read_huggingface,
    save_huggingface,
)
from keras_bert.checkpoints.huggingface_tokenizer import huggingface_text
from keras_bert.checkpoints.keras_hub import (
    BACKBONE,
    is_keras_hub_directory,
    keras_hub_backbone,
    keras_hub_config,
    keras_hub_head,
    keras_hub_text,
    read_keras_hub,
    save_keras_hub,
)
from keras_bert.checkpoints.mapping import (
    CheckpointError,
    CheckpointWeights,
    assign_encoder,
    assign_heads,
    check_config_fits,
    split_model,
)
from keras_bert.checkpoints.ours import (
    keras_file,
    keras_zip,
    load_keras,
    load_keras_model,
    read_keras,
    save_pretrained,
    save_without_optimizer,
    saved_config,
    saved_encoder_config,
)
from keras_bert.config import BertConfig

logger = logging.getLogger("keras_bert")

__all__ = [
    "CheckpointError",
    "CheckpointWeights",
    "assign_encoder",
    "assign_heads",
    "detect_format",
    "find_lower_case",
    "find_vocab_file",
    "keras_file",
    "keras_zip",
    "huggingface_head",
    "huggingface_text",
    "keras_hub_head",
    "keras_hub_text",
    "load_keras",
    "load_keras_model",
    "read_checkpoint",
    "read_config",
    "report_missing_heads",
    "report_unused",
    "save_google_checkpoint",
    "save_huggingface",
    "save_keras_hub",
    "saved_config",
    "save_pretrained",
    "save_without_optimizer",
    "split_model",
]


def detect_format(path: str) -> str:
    """"keras", "keras_hub", "huggingface" or "google" for a checkpoint at `path`; raises FileNotFoundError or
    CheckpointError naming the path when it is none of them."""
    path = os.fspath(path)
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise FileNotFoundError(f"Checkpoint not found: {path}")
    if keras_file(path):
        return "keras"
    if os.path.isdir(path) and is_keras_hub_directory(path):
        return "keras_hub"
    if os.path.isdir(path) and is_huggingface_directory(path):
        return "huggingface"
    if checkpoint_prefix(path):
        return "google"
    backbone = keras_hub_backbone(path) if os.path.isdir(path) else None
    if backbone is not None:
        raise CheckpointError(f"{os.path.join(path, 'config.json')}: a {backbone} preset; only {BACKBONE} "
                              "is read")
    found = sorted(os.listdir(path))[:8] if os.path.isdir(path) else [os.path.basename(path)]
    raise CheckpointError(
        f"{path}: unknown checkpoint format (found {found}); expected a Google TF1 checkpoint "
        f"(bert_model.ckpt.index + bert_config.json), a Hugging Face directory (config.json + "
        f"model.safetensors, pytorch_model.bin, or a sharded model.safetensors.index.json or "
        f"pytorch_model.bin.index.json), a KerasHub preset (config.json of a keras_hub>BertBackbone + "
        f"model.weights.h5) or a keras_bert save (model.keras)")


def read_checkpoint(path, fmt=None, config=None) -> tuple[BertConfig, CheckpointWeights]:
    """(config, weights under Google's names) of the checkpoint at `path`, in any supported format (`fmt`,
    default `detect_format(path)`; `config`: its config when read already). Knows no model class: a model
    builds itself from `config` and copies `weights` with `assign_encoder` / `assign_heads`. Raises
    CheckpointError naming both files when the config states other layers or widths than the weights hold
    (`check_config_fits`)."""
    path = os.fspath(path)
    fmt = fmt or detect_format(path)
    if fmt == "keras":
        config, weights = read_keras(path)
    elif fmt == "huggingface":
        config, weights = read_huggingface(path, config)
    elif fmt == "keras_hub":
        config, weights = read_keras_hub(path, config)
    else:
        config, weights = read_google_checkpoint(checkpoint_prefix(path), config)
    check_config_fits(config, weights, config_file(path, fmt))
    return config, weights


def config_file(path, fmt) -> str:
    """The file that states the config of the checkpoint at `path` of format `fmt`."""
    if fmt == "keras":
        return keras_file(path)
    if fmt == "google":
        return google_config_file(checkpoint_prefix(path))
    return os.path.join(path, "config.json")


def read_config(path, fmt=None) -> BertConfig:
    """The BertConfig of the checkpoint at `path` (format `fmt`, default `detect_format(path)`), read from
    its config file alone (a `.keras` save's config.json inside the zip), no weights."""
    path = os.fspath(path)
    fmt = fmt or detect_format(path)
    if fmt == "keras":
        return saved_encoder_config(saved_config(path), keras_file(path))
    if fmt == "huggingface":
        return huggingface_config(path)
    if fmt == "keras_hub":
        return keras_hub_config(path)
    return google_config(checkpoint_prefix(path))


def report_unused(weights: CheckpointWeights, used: set[str], taken=()) -> None:
    """Logs, in one line, the checkpoint variables a model did not take (`taken`: file names of those a
    head took beside `used`)."""
    ignored = [name for name in weights.ignored if name not in taken]
    ignored += sorted(weights.file_name(n) for n in weights.arrays if n not in used)
    if ignored:
        logger.info("%s: %d checkpoint variables not used by the model: %s", weights.path, len(ignored),
                    ", ".join(ignored[:6]) + (", ..." if len(ignored) > 6 else ""))


def report_missing_heads(path, missing: list[str]) -> None:
    """Warns, in one line, of the heads a checkpoint lacks (initialised randomly)."""
    if missing:
        logger.warning("%s: no %s head in the checkpoint; initialised randomly", path, " or ".join(missing))
