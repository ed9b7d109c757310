"""keras_bert's own format: a directory with `model.keras` (the whole model, config included),
`bert_config.json` (lossless: our activation names and layer_norm_eps) and a copy of `vocab.txt`."""

from __future__ import annotations

import json
import os
import zipfile

import keras

from keras_bert import outputs
from keras_bert.checkpoints.files import copy_vocab
from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights, collect_weights, split_model
from keras_bert.config import BertConfig

MODEL_FILE = "model.keras"
CONFIG_FILE = "bert_config.json"


def keras_file(path: str) -> str | None:
    """The `.keras` file of our save at `path` (the file itself or a directory holding model.keras)."""
    if os.path.isfile(path) and path.endswith(".keras"):
        return path
    candidate = os.path.join(path, MODEL_FILE)
    return candidate if os.path.isdir(path) and os.path.isfile(candidate) else None


def keras_zip(path: str) -> str:
    """The `.keras` file of our save at `path` (as `keras_file`), checked to be a complete zip archive.
    Raises FileNotFoundError when there is none, CheckpointError naming the file when it is no zip (Keras
    itself would say "File not found" of a file that exists)."""
    model_file = keras_file(os.fspath(path))
    if model_file is None:
        raise FileNotFoundError(f"{path}: no such .keras file (nor a directory holding {MODEL_FILE})")
    if not zipfile.is_zipfile(model_file):
        raise CheckpointError(f"{model_file}: not a complete .keras (zip) file; is it truncated or still "
                              f"being written?")
    return model_file


def saved_config(path: str) -> dict:
    """The serialized model ({"class_name", "config", ...}) of the `.keras` save at `path` (as `keras_zip`),
    read from its config.json without building the model."""
    model_file = keras_zip(path)
    with zipfile.ZipFile(model_file) as archive:
        try:
            return json.loads(archive.read("config.json"))
        except (KeyError, ValueError) as e:
            raise CheckpointError(f"{model_file}: no readable config.json inside ({e})") from None


def saved_encoder_config(saved: dict, source: str) -> BertConfig:
    """The encoder's BertConfig in `saved` (a serialized keras_bert model, as `saved_config`); CheckpointError
    naming `source` when it holds no BertEncoder."""
    stack = [saved]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("class_name") == "BertEncoder" and isinstance(item.get("config"), dict):
                return BertConfig.from_dict(item["config"]["config"], source=source)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    raise CheckpointError(f"{source}: a {saved.get('class_name')} with no BertEncoder; "
                          "expected a keras_bert model")


def load_keras_model(path: str):
    """The whole keras_bert model (uncompiled) of the `.keras` save at `path` (the file, or a directory
    holding model.keras), checked first by `keras_zip`."""
    return keras.saving.load_model(keras_zip(path), compile=False)


def load_keras(path: str):
    """(encoder, pretrainer or None) of the `.keras` model at `path` (an encoder, pretrainer or task
    model)."""
    return split_model(load_keras_model(path))


def read_keras(path: str) -> tuple[BertConfig, CheckpointWeights]:
    """The encoder config and the encoder (+ pre-training heads) weights under Google's names of the
    `.keras` model at `path`, for loading into a model built with another dtype policy."""
    encoder, pretrainer = load_keras(path)
    return encoder.config, CheckpointWeights(path=keras_file(path),
                                             arrays=collect_weights(encoder, pretrainer))


def save_without_optimizer(model, path: str) -> None:
    """`model.save(path)` without the optimizer's state (Keras 3 has no `include_optimizer`): a model to
    serve or share is a third of the size (AdamW keeps two slots per weight); training resumes from its own
    checkpoints, not from this file. Like `model.save`, an existing file is replaced; the new one is written
    beside it and renamed into place (`keras_bert.outputs.writing_file`), so a killed save leaves the old
    file or none, never half a zip."""
    optimizer = getattr(model, "optimizer", None)
    model.optimizer = None
    try:
        with outputs.writing_file(path, overwrite=True) as tmp:
            model.save(tmp)
    finally:
        model.optimizer = optimizer


def save_pretrained(model, directory: str, vocab_file: str | None = None, overwrite: bool = False) -> str:
    """Saves `model` (any keras_bert model) to `directory` as `model.keras` + `bert_config.json` (+ a copy
    of `vocab_file`), written beside it and renamed into place (`keras_bert.outputs.writing_dir`), so
    `from_pretrained` never reads a half-written save. A non-empty `directory` is refused unless
    `overwrite` (then its previous save there is replaced; files it did not write are kept), as is one
    holding `vocab_file`. Returns `directory`.

    Args:
        model: any keras_bert model (encoder, task model, pretrainer); its preprocessor and labels are
            saved in `model.keras`.
        directory: the directory to write.
        vocab_file: a vocab.txt to copy into it (optional).
        overwrite: replace a previous save in `directory`.

    Returns:
        `directory`, what `from_pretrained` and `load_pretrained_model` take.

    Raises:
        keras_bert.outputs.Taken: (a `UserInputError`) `directory` is not empty and `overwrite` is False.
        keras_bert.outputs.Busy: another run or thread is writing `directory`.
        UserInputError: `directory` is a file, or is (or holds) `vocab_file`.
        FileNotFoundError: `vocab_file` does not exist.
        TypeError: `model` is no BertEncoder, BertPretrainer or task model with an `.encoder`.
    """
    encoder, _ = split_model(model)
    with outputs.writing_dir(directory, [vocab_file], overwrite) as tmp:
        with open(os.path.join(tmp, CONFIG_FILE), "w", encoding="utf-8") as f:
            json.dump(encoder.config.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
        copy_vocab(vocab_file, tmp)
        save_without_optimizer(model, os.path.join(tmp, MODEL_FILE))
    return directory
