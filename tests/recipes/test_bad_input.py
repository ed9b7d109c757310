"""Every recipe as a user meets it with a bad data file or an output directory it must not touch: one
`error:` line naming the file and line (or the directory and flag), exit status 1, no traceback, and the
output directory as it was. Run in this process through the `__main__` wrapper, one true subprocess."""

import json
import os

import pytest

from tests.recipes.conftest import run_recipe
from tests.tasks.test_extend_vocab import write_tiny_checkpoint

LATIN_1 = "caf\xe9".encode("latin-1")  # byte 0xe9: not UTF-8


def _bad_file(tmp_path, name, first, second):
    """A data file whose line 2 holds a Latin-1 byte."""
    path = tmp_path / name
    path.write_bytes(first.encode() + b"\n" + second.replace(b"@", LATIN_1) + b"\n")
    return str(path)


def _cases(tmp_path, tiny_flags):
    squad = json.dumps({"version": "1.1", "data": []})
    out = str(tmp_path / "out")
    return {
        "run_classifier": [*tiny_flags,
                           f"--train_file={_bad_file(tmp_path, 'bad.csv', 'text,label', b'@,a')}",
                           "--do_eval=false", f"--output_dir={out}"],
        "run_ner": [*tiny_flags, f"--train_file={_bad_file(tmp_path, 'bad.txt', 'EU B-ORG', b'@ O')}",
                    "--do_eval=false", f"--output_dir={out}"],
        "run_squad": [*tiny_flags, f"--train_file={_bad_file(tmp_path, 'bad.json', squad[:-1], b'@}')}",
                      "--do_eval=false", f"--output_dir={out}"],
        "run_multiple_choice": [*tiny_flags,
                                f"--train_file={_bad_file(tmp_path, 'bad.csv', 'sent1,label', b'@,0')}",
                                "--do_eval=false", f"--output_dir={out}"],
        "extract_features": [*tiny_flags, f"--input_file={_bad_file(tmp_path, 'bad.txt', 'a line', b'@')}",
                             f"--output_file={out}/features.jsonl", "--layers=-1", f"--output_dir={out}"],
        "pretrain": [*tiny_flags, f"--input_files={_bad_file(tmp_path, 'bad.txt', 'a line', b'@')}",
                     "--num_train_steps=2", "--num_warmup_steps=0", f"--model_dir={out}"],
        "build_vocab": [f"--input_files={_bad_file(tmp_path, 'bad.txt', 'a line', b'@')}",
                        f"--output_file={out}/vocab.txt"],
        "create_pretraining_data": [*tiny_flags[:1],
                                    f"--input_file={_bad_file(tmp_path, 'bad.txt', 'a line', b'@')}",
                                    f"--output_file={out}/train.tfrecord"],
    }


@pytest.mark.parametrize("name", ["run_classifier", "run_ner", "run_squad", "run_multiple_choice",
                                  "extract_features", "pretrain", "build_vocab", "create_pretraining_data",
                                  "extend_vocab"])
def test_a_bad_data_file_is_one_line_naming_file_and_line(run_in_process, tiny_model, tmp_path, name):
    if name == "extend_vocab":
        checkpoint, _ = write_tiny_checkpoint(tmp_path, "huggingface")
        argv = [f"--init_checkpoint={checkpoint}",
                f"--input_files={_bad_file(tmp_path, 'bad.txt', 'a', b'@')}",
                f"--output_dir={tmp_path / 'out'}"]
    else:
        argv = _cases(tmp_path, tiny_model(["a line", "cafe"]))[name]
    status, stderr = run_in_process(name, *argv)
    lines = stderr.strip().splitlines()
    assert status == 1 and len(lines) == 1, stderr
    bad = os.path.join(tmp_path, [a for a in argv if "bad." in a][0].rsplit("bad.", 1)[1].join(["bad.", ""]))
    assert lines[0].startswith(f"error: {bad}:2: not valid UTF-8"), lines[0]
    assert "Traceback" not in stderr
    assert not os.path.exists(tmp_path / "out")  # nothing written, not even the directory


def _tree(path):
    """{relative path: (size, mtime)} of every file under `path`."""
    return {os.path.relpath(os.path.join(root, name), path): (os.path.getsize(os.path.join(root, name)),
                                                              os.path.getmtime(os.path.join(root, name)))
            for root, _, files in os.walk(path) for name in files}


def test_an_output_directory_holding_the_input_checkpoint_is_refused(run_in_process, tmp_path):
    checkpoint, _ = write_tiny_checkpoint(tmp_path, "huggingface")
    corpus = tmp_path / "domain.txt"
    corpus.write_text("the tokens\n")
    before = _tree(checkpoint)
    for output in (checkpoint, os.path.dirname(checkpoint)):
        status, stderr = run_in_process("extend_vocab", f"--init_checkpoint={checkpoint}",
                                        f"--input_files={corpus}", f"--output_dir={output}")
        assert (status, stderr) == (1, f"error: --output_dir={output} is or contains the input "
                                       f"--init_checkpoint={checkpoint}: writing there would replace it; "
                                       "choose another --output_dir\n")
    assert _tree(checkpoint) == before


def test_a_finished_run_is_not_replaced_without_overwrite(run_in_process, tiny_model, tmp_path):
    flags = _cases(tmp_path, tiny_model(["a line", "cafe"]))["run_classifier"]
    out = tmp_path / "out"
    out.mkdir()
    (out / "model.keras").write_bytes(b"the finished run")
    (out / ".keras_bert_run").write_text("run_classifier\n")
    before = _tree(out)
    status, stderr = run_in_process("run_classifier", *flags)
    assert status == 1 and stderr == (f"error: --output_dir={out} is not empty (model.keras) and holds "
                                      "no run of run_classifier to resume: pass --overwrite to replace its "
                                      "files, or choose another --output_dir\n")
    assert _tree(out) == before
    # past the check: the data's error
    status, stderr = run_in_process("run_classifier", *flags, "--overwrite")
    assert status == 1 and ":2: not valid UTF-8" in stderr and _tree(out) == before
    # The model a run evaluates may not sit in its output directory either.
    status, stderr = run_in_process("run_classifier", *flags, f"--init_checkpoint={out / 'model.keras'}")
    assert status == 1 and "is or contains the input --init_checkpoint=" in stderr


def test_pretraining_resumes_its_own_run_only(run_in_process, tiny_model, tmp_path):
    flags = _cases(tmp_path, tiny_model(["a line", "cafe"]))["pretrain"]
    out = tmp_path / "out"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "checkpoint").write_text('model_checkpoint_path: "ckpt-1"\n')
    # an unmarked run (older version): resumed, i.e. restored
    status, stderr = run_in_process("pretrain", *flags)
    assert status == 1 and "Error when restoring from checkpoint" in stderr and len(stderr.splitlines()) == 1
    (out / ".keras_bert_run").write_text("run_classifier\n")
    status, stderr = run_in_process("pretrain", *flags)
    assert status == 1 and "holds no run of pretrain to resume" in stderr


def test_export_scripts_print_one_line(run_in_process, tmp_path):
    missing = tmp_path / "missing.keras"
    status, stderr = run_in_process("export.export_saved_model", f"--model_path={missing}",
                                    f"--export_dir={tmp_path / 'export'}")
    assert (status == 1 and len(stderr.splitlines()) == 1 and stderr.startswith("error: ")
            and str(missing) in stderr)
    status, stderr = run_in_process("export.check_servable", f"--export_dir={tmp_path / 'nothing'}")
    assert status == 1 and len(stderr.splitlines()) == 1 and stderr.startswith("error: ")


def _export_cases(tmp_path):
    """(flags, expected stderr) of export_saved_model flags refused when parsed, before the model loads."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_text("{}")
    junk = tmp_path / "m.keras"
    junk.write_bytes(b"not a zip")  # loading it would fail otherwise: the refusals come first
    return {
        "export_dir is a file": (  # was: [Errno 20] Not a directory: '.../.1.keras_bert_lock', after the load
            [f"--model_path={junk}", f"--export_dir={tmp_path / 'afile'}"],
            f"error: --export_dir: is a file, not a directory (given as --export_dir={tmp_path}/afile)\n"),
        "export_dir is the model": (  # was: D/1 written inside the input checkpoint
            [f"--model_path={tmp_path / 'ckpt'}", f"--export_dir={tmp_path / 'ckpt'}"],
            f"error: --export_dir={tmp_path}/ckpt is or contains the input --model_path={tmp_path}/ckpt: "
            f"writing there would replace it; choose another --export_dir (given as "
            f"--export_dir={tmp_path}/ckpt)\n"),
        "int8_matmul without VNNI": (  # was: the same line after an 11 s model load
            [f"--model_path={junk}", f"--export_dir={tmp_path / 'out'}", "--quantize=int8_matmul"],
            "error: --quantize: quantize='int8_matmul' needs a CPU with an int8 dot-product flag "),
    }


@pytest.mark.parametrize("case", ["export_dir is a file", "export_dir is the model",
                                  "int8_matmul without VNNI"])
def test_export_flags_are_refused_when_parsed(run_in_process, tmp_path, monkeypatch, case):
    from keras_bert import execution

    monkeypatch.setattr(execution, "has_int8_matmul_hardware", lambda: False)
    argv, expected = _export_cases(tmp_path)[case]
    status, stderr = run_in_process("export.export_saved_model", *argv)
    assert status == 1 and len(stderr.splitlines()) == 1 and stderr.startswith(expected), stderr
    assert "not a complete .keras" not in stderr and not (tmp_path / "out").exists()


def test_a_bug_keeps_its_traceback_and_verbose_shows_every_traceback(monkeypatch):
    import numpy as np

    from keras_bert.textfiles import DataFormatError
    from recipes import logs

    def bug(argv):
        return np.zeros(2).reshape(3)  # a ValueError raised inside numpy, not by our checks

    with pytest.raises(ValueError, match="cannot reshape"):
        logs.call_main(bug, [])

    def bad_data(argv):
        raise DataFormatError("x.csv", 2, "not valid UTF-8")

    monkeypatch.setenv("KERAS_BERT_VERBOSE", "1")
    with pytest.raises(DataFormatError):
        logs.call_main(bad_data, [])
    monkeypatch.setenv("KERAS_BERT_VERBOSE", "0")
    assert logs.call_main(bad_data, []) == 1


def test_a_user_runs_a_recipe_with_a_bad_file(tmp_path):
    # The one true subprocess: the `__main__` line, the quiet stderr filter and the exit status together.
    bad = _bad_file(tmp_path, "bad.csv", "text,label", b"@,a")
    result = run_recipe("run_classifier", f"--train_file={bad}", "--do_eval=false",
                        f"--output_dir={tmp_path / 'out'}", check=False, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {bad}:2: not valid UTF-8: byte 0xe9 at column 4 (invalid continuation byte); "
        f"save the file as UTF-8 (given as --train_file={bad})"]
    assert not os.path.exists(tmp_path / "out")
