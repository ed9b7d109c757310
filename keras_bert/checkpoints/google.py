"""Google's original TF1 BERT checkpoints (`bert_model.ckpt.{index,data-*}` + `bert_config.json`).

Variables keep the names of google-research/bert's `modeling.py` and `run_pretraining.py`
(`bert/encoder/layer_0/attention/self/query/kernel`, `cls/predictions/output_bias`, ...), which are also
the names `mapping.py` uses, so reading and writing need no renaming.
"""

from __future__ import annotations

import glob
import os

import tensorflow as tf

from keras_bert import outputs
from keras_bert.checkpoints.files import checkpoint_directory, copy_vocab
from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights, collect_weights, split_model
from keras_bert.config import BertConfig

CONFIG_FILE = "bert_config.json"
# Optimizer state saved beside the weights by the original run_pretraining.py (and TF1 Adam).
_OPTIMIZER_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1")
_OPTIMIZER_NAMES = ("global_step", "beta1_power", "beta2_power")


def checkpoint_prefix(path: str) -> str | None:
    """The TF1 checkpoint prefix for `path` (a prefix, or a directory holding `bert_model.ckpt.index`, a
    `checkpoint` state file, or exactly one `*.index`), or None when there is none."""
    if not os.path.isdir(path):
        return path if os.path.isfile(path + ".index") else None
    if os.path.isfile(os.path.join(path, "bert_model.ckpt.index")):
        return os.path.join(path, "bert_model.ckpt")
    latest = tf.train.latest_checkpoint(path)
    if latest:
        return latest
    indexes = glob.glob(os.path.join(path, "*.index"))
    return indexes[0][: -len(".index")] if len(indexes) == 1 else None


def google_config_file(prefix: str) -> str:
    return os.path.join(checkpoint_directory(prefix), CONFIG_FILE)


def google_config(prefix: str) -> BertConfig:
    """The `bert_config.json` beside the TF1 checkpoint `prefix`; CheckpointError naming the file."""
    config_file = google_config_file(prefix)
    if not os.path.isfile(config_file):
        raise CheckpointError(f"{prefix}: TF1 checkpoint without {CONFIG_FILE}; expected {config_file}")
    try:
        return BertConfig.from_json_file(config_file)
    except ValueError as e:  # the message names the file; CheckpointError says which loader failed
        raise CheckpointError(str(e)) from None


def read_google_checkpoint(prefix: str, config=None) -> tuple[BertConfig, CheckpointWeights]:
    """Reads `bert_config.json` beside `prefix` (unless its `config` is given) and every non-optimizer
    variable of the checkpoint."""
    config = config or google_config(prefix)
    arrays, ignored = {}, []
    try:
        reader = tf.train.load_checkpoint(prefix)
        for name in sorted(reader.get_variable_to_shape_map()):
            if name.endswith(_OPTIMIZER_SUFFIXES) or name in _OPTIMIZER_NAMES:
                continue
            if name.startswith(("bert/", "cls/")):
                arrays[name] = reader.get_tensor(name)
            else:
                ignored.append(name)
    except (tf.errors.OpError, IndexError) as e:  # a truncated .data file raises IndexError
        reason = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CheckpointError(f"{prefix}: cannot read the TF1 checkpoint ({type(e).__name__}: {reason}); "
                              f"is a file truncated or still being written?") from None
    return config, CheckpointWeights(path=prefix, arrays=arrays, ignored=ignored)


def save_google_checkpoint(model, path_prefix: str, vocab_file: str | None = None,
                           overwrite: bool = False) -> str:
    """Writes `model` (a BertEncoder, a BertPretrainer with its `cls/` heads, or a task model's encoder) as
    a TF1 checkpoint under the original variable names, plus `bert_config.json` (and `vocab.txt` when
    given) in the prefix's directory. Returns `path_prefix`; load it with `tf.train.load_checkpoint`,
    Google's scripts (`--init_checkpoint`) or `load_encoder` / `load_pretrainer`. The prefix's directory is
    the output (`keras_bert.outputs.writing_dir`): refused when not empty unless `overwrite` (then its
    previous output there is replaced, and files it did not write are kept), or when it holds
    `vocab_file`.

    Args:
        model: a `BertEncoder`, a `BertPretrainer` (also its masked-LM and next-sentence heads) or a task
            model (its encoder only).
        path_prefix: the checkpoint prefix, e.g. "out/bert_model.ckpt" (writes out/bert_model.ckpt.index
            and .data-00000-of-00001).
        vocab_file: a vocab.txt to copy beside it (optional).
        overwrite: replace this writer's previous output in the prefix's directory.

    Returns:
        `path_prefix`.

    Raises:
        keras_bert.outputs.Taken: (a `UserInputError`) the prefix's directory is not empty and
            `overwrite` is False.
        keras_bert.outputs.Busy: another run or thread is writing the prefix's directory.
        UserInputError: the prefix's directory is a file, or is (or holds) `vocab_file`.
        FileNotFoundError: `vocab_file` does not exist.
        TypeError: `model` is no BertEncoder, BertPretrainer or task model with an `.encoder`.
    """
    encoder, pretrainer = split_model(model)
    arrays = collect_weights(encoder, pretrainer)
    directory, basename = os.path.split(os.path.abspath(path_prefix))
    with outputs.writing_dir(directory, [vocab_file], overwrite) as tmp:
        tf.raw_ops.SaveV2(
            prefix=os.path.join(tmp, basename),
            tensor_names=list(arrays),
            shape_and_slices=[""] * len(arrays),
            tensors=[tf.constant(array) for array in arrays.values()],
        )
        encoder.config.to_json_file(os.path.join(tmp, CONFIG_FILE), fmt="google")
        copy_vocab(vocab_file, tmp)
    return path_prefix
