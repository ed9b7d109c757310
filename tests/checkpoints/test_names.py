"""Checkpoints by name, offline: a tiny checkpoint laid out exactly as huggingface_hub caches a snapshot
(blobs + symlinks + refs/main) and as kagglehub caches a model (`<version>/` + `<version>.complete`) loads
by name equal to loading its path; a name in neither cache is one line, quickly."""

import hashlib
import json
import os
import re
import shutil
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder, save_keras_hub
from keras_bert.checkpoints.names import CheckpointNameError, is_checkpoint_name, local_checkpoint
from tests.recipes.conftest import run_in_process  # noqa: F401  (fixture)
from tests.tasks.test_extend_vocab import write_tiny_checkpoint

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TEXTS = ["the tokens", "a b c 1 2 3"]


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """(hf cache, kaggle cache): empty tmp dirs the hub libraries look in, offline (Kaggle's endpoint is a
    closed local port, so a look-up fails at once)."""
    hf, kaggle = tmp_path / "hf_hub", tmp_path / "kagglehub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hf))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(kaggle))
    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCAL")  # http://localhost: refused at once
    return hf, kaggle


def cache_hf_snapshot(cache, repo_id, directory):
    """Lays `directory`'s files out as huggingface_hub caches revision main of `repo_id`: content-addressed
    blobs, snapshots/<commit>/<file> relative symlinks into them, refs/main naming the commit."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    for root, _, files in os.walk(directory):
        for name in files:
            relative = os.path.relpath(os.path.join(root, name), directory)
            data = open(os.path.join(root, name), "rb").read()
            blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
            blob.write_bytes(data)
            link = repo / "snapshots" / COMMIT / relative
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)


def cache_kaggle_model(cache, handle, directory):
    """Copies `directory` where kagglehub caches the model `handle` (owner/model/framework/variation/version),
    marked complete as kagglehub marks a finished download."""
    *base, version = handle.split("/")
    target = cache / "models" / os.path.join(*base)
    shutil.copytree(directory, target / version)
    (target / f"{version}.complete").touch()


def _outputs(encoder):
    return encoder(encoder.preprocessor(tf.constant(TEXTS)))["sequence_output"].numpy()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(Hugging Face dir, KerasHub preset dir of the same weights, outputs of loading the HF dir)."""
    directory = tmp_path_factory.mktemp("tiny")
    path, _ = write_tiny_checkpoint(directory, "huggingface")
    encoder = BertEncoder.from_pretrained(path)
    return path, save_keras_hub(encoder, directory / "preset"), _outputs(encoder)


@pytest.fixture
def tiny_hf(tiny):
    return tiny[0]


def test_names_and_paths_are_told_apart(tmp_path):
    names = ["bert-base-uncased", "google-bert/bert-base-uncased", "hf://org/name", "org/name@v1.0",
             "bert_base_en_uncased", "kaggle://keras/bert/keras/x"]
    assert all(map(is_checkpoint_name, names))
    assert not any(map(is_checkpoint_name, ["model.keras", "a/b/c", "./ckpt", "/no/such", str(tmp_path), ""]))
    (tmp_path / "org").mkdir()
    assert local_checkpoint(str(tmp_path / "org")) == str(tmp_path / "org")  # an existing path wins


@pytest.mark.parametrize("name", ["org/tiny-bert", "hf://org/tiny-bert", "hf://org/tiny-bert@main"])
def test_huggingface_name_loads_from_the_cache(caches, tiny, name):
    cache_hf_snapshot(caches[0], "org/tiny-bert", tiny[0])
    snapshot = local_checkpoint(name)
    assert snapshot == str(caches[0] / "models--org--tiny-bert" / "snapshots" / COMMIT)
    np.testing.assert_array_equal(_outputs(BertEncoder.from_pretrained(name)), tiny[2])


def test_legacy_huggingface_name_without_org(caches, tiny):
    cache_hf_snapshot(caches[0], "bert-base-uncased", tiny[0])
    np.testing.assert_array_equal(_outputs(BertEncoder.from_pretrained("bert-base-uncased")), tiny[2])


@pytest.mark.parametrize("name", ["bert_base_en_uncased", "kaggle://keras/bert/keras/bert_base_en_uncased",
                                  "kaggle://keras/bert/keras/bert_base_en_uncased/3"])
def test_keras_hub_preset_name_loads_from_the_kagglehub_cache(caches, tiny, name):
    # keras_hub's table maps bert_base_en_uncased to kaggle://keras/bert/keras/bert_base_en_uncased/3.
    cache_kaggle_model(caches[1], "keras/bert/keras/bert_base_en_uncased/3", tiny[1])
    assert local_checkpoint(name) == str(caches[1] / "models/keras/bert/keras/bert_base_en_uncased/3")
    np.testing.assert_allclose(_outputs(BertEncoder.from_pretrained(name)), tiny[2], atol=1e-5)


@pytest.mark.parametrize("name, words", [
    ("org/missing", ["'org/missing'", "HF_HUB_OFFLINE=1", "hf_hub"]),
    ("hf://org/missing@v2", ["'org/missing'", "HF_HUB_OFFLINE=1", "hf_hub"]),
    # was: "repo 'org/tiny-bert' is not in the cache", the revision never named
    ("hf://org/tiny-bert@badrev", ["revision 'badrev' of Hugging Face repo 'org/tiny-bert' is not in the "
                                   f"cache {{cache}} (it holds main, {COMMIT})", "HF_HUB_OFFLINE=1"]),
    ("bert_base_en_uncased", ["keras/bert/keras/bert_base_en_uncased/3", "KAGGLEHUB_CACHE", "kagglehub"])])
def test_name_not_cached_is_one_line_quickly(caches, tiny, name, words):
    cache_hf_snapshot(caches[0], "org/tiny-bert", tiny[0])  # another repo, or another revision, is cached
    start = time.monotonic()
    with pytest.raises(CheckpointNameError) as raised:
        BertEncoder.from_pretrained(name)
    assert time.monotonic() - start < 20
    message = str(raised.value)
    assert message.startswith(f"{name}: not a local path") and "\n" not in message
    assert all(word.format(cache=caches[0]) in message for word in words), message


def test_recipe_flag_takes_a_name(caches, tiny_hf, tmp_path, run_in_process):  # noqa: F811
    cache_hf_snapshot(caches[0], "org/tiny-bert", tiny_hf)
    (tmp_path / "input.txt").write_text("\n".join(TEXTS) + "\n")
    records = {}
    for checkpoint in ("org/tiny-bert", tiny_hf):
        output = tmp_path / f"features_{len(records)}.jsonl"
        status, err = run_in_process("extract_features", f"--init_checkpoint={checkpoint}",
                                     f"--input_file={tmp_path / 'input.txt'}", f"--output_file={output}",
                                     "--layers=-1", "--max_seq_length=16", "--batch_size=2")
        assert status in (0, None), err
        records[checkpoint] = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(records[tiny_hf]) == 2 and records["org/tiny-bert"] == records[tiny_hf]

    status, err = run_in_process("extract_features", "--init_checkpoint=org/missing",
                                 f"--input_file={tmp_path / 'input.txt'}",
                                 f"--output_file={tmp_path / 'x.jsonl'}")
    assert status == 1
    assert err.strip().splitlines()[-1].startswith("error: org/missing: not a local path")
    assert err.strip().endswith("(given as --init_checkpoint=org/missing)")


@pytest.mark.parametrize("name, package", [("org/tiny-bert", "huggingface_hub"),
                                           ("kaggle://keras/bert/keras/bert_base_en_uncased/3", "kagglehub")])
def test_hub_package_missing_is_one_line(caches, monkeypatch, name, package):
    monkeypatch.setitem(sys.modules, package, None)  # as if not installed: `import` raises ImportError
    with pytest.raises(CheckpointNameError, match=rf"^{re.escape(name)}: .*needs the {package} package"):
        local_checkpoint(name)


def test_export_model_path_takes_a_name(caches, tiny, tmp_path, run_in_process):  # noqa: F811
    cache_hf_snapshot(caches[0], "org/tiny-bert", tiny[0])
    status, err = run_in_process("export.save_keras_hub", "--model_path=hf://org/tiny-bert",
                                 f"--output_dir={tmp_path / 'preset'}")
    assert status in (0, None), err
    exported = BertEncoder.from_pretrained(str(tmp_path / "preset"))
    np.testing.assert_allclose(_outputs(exported), tiny[2], atol=1e-5)
