"""Published exports are readable by other users, killed exports leave nothing behind for long, and bad
serving inputs fail with an error naming the input."""

import os
import pathlib
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder, outputs
from keras_bert.export import export_saved_model
from keras_bert.models.served_inputs import checked_inputs
from keras_bert.models.serving import text_spec


@pytest.fixture(scope="module")
def encoder():
    return BertEncoder(BertConfig(vocab_size=12, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                  intermediate_size=16, max_position_embeddings=16))


def _modes(top):
    """{relative path: permission bits} of every directory and file under `top`."""
    modes = {".": stat.S_IMODE(os.stat(top).st_mode)}
    for root, directories, files in os.walk(top):
        for name in directories + files:
            path = os.path.join(root, name)
            modes[os.path.relpath(path, top)] = stat.S_IMODE(os.stat(path).st_mode)
    return modes


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


@pytest.mark.parametrize("umask, dir_mode, file_mode", [(0o022, 0o755, 0o644), (0o027, 0o750, 0o640)])
def test_version_dir_has_the_umask_modes(encoder, tmp_path, umask, dir_mode, file_mode):
    previous = os.umask(umask)
    try:
        version_dir = export_saved_model(encoder, tmp_path / "export")
    finally:
        os.umask(previous)
    modes = _modes(version_dir)
    assert "saved_model.pb" in modes and "variables/variables.index" in modes
    assert outputs.MARKER not in modes
    for path, mode in modes.items():
        expected = dir_mode if os.path.isdir(os.path.join(version_dir, path)) else file_mode
        assert mode == expected, (path, oct(mode), oct(expected))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to switch user")
def test_another_user_can_read_the_version(encoder):
    # Not under pytest's tmp_path: its parent is 0700, so no other user could reach anything inside.
    parent = tempfile.mkdtemp()
    try:
        os.chmod(parent, 0o755)
        previous = os.umask(0o022)
        try:
            version_dir = export_saved_model(encoder, os.path.join(parent, "export"))
        finally:
            os.umask(previous)
        # As "nobody" (uid 65534), as a TF Serving process of another user would: list and read every file.
        reader = ("import os, sys\nos.setgid(65534)\nos.setuid(65534)\ntotal = 0\n"
                  "def fail(error):\n    raise error\n"
                  "for root, _, files in os.walk(sys.argv[1], onerror=fail):\n"
                  "    for name in files:\n"
                  "        with open(os.path.join(root, name), 'rb') as f:\n"
                  "            total += len(f.read())\n"
                  "print(total)\n")
        result = subprocess.run([sys.executable, "-c", reader, version_dir], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0, result.stderr
        on_disk = sum(os.path.getsize(os.path.join(root, name)) for root, _, files in os.walk(version_dir)
                      for name in files)
        assert int(result.stdout) == on_disk > 0
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_stale_temporary_directories_of_ours_are_removed(encoder, tmp_path):
    export_dir = tmp_path / "export"
    export_dir.mkdir()
    dead = export_dir / ".tmp-1-killed"
    live = export_dir / ".tmp-1-running"
    foreign = export_dir / ".tmp-someone-else"
    for directory, writer in ((dead, _dead_pid()), (live, os.getpid()), (foreign, None)):
        directory.mkdir()
        (directory / "saved_model.pb").write_bytes(b"partial")
        if writer is not None:
            (directory / outputs.MARKER).write_text(f"{socket.gethostname()} {writer}\n")
    version_dir = export_saved_model(encoder, export_dir)
    assert sorted(os.listdir(export_dir)) == [".tmp-1-running", ".tmp-someone-else", "1"]
    assert os.path.basename(version_dir) == "1"


def test_serving_inputs_of_the_wrong_rank_or_batch_name_the_input():
    from keras_bert import BertMultipleChoice

    spec = text_spec("text")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"serving input `text` must be tf.string of shape \[batch\]; got shape \[2 1\]"):
        checked_inputs({"text": tf.constant([["a"], ["b"]])}, spec)
    pair = {"text": tf.TensorSpec([None], tf.string, name="text"),
            "text_b": tf.TensorSpec([None], tf.string, name="text_b")}
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"serving inputs `text` and `text_b` must have the same batch size; "
                             r"got 2 and 1"):
        checked_inputs({"text": tf.constant(["a", "b"]), "text_b": tf.constant(["c"])}, pair)
    choices = BertMultipleChoice(BertEncoder(BertConfig(vocab_size=12, hidden_size=8, num_hidden_layers=1,
                                                        num_attention_heads=2, intermediate_size=16)), 3)
    ids = {name: tf.zeros([2, 3, 5], tf.int32) for name in choices.token_id_spec()}
    checked = checked_inputs(ids, choices.token_id_spec())
    assert sorted(checked) == sorted(ids)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"serving input `input_mask` must be tf.int32 of shape \[batch, 3, any\]; "
                             r"got shape \[2 4 5\]"):
        checked_inputs({**ids, "input_mask": tf.zeros([2, 4, 5], tf.int32)}, choices.token_id_spec())
    np.testing.assert_array_equal(checked["input_word_ids"], ids["input_word_ids"])


def test_exports_racing_for_a_version_both_publish(tmp_path):
    from keras_bert.export.saved_model import publish_version

    both_chose = threading.Barrier(2)

    def write(tag):
        def into(tmp_dir):
            (pathlib.Path(tmp_dir) / "saved_model.pb").write_text(tag)
            both_chose.wait(timeout=30)  # each has picked version 1 before either renames
        return into

    results = {}
    threads = [threading.Thread(
                   target=lambda t=tag: results.update({t: publish_version(str(tmp_path), None, write(t))}))
               for tag in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(os.path.basename(path) for path in results.values()) == ["1", "2"]
    for tag, path in results.items():
        assert (pathlib.Path(path) / "saved_model.pb").read_text() == tag
    assert sorted(os.listdir(tmp_path)) == ["1", "2"]  # no lock, no temporary left


def test_an_explicit_version_being_written_is_refused_naming_the_writer(tmp_path):
    from keras_bert.export.errors import ExportError
    from keras_bert.export.saved_model import publish_version

    writing, done = threading.Event(), threading.Event()

    def slow(tmp_dir):
        (pathlib.Path(tmp_dir) / "saved_model.pb").write_text("first")
        writing.set()
        done.wait(timeout=30)

    first = threading.Thread(target=publish_version, args=(str(tmp_path), 5, slow))
    first.start()
    try:
        assert writing.wait(timeout=30)
        with pytest.raises(ExportError, match=r"version 5 of .* is being written by another thread of this "
                                              r"process \(pid \d+\)"):
            publish_version(str(tmp_path), 5, lambda tmp_dir: pytest.fail("the second export wrote"))
        # A chosen version skips the one being written.
        assert publish_version(str(tmp_path), None, lambda tmp_dir: None) == str(tmp_path / "6")
    finally:
        done.set()
        first.join()
    assert (tmp_path / "5" / "saved_model.pb").read_text() == "first"
    # Another live process's lock (here: our parent's) is refused naming its pid and command.
    (tmp_path / ".7.keras_bert_lock").write_text(f"{socket.gethostname()} {os.getppid()}\nexport 7\n")
    owner = rf"another run \(pid {os.getppid()} on .*: export 7\)"
    with pytest.raises(ExportError, match=rf"version 7 .* {owner}"):
        publish_version(str(tmp_path), 7, lambda tmp_dir: None)
    assert sorted(os.listdir(tmp_path)) == [".7.keras_bert_lock", "5", "6"]
