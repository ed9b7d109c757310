"""Checkpoints by name: `local_checkpoint(path_or_name)` turns a Hugging Face name (`"bert-base-uncased"`,
`"google-bert/bert-base-uncased"`, `"hf://org/name"`, each optionally `@revision`) or a KerasHub preset name
(`"bert_base_en_uncased"`, `"kaggle://keras/bert/keras/bert_base_en_uncased/3"`) into a local directory,
from the hub library's cache or downloaded into it. A local path that exists is returned as it is.

`huggingface_hub` and `kagglehub` are imported only for a name. Hugging Face: `HF_HUB_OFFLINE=1`, or the
files already in the cache (`HF_HUB_CACHE`, else `HF_HOME`/hub), mean no network (`local_files_only`).
KerasHub: preset names map to Kaggle handles through keras_hub's own preset table; a cached version (in
`KAGGLEHUB_CACHE`) is used without network, the newest cached one when the name gives no version.
"""

from __future__ import annotations

import glob
import os
import re

from keras_bert.errors import UserInputError

# What a BERT checkpoint reads: weights (safetensors, else pytorch, sharded or not), config, tokenizer
# files, sentence-transformers' pooling, and a KerasHub preset's files (KerasHub presets live on HF too).
_TEXT_FILES = ["config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
               "special_tokens_map.json", "modules.json", "1_Pooling/config.json", "preprocessor.json",
               "task.json", "metadata.json", "assets/tokenizer/*"]
_SAFETENSORS = ["model.safetensors", "model.safetensors.index.json", "model-*-of-*.safetensors",
                "model.weights.h5", "model_*.weights.h5", "model.weights.json", "task.weights.h5"]
_PYTORCH = ["pytorch_model.bin", "pytorch_model.bin.index.json", "pytorch_model-*-of-*.bin"]
_PART = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_NAME = re.compile(rf"(?:{_PART}/)?{_PART}(?:@[A-Za-z0-9._/-]+)?")
_FILE_SUFFIXES = (".keras", ".json", ".txt", ".h5", ".ckpt", ".index", ".bin", ".safetensors")
HF_PREFIX, KAGGLE_PREFIX = "hf://", "kaggle://"


class CheckpointNameError(UserInputError, ValueError):
    """A checkpoint name that is not cached and cannot be fetched; the message names the cache and switch."""


def is_checkpoint_name(value) -> bool:
    """True when `value` (a str) is not an existing path and reads as a hub name: `hf://...`,
    `kaggle://...`, `name` or `org/name` (optionally `@revision`), not a file name such as `x.keras`."""
    value = os.fspath(value) if value is not None else ""
    if not value or os.path.exists(value) or glob.glob(glob.escape(value) + ".*"):
        return False
    if value.startswith((HF_PREFIX, KAGGLE_PREFIX)):
        return True
    return bool(_NAME.fullmatch(value)) and not value.split("@")[0].endswith(_FILE_SUFFIXES)


def local_checkpoint(path_or_name):
    """The local path of `path_or_name`: itself when it is a path (or does not read as a name, so the
    loader reports it missing), else the directory a hub name resolves to (`is_checkpoint_name`). Raises
    CheckpointNameError (one line: the name, the cache looked in, the offline switch) when a name is not
    cached and cannot be fetched, or its hub library is not installed."""
    path = os.fspath(path_or_name)
    if not is_checkpoint_name(path):
        return path
    if path.startswith(KAGGLE_PREFIX):
        return _kaggle(path, path.removeprefix(KAGGLE_PREFIX))
    if path.startswith(HF_PREFIX):
        return _huggingface(path, path.removeprefix(HF_PREFIX))
    handle = _keras_hub_handle(path) if "/" not in path and "@" not in path else None
    return _kaggle(path, handle) if handle else _huggingface(path, path)


def _import(module, name):
    try:
        return __import__(module)
    except ImportError as e:
        raise CheckpointNameError(f"{name}: loading a checkpoint by name needs the {module} package "
                                  f"(pip install {module}): {e}") from None


def hf_cache_dir() -> str:
    """The Hugging Face hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else huggingface_hub's default."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return os.path.join(os.environ["HF_HOME"], "hub")
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _hf_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _huggingface(name, repo):
    """The snapshot directory of Hugging Face repo `repo` (`org/name[@revision]`) holding the checkpoint's
    files: from the cache when offline or already cached, else downloaded."""
    hub = _import("huggingface_hub", name)
    repo_id, _, revision = repo.partition("@")
    cache, offline = hf_cache_dir(), _hf_offline()
    cached = isinstance(hub.try_to_load_from_cache(repo_id, "config.json", cache_dir=cache,
                                                   revision=revision or None), str)
    switch = "HF_HUB_OFFLINE=1 is set" if offline else "set HF_HUB_OFFLINE=1 to use the cache only"
    try:
        snapshot = _hf_snapshot(hub, repo_id, revision or None, cache, offline or cached, _SAFETENSORS)
        if not _has_weights(snapshot) and not (offline or cached):
            snapshot = _hf_snapshot(hub, repo_id, revision or None, cache, False, _PYTORCH)
    except Exception as e:  # the hub's errors are many types (HTTP, offline, not found): one line each
        held = _hf_cached_revisions(cache, repo_id)
        what = (f"revision {revision!r} of Hugging Face repo {repo_id!r} is not in the cache {cache} (it "
                f"holds {', '.join(held)})" if revision and held else
                f"Hugging Face repo {repo_id!r} is not in the cache {cache}")
        raise CheckpointNameError(f"{name}: not a local path, and {what} and could not be fetched "
                                  f"({switch}): {_reason(e)}") from None
    return snapshot


def _hf_cached_revisions(cache, repo_id):
    """The revisions of `repo_id` in huggingface_hub's `cache`: its refs (branches, tags) and snapshots."""
    repo = os.path.join(cache, "models--" + repo_id.replace("/", "--"))
    return [name for folder in ("refs", "snapshots") if os.path.isdir(os.path.join(repo, folder))
            for name in sorted(os.listdir(os.path.join(repo, folder)))]


def _hf_snapshot(hub, repo_id, revision, cache, local_only, weights):
    return hub.snapshot_download(repo_id, revision=revision, cache_dir=cache, local_files_only=local_only,
                                 allow_patterns=_TEXT_FILES + weights, etag_timeout=10)


def _has_weights(directory):
    return any(os.path.exists(os.path.join(directory, name))
               for name in ("model.safetensors", "model.safetensors.index.json", "model.weights.h5",
                            "model.weights.json"))


def _keras_hub_handle(name):
    """The Kaggle handle keras_hub's preset table gives the preset `name`, or None when it is none."""
    try:
        import keras_hub  # noqa: F401  (registers every model's presets into BUILTIN_PRESETS)
        from keras_hub.src.utils.preset_utils import BUILTIN_PRESETS
    except ImportError:
        return None
    preset = BUILTIN_PRESETS.get(name)
    handle = preset.get("kaggle_handle", "") if preset else ""
    return handle.removeprefix(KAGGLE_PREFIX) or None


def kaggle_cache_dir() -> str:
    """kagglehub's cache: $KAGGLEHUB_CACHE, else kagglehub's default."""
    from kagglehub.config import get_cache_folder

    return get_cache_folder()


def _kaggle(name, handle):
    """The directory of the Kaggle model `handle` (`owner/model/framework/variation[/version]`): a cached
    version without network (the newest cached when none is given), else downloaded by kagglehub."""
    kagglehub = _import("kagglehub", name)
    parts = handle.split("/")
    if len(parts) not in (4, 5):
        raise CheckpointNameError(f"{name}: expected kaggle://owner/model/framework/variation[/version]")
    cache = kaggle_cache_dir()
    found = _kaggle_cached(cache, parts)
    if found:
        return found
    try:
        return kagglehub.model_download(handle)
    except Exception as e:  # kagglehub raises HTTP, connection and value errors: one line each
        reason = _reason(e)
        raise CheckpointNameError(f"{name}: not a local path, and Kaggle model {handle!r} is not in the "
                                  f"kagglehub cache {cache} (KAGGLEHUB_CACHE) and could not be fetched "
                                  f"(kagglehub has no offline switch; a cached version is used without "
                                  f"network): {reason}") from None


def _reason(error):
    """The first line of a hub library's `error` (its type name when it has no message)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _kaggle_cached(cache, parts):
    """The cached directory of the handle `parts` kagglehub marked complete (`<version>.complete`), the
    newest version when `parts` has none; else None."""
    base = os.path.join(cache, "models", *parts[:4])
    versions = [parts[4]] if len(parts) == 5 else sorted(
        (v for v in os.listdir(base) if v.isdigit()) if os.path.isdir(base) else [], key=int, reverse=True)
    for version in versions:
        directory = os.path.join(base, version)
        if os.path.isdir(directory) and os.path.exists(f"{directory}.complete"):
            return directory
    return None
