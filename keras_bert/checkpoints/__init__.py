"""Loading and saving BERT weights: Google TF1 checkpoints, Hugging Face directories and our own saves.

`load_encoder(path)` / `load_pretrainer(path)` detect the format of `path`:
  - Google TF1: a prefix such as `.../bert_model.ckpt`, or a directory holding it, with `bert_config.json`;
  - Hugging Face: a directory with `config.json` + `model.safetensors` (or `pytorch_model.bin`), or
    sharded: `model.safetensors.index.json` (or `pytorch_model.bin.index.json`) + the shards it lists;
  - keras_bert: a directory written by `save_pretrained` or a `.keras` file (a task model's encoder too).
"""

from __future__ import annotations

import logging
import os

from keras_bert.checkpoints.files import find_vocab_file
from keras_bert.checkpoints.google import checkpoint_prefix, read_google_checkpoint, save_google_checkpoint
from keras_bert.checkpoints.huggingface import is_huggingface_directory, read_huggingface, save_huggingface
from keras_bert.checkpoints.mapping import CheckpointError, assign_encoder, assign_heads
from keras_bert.checkpoints.ours import keras_file, load_keras, read_keras, save_pretrained

logger = logging.getLogger("keras_bert")

__all__ = [
    "CheckpointError",
    "detect_format",
    "find_vocab_file",
    "load_encoder",
    "load_pretrainer",
    "save_google_checkpoint",
    "save_huggingface",
    "save_pretrained",
]


def detect_format(path: str) -> str:
    """"keras", "huggingface" or "google" for a checkpoint at `path`; raises FileNotFoundError or
    CheckpointError naming the path when it is none of them."""
    path = os.fspath(path)
    if not os.path.exists(path) and not os.path.exists(path + ".index"):
        raise FileNotFoundError(f"Checkpoint not found: {path}")
    if keras_file(path):
        return "keras"
    if os.path.isdir(path) and is_huggingface_directory(path):
        return "huggingface"
    if checkpoint_prefix(path):
        return "google"
    found = sorted(os.listdir(path))[:8] if os.path.isdir(path) else [os.path.basename(path)]
    raise CheckpointError(
        f"{path}: unknown checkpoint format (found {found}); expected a Google TF1 checkpoint "
        f"(bert_model.ckpt.index + bert_config.json), a Hugging Face directory (config.json + "
        f"model.safetensors, pytorch_model.bin, or a sharded model.safetensors.index.json or "
        f"pytorch_model.bin.index.json) or a keras_bert save (model.keras)")


def _read(path):
    path = os.fspath(path)
    fmt = detect_format(path)
    if fmt == "keras":
        return read_keras(path)
    if fmt == "huggingface":
        return read_huggingface(path)
    return read_google_checkpoint(checkpoint_prefix(path))


def _report_ignored(weights, used):
    ignored = weights.ignored + sorted(weights.file_name(n) for n in weights.arrays if n not in used)
    if ignored:
        logger.info("%s: %d checkpoint variables not used by the model: %s", weights.path, len(ignored),
                    ", ".join(ignored[:6]) + (", ..." if len(ignored) > 6 else ""))


def _report_missing_heads(path, missing):
    if missing:
        logger.warning("%s: no %s head in the checkpoint; initialised randomly", path, " or ".join(missing))


def load_encoder(path, dtype=None):
    """A `BertEncoder` with the weights at `path` (any supported format; heads in the checkpoint are
    ignored). `dtype` is the Keras dtype policy to build with (e.g. "mixed_bfloat16"); default float32.
    Raises CheckpointError naming the variable on a missing or misshapen encoder variable."""
    from keras_bert.models.encoder import BertEncoder

    if dtype is None and detect_format(path) == "keras":
        return load_keras(os.fspath(path))[0]
    config, weights = _read(path)
    encoder = BertEncoder(config, dtype=dtype)
    _report_ignored(weights, assign_encoder(encoder, weights))
    return encoder


def load_pretrainer(path, dtype=None):
    """A `BertPretrainer` with encoder and heads from `path`. A head the checkpoint does not have (e.g.
    an encoder-only Hugging Face `BertModel`) is initialised and reported in one warning line; a head
    present only in part, or any encoder mismatch, raises CheckpointError."""
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.models.pretrainer import BertPretrainer

    if dtype is None and detect_format(path) == "keras":
        # Our own save is returned as loaded, without a second build.
        encoder, pretrainer = load_keras(os.fspath(path))
        if pretrainer is None:
            pretrainer = BertPretrainer(encoder)
            _report_missing_heads(path, ["masked_lm", "next_sentence"])
        return pretrainer
    config, weights = _read(path)
    encoder = BertEncoder(config, dtype=dtype)
    used = assign_encoder(encoder, weights)
    pretrainer = BertPretrainer(encoder)
    head_names, missing = assign_heads(pretrainer, weights)
    _report_missing_heads(weights.path, missing)
    _report_ignored(weights, used | head_names)
    return pretrainer
