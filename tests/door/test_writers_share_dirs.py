"""Nothing lost, ever: a writer replaces only what it wrote. `overwrite` replaces its previous output, never
a file it did not write in a directory it shares, never an input (by path or by file identity: a hard link
to an input is the input), and an overwrite killed half-way is settled by the next claim of the output
(restored, or the old output removed, either said in one line)."""

import logging
import os
import signal

import pytest

import keras_bert as kb
from keras_bert import outputs
from keras_bert.checkpoints import save_google_checkpoint, save_huggingface, save_keras_hub, save_pretrained
from keras_bert.errors import UserInputError
from keras_bert.export.saved_model import publish_version
from tests.door.test_outputs import _killed_while_writing


def _share(directory):
    """Puts a user's files in `directory`: {relative path: text}."""
    files = {"thesis.txt": "chapter one", os.path.join("project", "notes.md"): "todo"}
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(directory, name)) or directory, exist_ok=True)
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    return files


def _read(directory, files):
    return {name: open(os.path.join(directory, name)).read() for name in files
            if os.path.isfile(os.path.join(directory, name))}


@pytest.fixture(scope="module")
def encoder():
    return kb.BertEncoder(kb.BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2,
                                        num_attention_heads=4, intermediate_size=64,
                                        max_position_embeddings=64))  # tests/conftest.py's tiny_config


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "fox"]) + "\n")
    return str(path)


def _writers(encoder, vocab):
    """{name: write(directory, overwrite)} for each writer of the library, and the names each must write."""
    return {
        "save_pretrained": (lambda d, o: save_pretrained(encoder, d, vocab, overwrite=o), "model.keras"),
        "save_huggingface": (lambda d, o: save_huggingface(encoder, d, vocab, overwrite=o), "config.json"),
        "save_keras_hub": (lambda d, o: save_keras_hub(encoder, d, overwrite=o), "config.json"),
        "save_google_checkpoint": (lambda d, o: save_google_checkpoint(
            encoder, os.path.join(d, "bert_model.ckpt"), vocab, overwrite=o), "bert_model.ckpt.index"),
        "export_saved_model": (lambda d, o: publish_version(d, None, lambda tmp: open(
            os.path.join(tmp, "saved_model.pb"), "w").close()), os.path.join("1", "saved_model.pb")),
        "save_without_optimizer": (lambda d, o: kb.checkpoints.save_without_optimizer(
            encoder, os.path.join(d, "model.keras")), "model.keras"),
    }


WRITERS = ["save_pretrained", "save_huggingface", "save_keras_hub", "save_google_checkpoint",
           "export_saved_model", "save_without_optimizer"]


@pytest.mark.parametrize("name", WRITERS)
def test_overwrite_in_a_shared_directory_keeps_every_file_the_writer_did_not_write(encoder, vocab, tmp_path,
                                                                                   name, caplog):
    write, written = _writers(encoder, vocab)[name]
    files = _share(tmp_path)
    write(str(tmp_path), True)
    assert os.path.isfile(tmp_path / written)
    with caplog.at_level(logging.WARNING, "keras_bert"):
        if name != "export_saved_model":  # versions are immutable: a second export is version 2
            write(str(tmp_path), True)  # its own previous output replaced, the user's files again kept
    assert _read(tmp_path, files) == files
    if name.startswith("save_") and name != "save_without_optimizer":
        kept = f"{tmp_path}: kept 2 entries that this writer did not write: project, thesis.txt"
        assert kept in caplog.text
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp-") or n.endswith(outputs.LOCK_SUFFIX)]


def test_google_checkpoint_in_the_working_directory_keeps_the_users_files(encoder, tmp_path, monkeypatch):
    # The reviewer's loss: the prefix's directory (here ".") was replaced whole, thesis.txt and project/ too.
    monkeypatch.chdir(tmp_path)
    files = _share(tmp_path)
    assert save_google_checkpoint(encoder, "bert_model.ckpt", overwrite=True) == "bert_model.ckpt"
    assert _read(tmp_path, files) == files and os.getcwd() == str(tmp_path)
    config, _ = kb.checkpoints.read_checkpoint(str(tmp_path), "google")
    assert config.hidden_size == encoder.config.hidden_size


def test_overwrite_removes_its_own_stale_files_but_not_the_users(encoder, vocab, tmp_path):
    files = _share(tmp_path)
    save_pretrained(encoder, str(tmp_path), vocab, overwrite=True)
    assert os.path.isfile(tmp_path / "vocab.txt")
    save_pretrained(encoder, str(tmp_path), overwrite=True)  # no vocab this time: the old copy was ours
    assert not os.path.exists(tmp_path / "vocab.txt") and _read(tmp_path, files) == files


def test_a_hard_link_to_an_input_is_the_input(encoder, vocab, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.link(vocab, out / "my_vocab.txt")
    with pytest.raises(UserInputError, match=f"^{out} holds a link to the input {vocab}: writing there"):
        save_pretrained(encoder, str(out), vocab, overwrite=True)
    linked = tmp_path / "linked.tflite"
    os.link(vocab, linked)
    with pytest.raises(UserInputError, match=f"^{linked} is the same file as the input {vocab}: "):
        outputs.claim(str(linked), [vocab], overwrite=True, kind="file")
    assert sorted(os.listdir(out)) == ["my_vocab.txt"] and os.path.getsize(vocab) > 0


def _stashes(directory):
    return [n for n in os.listdir(directory) if "-old-" in n]


@pytest.mark.parametrize("when", ["before the new output is in place", "after"])
def test_an_interrupted_overwrite_is_restored_or_finished_by_the_next_claim(encoder, tmp_path, when, caplog):
    out = tmp_path / "model"
    save_pretrained(encoder, str(out))
    before = (out / "model.keras").read_bytes()

    def killed_overwrite():
        rename = os.rename

        def dying_rename(source, target):
            if when != "after" and str(target) == str(out):
                os.kill(os.getpid(), signal.SIGKILL)  # the old output set aside, the new one not renamed in
            rename(source, target)
            if when == "after" and str(target) == str(out):
                os.kill(os.getpid(), signal.SIGKILL)  # the new output in place, the stash not yet removed

        os.rename = dying_rename
        with outputs.writing_dir(str(out), overwrite=True) as tmp:  # save_pretrained's writer; a forked
            with open(os.path.join(tmp, "model.keras"), "wb") as f:  # child may not run Keras (TF threads)
                f.write(b"the new model")

    _killed_while_writing(killed_overwrite)
    assert len(_stashes(tmp_path)) == 1 and out.exists() == (when == "after")
    with caplog.at_level(logging.WARNING, "keras_bert"):
        with outputs.claim(str(out), overwrite=True):
            pass
    assert _stashes(tmp_path) == [] and os.path.isfile(out / "model.keras")
    if when == "after":
        assert "the earlier output that an interrupted overwrite had set aside (the new output got in " \
               "place)" in caplog.text
    else:
        assert (out / "model.keras").read_bytes() == before
        assert "restored the earlier output from" in caplog.text


@pytest.mark.parametrize("wrote", [False, True])
def test_a_run_killed_after_setting_its_old_files_aside_is_settled_by_the_next_claim(tmp_path, wrote, caplog):
    run = tmp_path / "run"
    run.mkdir()
    (run / outputs.RUN_MARKER).write_text("pretrain\nthesis.txt\n")
    (run / "thesis.txt").write_text("mine")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "ckpt-1.index").write_text("old run")

    def killed_run():  # as recipes/run_dir.py: the earlier run's files set aside, then the run writes
        outputs.set_aside(str(run), ["checkpoints"], "run", kept=["thesis.txt"])
        os.makedirs(run / "checkpoints")
        if wrote:
            (run / "checkpoints" / "ckpt-1.index").write_text("new run")
        os.kill(os.getpid(), signal.SIGKILL)

    _killed_while_writing(killed_run)
    assert len(_stashes(tmp_path)) == 1
    with caplog.at_level(logging.WARNING, "keras_bert"):
        outputs.claim(str(run), overwrite=True).release()
    assert _stashes(tmp_path) == [] and (run / "thesis.txt").read_text() == "mine"
    assert (run / "checkpoints" / "ckpt-1.index").read_text() == ("new run" if wrote else "old run")
    assert ("removed" if wrote else "restored") in caplog.text


def test_export_litert_refuses_an_output_that_is_its_input(run_in_process, encoder, vocab, tmp_path):
    model = tmp_path / "m.keras"
    model.write_bytes(b"a model")
    for flag, path in (("model_path", model), ("vocab_file", vocab)):
        status, stderr = run_in_process("export.export_litert", f"--model_path={model}",
                                        f"--vocab_file={vocab}", f"--output_file={path}", "--overwrite")
        assert (status, stderr) == (1, f"error: --output_file={path} is or contains the input "
                                       f"--{flag}={path}: writing there would replace it; choose another "
                                       f"--output_file\n")
    assert model.read_bytes() == b"a model" and os.path.getsize(vocab) > 0
    from keras_bert.export import export_litert
    from keras_bert.text import BertPreprocessor, BertTokenizer

    preprocessor = BertPreprocessor(BertTokenizer(vocab, lower_case=True), 8)
    with pytest.raises(UserInputError, match=f"^the LiteRT model {vocab} is or contains the input {vocab}: "):
        export_litert(encoder, vocab, preprocessor=preprocessor, overwrite=True)
    assert os.path.getsize(vocab) > 0


def test_a_run_directory_shared_with_the_users_files_keeps_them_after_overwrite(run_in_process, tiny_model,
                                                                                 tmp_path, caplog):
    out = tmp_path / "shared"
    out.mkdir()
    files = _share(out)
    train = tmp_path / "train.csv"
    train.write_text("text,label\nthe quick fox,a\na lazy dog,b\n")
    flags = [*tiny_model(["the quick brown fox", "a lazy dog sleeps"]), f"--train_file={train}",
             "--do_eval=false", f"--output_dir={out}", "--overwrite"]
    (out / outputs.RUN_MARKER).write_text("run_classifier\nproject\nthesis.txt\n")  # as a first run left it
    (out / "model.keras").write_text("the first run's model")
    with caplog.at_level(logging.WARNING, "keras_bert"):
        status, stderr = run_in_process("run_classifier", *flags)  # sets the first run's files aside, only
    assert status is None, stderr
    assert _read(out, files) == files
    assert "kept 2 entries that no run wrote: project, thesis.txt" in caplog.text
    assert (out / "model.keras").read_bytes()[:2] == b"PK"  # the first run's replaced
    assert (out / outputs.RUN_MARKER).read_text() == "run_classifier\nproject\nthesis.txt\n"
    assert {"project", "thesis.txt"} < set(os.listdir(out)) and _stashes(tmp_path) == []
