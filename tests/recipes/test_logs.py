"""The scripts' quiet-log defaults: the library's filter of TensorFlow's C++ lines (tests/test_native_logs.py)
for the whole process, and how a user asks for every line."""

import re
import subprocess
import sys

import pytest

from recipes import logs


def test_the_scripts_filter_is_the_library_one_loaded_without_tensorflow():
    import keras_bert.native_logs

    assert logs.native_logs is keras_bert.native_logs  # one definition, one state (its filter's)
    program = ("import sys; from recipes import logs; print(sorted(m for m in ('tensorflow', 'keras', "
               "'keras_bert') if m in sys.modules), logs.native_logs.__name__)")
    loaded = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert loaded.stdout.split() == ["[]", "keras_bert.native_logs"], loaded.stderr  # the client stays light


@pytest.mark.parametrize("argv, env, expected", [
    ([], {}, False),
    (["--train_file=x.csv"], {"KERAS_BERT_VERBOSE": "0"}, False),
    (["--verbosity=0"], {}, True),
    (["-v", "1"], {}, True),
    ([], {"KERAS_BERT_VERBOSE": "1"}, True),
])
def test_verbose_by_flag_or_environment(monkeypatch, argv, env, expected):
    monkeypatch.delenv("KERAS_BERT_VERBOSE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert logs.verbose(argv) is expected


@pytest.mark.parametrize("level, expected", [("INFO", "fine-tuning: 4 examples"),
                                             ("WARNING", "WARNING fine-tuning: 4 examples")])
def test_our_log_lines_in_the_project_format(level, expected):
    import logging

    record = logging.LogRecord("keras_bert", getattr(logging, level), "common.py", 231,
                               "fine-tuning: %d examples", (4,), None)
    assert logs.ProjectFormat().format(record) == expected


@pytest.mark.parametrize("name, help_flag", [("run_classifier", "--help"), ("distill", "--helpfull")])
def test_help_lists_the_flags_every_run_takes_and_exits_0(run_in_process, name, help_flag):
    from absl import app

    app.define_help_flags()  # what `logs.run` (absl's app.run) defines before parsing
    status, stderr = run_in_process(name, help_flag)
    assert status == 0, stderr  # was 1 (absl's status for help)
    listed = set(re.findall(r"^  --(?:\[no\])?(\w+)", run_in_process.stdout, re.M))
    # was: only --helpfull showed the shared flags a run needs
    assert {"output_dir", "model_dir", "seed", "dtype", "overwrite"} <= listed, sorted(listed)
    if name == "run_classifier":
        assert {"do_train", "do_eval", "init_checkpoint"} <= listed
