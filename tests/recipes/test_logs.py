"""The scripts' quiet-log defaults: the library's filter of TensorFlow's C++ lines (tests/test_native_logs.py)
for the whole process, and how a user asks for every line."""

import re

import pytest

from recipes import logs


def test_importing_the_scripts_logs_module_sets_no_logs():
    """The quiet logs are set where a run starts (`logs.run`), not when a script module is imported (a test,
    another program): stderr, the keras_bert logger and absl's verbosity stay as they were."""
    import importlib
    import logging
    import os

    from absl import logging as absl_logging

    from keras_bert import native_logs

    def state():
        handlers = list(logging.getLogger("keras_bert").handlers)
        return os.fstat(2).st_ino, handlers, absl_logging.get_verbosity()

    before = state()
    importlib.reload(logs)
    assert native_logs._STATE["process"] is None and not logs._QUIET
    assert state() == before


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
