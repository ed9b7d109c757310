"""File plumbing shared by the checkpoint readers and writers: the vocab and casing beside a checkpoint."""

from __future__ import annotations

import os
import shutil

from keras_bert.textfiles import read_json

VOCAB_FILE = "vocab.txt"
# Where a KerasHub preset keeps its vocab (keras_bert.checkpoints.keras_hub reads the rest).
KERAS_HUB_VOCAB = os.path.join("assets", "tokenizer", "vocabulary.txt")
# Where a Hugging Face checkpoint says its casing (BertTokenizer's `do_lower_case`).
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"


def copy_vocab(vocab_file: str | None, directory: str) -> None:
    if vocab_file is None:
        return
    if not os.path.isfile(vocab_file):
        raise FileNotFoundError(f"vocab_file not found: {vocab_file}")
    shutil.copyfile(vocab_file, os.path.join(directory, VOCAB_FILE))


def checkpoint_directory(path: str) -> str:
    """The directory holding a checkpoint given as a directory, a file or a TF1 prefix."""
    return path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))


def find_vocab_file(path: str) -> str | None:
    """The `vocab.txt` beside a checkpoint (directory, `.keras` file or TF1 prefix), or a KerasHub preset's
    `assets/tokenizer/vocabulary.txt`, or None.

    Args:
        path: a checkpoint directory, a file in one (`model.keras`, a Hugging Face weights file) or a TF1
            checkpoint prefix.

    Returns:
        The vocab file's path (str), or None when there is none.
    """
    for name in (VOCAB_FILE, KERAS_HUB_VOCAB):
        candidate = os.path.join(checkpoint_directory(path), name)
        if os.path.isfile(candidate):
            return candidate
    return None


def find_lower_case(path: str) -> bool | None:
    """The casing a Hugging Face checkpoint's files state: `do_lower_case` of the `tokenizer_config.json`
    beside it (True/False), or None when no file says it (a KerasHub preset's is read with its tokenizer:
    `keras_hub_text`). Raises ValueError naming the file when it is not JSON or `do_lower_case` is not a
    boolean."""
    config_file = os.path.join(checkpoint_directory(path), TOKENIZER_CONFIG_FILE)
    if not os.path.isfile(config_file):
        return None
    config = read_json(config_file)  # DataFormatError (a ValueError) naming the file:line when not JSON
    if not isinstance(config, dict):
        raise ValueError(f"{config_file}: expected a JSON object, got {type(config).__name__}")
    value = config.get("do_lower_case")
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{config_file}: do_lower_case is {value!r}; expected true or false")
    return value
