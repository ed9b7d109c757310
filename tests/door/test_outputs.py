"""The one guarded writer (keras_bert/outputs.py) as every writer meets it: an output that is, holds or lies
inside an input is refused with the input intact; an existing one is refused unless overwrite, which
replaces the writer's own output (never a file it did not write: tests/door/test_writers_share_dirs.py);
a second writer is refused at once, naming the first; a failed, killed or stopped write leaves nothing
behind. Library writers and scripts run in this process; the other writers are forked."""

import contextlib
import errno
import json
import os
import signal
import socket
import time
import warnings

import keras
import numpy as np
import pytest

import keras_bert as kb
from keras_bert import outputs
from keras_bert.checkpoints import save_google_checkpoint, save_huggingface, save_keras_hub, save_pretrained
from keras_bert.errors import UserInputError
from tests.tasks.test_extend_vocab import write_tiny_checkpoint

LINES = ["the quick brown fox", "a lazy dog sleeps"]


def _tree(path):
    """{relative path: bytes} of every file under `path` (or of the file `path`)."""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return {".": f.read()}
    tree = {}
    for root, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                tree[os.path.relpath(os.path.join(root, name), path)] = f.read()
    return tree


def _leftovers(directory):
    """Hidden temporaries and locks of ours in `directory`: what a clean writer never leaves."""
    return sorted(n for n in os.listdir(directory)
                  if n.startswith(".tmp-") or n.endswith(outputs.LOCK_SUFFIX))


@contextlib.contextmanager
def _other_writer(path, kind="dir"):
    """A forked process holding the claim of `path` until the block ends; yields its pid."""
    read_end, write_end = os.pipe()
    done_read, done_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the other writer: claim, say so, wait, exit without running this process's cleanup
        try:
            with outputs.claim(path, kind=kind):
                os.write(write_end, b"1")
                os.read(done_read, 1)
        finally:
            os._exit(0)
    try:
        assert os.read(read_end, 1) == b"1"
        yield pid
    finally:
        os.write(done_write, b"1")
        os.waitpid(pid, 0)
        for fd in (read_end, write_end, done_read, done_write):
            os.close(fd)


def _killed_while_writing(write):
    """Forks a process that runs `write()` and is SIGKILLed inside it (write() kills itself)."""
    pid = os.fork()
    if pid == 0:
        try:
            write()
        finally:
            os._exit(1)  # not reached when write() kills itself
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


# --- The output files of the scripts: is / holds / lies inside an input, or exists -------------------------

@pytest.fixture
def script_inputs(tmp_path, tiny_model):
    """(text file, tiny-model flags, vocab file) for the scripts."""
    text = tmp_path / "input.txt"
    text.write_text("\n".join(LINES) + "\n")
    flags = tiny_model(LINES)
    return str(text), flags, flags[0].split("=", 1)[1]


def _file_cases(text, flags, vocab):
    """(script, argv, the input the output is, its flag) for each script writing an --output_file."""
    features = [*flags, "--layers=-1"]
    return [
        ("build_vocab", [f"--input_files={text}", f"--output_file={text}"], text, "input_files"),
        ("create_pretraining_data",
         [f"--input_file={text}", f"--output_file={text}", f"--vocab_file={vocab}"], text, "input_file"),
        ("create_pretraining_data",
         [f"--input_file={text}", f"--output_file={vocab}", f"--vocab_file={vocab}"], vocab, "vocab_file"),
        ("extract_features", [*features, f"--input_file={text}", f"--output_file={text}"], text,
         "input_file"),
        ("extract_features", [*features, f"--input_file={text}", f"--output_file={vocab}"], vocab,
         "vocab_file"),
    ]


@pytest.mark.parametrize("case", range(5))
def test_an_output_file_that_is_an_input_is_refused_with_the_input_intact(run_in_process, script_inputs,
                                                                          tmp_path, case):
    name, argv, source, flag = _file_cases(*script_inputs)[case]
    before = _tree(source)
    start = time.monotonic()
    status, stderr = run_in_process(name, *argv,
                                    f"--output_dir={tmp_path / 'out'}" * (name == "extract_features"))
    seconds = time.monotonic() - start
    label = f"--{flag}={source}" if flag == "vocab_file" else f"{source} (of --{flag})"
    assert (status, stderr) == (1, f"error: --output_file={source} is or contains the input {label}: writing "
                                   f"there would replace it; choose another --output_file\n")
    assert _tree(source) == before and seconds < 5  # refused before any work
    assert _leftovers(tmp_path) == [] and not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("name", ["build_vocab", "create_pretraining_data", "extract_features"])
def test_an_output_file_that_exists_or_is_being_written_is_refused(run_in_process, script_inputs, tmp_path,
                                                                   name):
    text, flags, vocab = script_inputs
    output = tmp_path / "output"
    argv = {"build_vocab": [f"--input_files={text}"],
            "create_pretraining_data": [f"--input_file={text}", f"--vocab_file={vocab}"],
            "extract_features": [*flags, f"--input_file={text}", f"--output_dir={tmp_path / 'out'}"]}[name]
    with _other_writer(str(output), kind="file") as pid:
        status, stderr = run_in_process(name, *argv, f"--output_file={output}")
    assert status == 1 and stderr.startswith(f"error: --output_file={output} is being written by another run "
                                             f"(pid {pid} on {socket.gethostname()}: ")
    output.write_bytes(b"an earlier output")
    status, stderr = run_in_process(name, *argv, f"--output_file={output}")
    assert (status, stderr) == (1, f"error: --output_file={output} exists: pass --overwrite to replace it, "
                                   f"or choose another --output_file\n")
    assert output.read_bytes() == b"an earlier output" and not os.path.exists(tmp_path / "out")
    assert _leftovers(tmp_path) == []


def test_an_existing_output_file_is_replaced_only_with_overwrite(run_in_process, script_inputs, tmp_path):
    text, _, _ = script_inputs
    vocab = tmp_path / "vocab_out.txt"
    vocab.write_text("an old vocab\n")
    argv = [f"--input_files={text}", f"--output_file={vocab}", "--vocab_size=60", "--min_frequency=1"]
    status, stderr = run_in_process("build_vocab", *argv)
    assert (status, stderr) == (1, f"error: --output_file={vocab} exists: pass --overwrite to replace it, or "
                                   f"choose another --output_file\n")
    assert vocab.read_text() == "an old vocab\n"
    status, stderr = run_in_process("build_vocab", *argv, "--overwrite")
    assert status is None, stderr  # main returned
    tokens = vocab.read_text().splitlines()
    assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and "quick" in tokens
    assert _leftovers(tmp_path) == []


# --- The library's directory writers -----------------------------------------------------------------------

def _savers(tiny_config):
    encoder = kb.BertEncoder(tiny_config)
    return {
        "save_pretrained": lambda path, **kw: save_pretrained(encoder, path, **kw),
        "save_huggingface": lambda path, **kw: save_huggingface(encoder, path, **kw),
        "save_google_checkpoint": lambda path, **kw: save_google_checkpoint(
            encoder, os.path.join(path, "bert_model.ckpt"), **kw),
        "save_keras_hub": lambda path, vocab_file=None, **kw: save_keras_hub(encoder, path, **kw),
    }


SAVERS = ["save_pretrained", "save_huggingface", "save_google_checkpoint", "save_keras_hub"]


@pytest.mark.parametrize("name", SAVERS)
def test_a_library_writer_refuses_an_existing_directory_and_overwrite_replaces_only_its_own(tiny_config,
                                                                                            tmp_path, name):
    save = _savers(tiny_config)[name]
    path = tmp_path / "out"
    path.mkdir()
    (path / "stale.json").write_text("{}")
    with pytest.raises(UserInputError) as error:
        save(str(path))
    assert str(error.value) == (f"{path} is not empty (stale.json): pass overwrite=True to replace it, or "
                                f"choose another path")
    assert _tree(path) == {"stale.json": b"{}"}
    save(str(path), overwrite=True)
    first = _tree(path)
    assert first["stale.json"] == b"{}" and len(first) > 2  # not the writer's file: kept beside its output
    save(str(path), overwrite=True)
    assert sorted(_tree(path)) == sorted(first)  # its own previous output replaced, nothing merged
    assert _leftovers(tmp_path) == [] and _leftovers(path) == []
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("name", [n for n in SAVERS if n != "save_keras_hub"])
def test_a_library_writer_refuses_a_directory_holding_its_vocab_file(tiny_config, tmp_path, name):
    path = tmp_path / "out"
    path.mkdir()
    vocab = path / "vocab.txt"
    vocab.write_text("[PAD]\n")
    with pytest.raises(UserInputError, match=f"^{path} is or contains the input {vocab}: writing there"):
        _savers(tiny_config)[name](str(path), vocab_file=str(vocab), overwrite=True)
    assert _tree(path) == {"vocab.txt": b"[PAD]\n"}


@pytest.mark.parametrize("name", SAVERS)
def test_a_second_writer_is_refused_at_once_naming_the_first(tiny_config, tmp_path, name):
    path, save = str(tmp_path / "fresh"), _savers(tiny_config)[name]
    with _other_writer(path) as pid:
        start = time.monotonic()
        with pytest.raises(UserInputError) as error:
            save(path)
        assert time.monotonic() - start < 5  # at once: no waiting for the first writer
    assert str(error.value).startswith(f"{path} is being written by another run (pid {pid} on "
                                       f"{socket.gethostname()}: ")
    lock = tmp_path / f".fresh{outputs.LOCK_SUFFIX}"
    assert str(error.value).endswith(f"wait for it to finish or choose another path (if that run is gone, "
                                     f"remove {lock})")
    assert not os.path.exists(path)
    save(path)  # the first writer gone: the path is free
    assert os.listdir(path) and _leftovers(tmp_path) == []


def _boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


STALE_LOCKS = {  # a lock left by a holder that cannot be alive (was: refused for ever, or for 24 h)
    "a container's pid 1, alive on the host": f"{socket.gethostname()}-container 1 {_boot_id()} 1\nrun\n",
    "another host": "elsewhere 4242 another-boot 77\nrun\n",
    "this host, its process gone": f"{socket.gethostname()} 1 {_boot_id()} 1\nrun\n",
    "empty: killed between create and write": "",
    "unreadable bytes": b"\xff\xfe\n",
}


@pytest.mark.parametrize("case", STALE_LOCKS)
def test_a_lock_whose_holder_cannot_be_alive_is_taken_over_saying_so(tmp_path, caplog, case):
    lock, content = tmp_path / f".out{outputs.LOCK_SUFFIX}", STALE_LOCKS[case]
    lock.write_bytes(content if isinstance(content, bytes) else content.encode())
    with caplog.at_level("WARNING", logger="keras_bert"), outputs.claim(str(tmp_path / "out")):
        assert lock.read_text().split()[1] == str(os.getpid())
    assert len(caplog.records) == 1 and caplog.records[0].getMessage().startswith(
        f"{lock}: taking over the lock of ")
    assert _leftovers(tmp_path) == []


def test_a_refusal_names_the_whole_command_and_the_lock(tmp_path, monkeypatch):
    path = str(tmp_path / "out")
    command = ["keras-bert", "run_classifier", *[f"--flag_{i}=value" for i in range(40)],
               f"--output_dir={path}"]
    monkeypatch.setattr("sys.argv", command)  # the forked writer's command line: 700 characters
    with _other_writer(path) as pid, pytest.raises(UserInputError) as error:
        outputs.claim(path)
    assert str(error.value) == (
        f"{path} is being written by another run (pid {pid} on {socket.gethostname()}: {' '.join(command)}); "
        f"wait for it to finish or choose another path (if that run is gone, remove "
        f"{tmp_path}/.out{outputs.LOCK_SUFFIX})")


def test_an_unwritable_place_is_one_line_naming_the_output(tmp_path, monkeypatch):
    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path))

    monkeypatch.setattr(outputs.tempfile, "mkstemp", read_only)  # as root, a chmod would not refuse
    label = f"--output_dir={tmp_path / 'out'}"
    # was: [Errno 30] Read-only file system: '.../.out.keras_bert_lock', neither the output nor flag named
    with pytest.raises(UserInputError) as error:
        outputs.claim(str(tmp_path / "out"), label=label, flag="output_dir")
    assert str(error.value) == f"{label} cannot be written here (Read-only file system: {tmp_path})"


def test_a_failed_save_leaves_no_partial_output_nor_the_parents_it_made(tiny_config, tmp_path):
    path = tmp_path / "new" / "parent" / "hf"
    with pytest.raises(FileNotFoundError, match="vocab_file not found"):  # after the weights were written
        save_huggingface(kb.BertEncoder(tiny_config), str(path), vocab_file=str(tmp_path / "missing.txt"))
    assert os.listdir(tmp_path) == []


def test_a_killed_save_leaves_no_partial_output_and_the_next_one_takes_over(tiny_config, tmp_path):
    encoder = kb.BertEncoder(tiny_config)
    path = tmp_path / "ours"

    def killed_save():
        with outputs.writing_dir(str(path)) as tmp:
            with open(os.path.join(tmp, "model.keras"), "wb") as f:
                f.write(b"half a zip")
            os.kill(os.getpid(), signal.SIGKILL)

    _killed_while_writing(killed_save)
    assert not path.exists() and len(_leftovers(tmp_path)) == 2  # its temporary directory and its lock
    save_pretrained(encoder, str(path))
    assert sorted(os.listdir(path)) == [outputs.MANIFEST, "bert_config.json", "model.keras"]
    assert _leftovers(tmp_path) == []

    def killed_file_write():
        with outputs.writing_file(str(tmp_path / "vocab.txt")) as tmp:
            with open(tmp, "w") as f:
                f.write("[PAD]\n")
            os.kill(os.getpid(), signal.SIGKILL)

    _killed_while_writing(killed_file_write)
    assert not (tmp_path / "vocab.txt").exists()
    with outputs.writing_file(str(tmp_path / "vocab.txt")) as tmp:
        with open(tmp, "w") as f:
            f.write("[UNK]\n")
    assert (tmp_path / "vocab.txt").read_text() == "[UNK]\n" and _leftovers(tmp_path) == []


def test_a_keras_file_is_replaced_as_keras_does(tiny_config, tmp_path):
    from keras_bert.checkpoints import save_without_optimizer

    path = tmp_path / "clf.keras"
    path.write_bytes(b"an older model")
    model = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=2)
    model.compile()  # as a recipe's model: compiled, its optimizer state left out
    save_without_optimizer(model, str(path))
    assert path.read_bytes()[:2] == b"PK" and _leftovers(tmp_path) == []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.saving.load_model(str(path))
    assert loaded.optimizer is not None  # compiled again, quietly (was: "Skipping variable loading for
    assert not [str(w.message) for w in caught if "optimizer" in str(w.message)]  # optimizer 'adam_w'")


def test_an_output_inside_an_input_directory_is_refused(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    link = tmp_path / "link"
    link.symlink_to(checkpoint)
    with pytest.raises(UserInputError, match=f"^{link / 'sub'} lies inside the input {checkpoint}: "):
        outputs.claim(str(link / "sub"), [str(checkpoint)])
    assert os.listdir(checkpoint) == []


# --- save_keras_hub: the checkpoint it just read, an existing preset ---------------------------------------

def test_save_keras_hub_refuses_the_checkpoint_it_read_and_an_existing_preset(run_in_process, tmp_path):
    checkpoint, _ = write_tiny_checkpoint(tmp_path, "huggingface")
    before = _tree(checkpoint)
    for extra in ([], ["--overwrite"]):
        status, stderr = run_in_process("export.save_keras_hub", f"--model_path={checkpoint}",
                                        f"--output_dir={checkpoint}", *extra)
        assert (status, stderr) == (1, f"error: --output_dir={checkpoint} is or contains the input "
                                       f"--model_path={checkpoint}: writing there would replace it; choose "
                                       f"another --output_dir\n")
    assert _tree(checkpoint) == before
    preset = tmp_path / "preset"
    encoder = kb.BertEncoder.from_pretrained(checkpoint)
    save_keras_hub(kb.BertClassifier(encoder, num_classes=2), str(preset))
    old = _tree(preset)
    assert "task.json" in old
    status, stderr = run_in_process("export.save_keras_hub", f"--model_path={checkpoint}",
                                    f"--output_dir={preset}")
    assert status == 1 and stderr.startswith(f"error: --output_dir={preset} is not empty (")
    assert stderr.endswith(": pass --overwrite to replace it, or choose another --output_dir\n")
    assert _tree(preset) == old
    status, stderr = run_in_process("export.save_keras_hub", f"--model_path={checkpoint}",
                                    f"--output_dir={preset}", "--overwrite")
    assert status is None, stderr  # main returned
    new = _tree(preset)
    # the old head is not left beside the backbone
    assert "task.json" not in new and "task.weights.h5" not in new
    assert json.loads(new["config.json"])["config"]["num_layers"] == 2


# --- Recipe output directories: concurrent runs, nothing left behind ---------------------------------------

def _classifier_flags(tmp_path, tiny_model):
    train = tmp_path / "train.csv"
    train.write_text("text,label\nthe quick fox,a\n")
    return [*tiny_model(LINES), f"--train_file={train}", "--do_eval=false"]


def test_two_runs_into_one_fresh_directory_one_is_refused_naming_the_first(run_in_process, tiny_model,
                                                                           tmp_path):
    out = str(tmp_path / "out")
    flags = [*_classifier_flags(tmp_path, tiny_model), f"--output_dir={out}"]
    with _other_writer(out) as pid:
        start = time.monotonic()
        status, stderr = run_in_process("run_classifier", *flags)
        assert time.monotonic() - start < 5
    assert status == 1 and stderr.startswith(f"error: --output_dir={out} is being written by another run "
                                             f"(pid {pid} on {socket.gethostname()}: ")
    assert stderr.endswith(f"wait for it to finish or choose another --output_dir (if that run is gone, "
                           f"remove {tmp_path}/.out{outputs.LOCK_SUFFIX})\n")
    assert not os.path.exists(out) and _leftovers(tmp_path) == []


def test_sigterm_before_any_write_leaves_no_directory(run_in_process, tiny_model, tmp_path, monkeypatch):
    from recipes import common

    out = tmp_path / "new" / "out"

    def stopped(*_):  # SIGTERM arrives once the directory is claimed, before anything is written there
        assert os.path.isfile(out / ".keras_bert_run")
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(common, "finetuning_tokenizer", stopped)
    with pytest.raises(SystemExit) as stopped:
        run_in_process("run_classifier", *_classifier_flags(tmp_path, tiny_model), f"--output_dir={out}")
    assert stopped.value.code == 128 + signal.SIGTERM
    assert not (tmp_path / "new").exists() and _leftovers(tmp_path) == []


def test_a_failing_non_chief_worker_creates_nothing(run_in_process, tiny_model, tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                "task": {"type": "worker", "index": 1}}))
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"text,label\n\xe9,a\n")
    status, stderr = run_in_process("run_classifier", *tiny_model(LINES), f"--train_file={bad}",
                                    "--do_eval=false", f"--output_dir={out}")
    assert status == 1 and ":2: not valid UTF-8" in stderr
    assert not out.exists() and _leftovers(tmp_path) == []


def test_a_run_that_never_uses_its_output_dir_does_not_create_one(run_in_process, script_inputs, tmp_path):
    text, flags, _ = script_inputs
    features = tmp_path / "features.jsonl"
    status, stderr = run_in_process("extract_features", *flags, "--layers=-1", f"--input_file={text}",
                                    f"--output_file={features}", f"--output_dir={tmp_path / 'unused'}")
    assert status is None, stderr  # main returned
    records = [json.loads(line) for line in features.read_text().splitlines()]
    assert [r["linex_index"] for r in records] == [0, 1]
    assert np.isfinite(records[0]["features"][0]["layers"][0]["values"]).all()
    assert not (tmp_path / "unused").exists() and _leftovers(tmp_path) == []


def test_overwrite_replaces_the_output_it_wrote_and_keeps_the_rest(run_in_process, tmp_path):
    checkpoint, _ = write_tiny_checkpoint(tmp_path, "huggingface")
    corpus = tmp_path / "domain.txt"
    corpus.write_text("wordpieces wordpieces tokenizer\n" * 3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.txt").write_text("an older run")
    argv = [f"--init_checkpoint={checkpoint}", f"--input_files={corpus}", f"--output_dir={out}",
            "--num_new_tokens=1", "--min_frequency=1"]
    status, stderr = run_in_process("extend_vocab", *argv)
    assert (status, stderr) == (1, f"error: --output_dir={out} is not empty (stale.txt): pass --overwrite to "
                                   f"replace it, or choose another --output_dir\n")
    status, stderr = run_in_process("extend_vocab", *argv, "--overwrite")
    assert status is None, stderr  # main returned
    assert sorted(os.listdir(out)) == [outputs.MANIFEST, "config.json", "model.safetensors", "stale.txt",
                                       "vocab.txt"]  # stale.txt is not its output: kept
    assert _leftovers(tmp_path) == []


def test_a_directory_in_a_read_only_parent_is_locked_and_filled_from_inside(run_in_process, tiny_model,
                                                                             tmp_path, monkeypatch,
                                                                             tiny_config):
    # Root may write anywhere, so the read-only parent (a volume mounted in a read-only root) is what
    # `parent_writable` answers; every file operation below is real.
    out = tmp_path / "volume"
    out.mkdir()
    (out / "stale.json").write_text("{}")
    monkeypatch.setattr(outputs, "parent_writable", lambda path: not str(path).startswith(str(out)))
    save_pretrained(kb.BertEncoder(tiny_config), str(out), overwrite=True)
    assert sorted(os.listdir(out)) == [outputs.MANIFEST, "bert_config.json", "model.keras", "stale.json"]
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"text,label\n\xe9,a\n")
    status, stderr = run_in_process("run_classifier", *tiny_model(LINES), f"--train_file={bad}",
                                    "--do_eval=false", f"--output_dir={out}", "--overwrite")
    assert status == 1 and ":2: not valid UTF-8" in stderr
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before  # put back, nothing left
