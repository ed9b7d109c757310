"""The pooling of a sentence-transformers checkpoint directory: how its sentence embedding is made.

A sentence-transformers directory is a Hugging Face BERT directory plus `modules.json`, the pipeline
(`Transformer`, then `Pooling` with its options in `<path>/config.json`, then optionally `Normalize`):

    sentence_pooling("all-MiniLM-L6-v2/")   # ("mean", True): mean over real tokens, then L2-normalized
    sentence_pooling("bert-base-uncased/")  # None: not a sentence-transformers directory
    sentence_max_seq_length("all-MiniLM-L6-v2/")  # (256, ".../sentence_bert_config.json: max_seq_length")
"""

import os

from keras_bert.checkpoints.mapping import CheckpointError
from keras_bert.textfiles import read_json

MODULES_FILE = "modules.json"
SENTENCE_CONFIG_FILE = "sentence_bert_config.json"  # the Transformer module's options: max_seq_length
# sentence-transformers' Pooling flags -> our pooling names; other modes are not served.
POOLING_MODES = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean"}


def _read_json(path):
    try:
        return read_json(path)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path}: cannot read the sentence-transformers configuration: {e}") from None


def sentence_pooling(directory):
    """(pooling "cls" | "mean", normalize bool) of the sentence-transformers checkpoint `directory`, or None
    when it has no modules.json. Raises CheckpointError naming the file when modules.json lists no Pooling
    module, or the pooling config sets no mode or a mode other than one CLS or mean pooling."""
    modules_path = os.path.join(os.fspath(directory), MODULES_FILE)
    if not os.path.isfile(modules_path):
        return None
    modules = _read_json(modules_path)
    types = [str(module.get("type", "")).rsplit(".", 1)[-1] for module in modules]
    if "Pooling" not in types:
        raise CheckpointError(f"{modules_path}: no sentence_transformers.models.Pooling module among {types}")
    pooling_module = modules[types.index("Pooling")]
    config_path = os.path.join(os.fspath(directory), pooling_module.get("path", ""), "config.json")
    config = _read_json(config_path)
    modes = sorted(key for key, value in config.items() if key.startswith("pooling_mode_") and value)
    if len(modes) != 1 or modes[0] not in POOLING_MODES:
        raise CheckpointError(f"{config_path}: pooling modes {modes}; expected exactly one of "
                              f"{sorted(POOLING_MODES)}")
    return POOLING_MODES[modes[0]], "Normalize" in types


def sentence_max_seq_length(directory):
    """(max_seq_length, its source "<file>: max_seq_length") of the sentence-transformers checkpoint
    `directory`: the length `SentenceTransformer.encode` truncates to, from its sentence_bert_config.json;
    None when there is no such file or it sets none. Raises CheckpointError naming the file when the value is
    not an integer."""
    path = os.path.join(os.fspath(directory), SENTENCE_CONFIG_FILE)
    if not os.path.isfile(path):
        return None
    config = _read_json(path)
    value = config.get("max_seq_length") if isinstance(config, dict) else None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CheckpointError(f"{path}: max_seq_length is {value!r}; expected an integer")
    return value, f"{path}: max_seq_length"
