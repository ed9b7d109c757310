"""The scripts' quiet-log defaults: which stderr lines are dropped, and how a user asks for all of them."""

import re

import pytest

from recipes import logs

# As TensorFlow 2.21 prints them on a CPU machine (captured from `python recipes/run_classifier.py`).
DROPPED = [
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    b"I0000 00:00:1796042593.201045   20597 port.cc:153] oneDNN custom operations are on. You may see ...\n",
    b"I0000 00:00:1796042593.201385   20597 cudart_stub.cc:31] Could not find cuda drivers on your machine\n",
    b"W0000 00:00:1796042294.579521   15841 local_rendezvous.cc:412] Local rendezvous is aborting\n",
    b"To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow with "
    b"the appropriate compiler flags.\n",
    b"\t [[{{node MultiDeviceIteratorGetNextFromShard}}]]\n",
    b"E0000 00:00:1796042597.324628   20597 cuda_platform.cc:52] failed call to cuInit: INTERNAL\n",
    b"E0000 00:00:1796048032.790645   19581 util.cc:131] oneDNN supports DT_INT32 only on platforms with "
    b"AVX-512. Falling back to the default Eigen-based implementation if present.\n",
]
KEPT = [
    b"E0000 00:00:1796042597.324628   20597 op_kernel.cc:1857] OP_REQUIRES failed at example.cc:42: "
    b"bad input\n",
    b"I1130 12:43:20.251098 140113567464320 common.py:231] fine-tuning: 4 examples, 2 steps (2 per epoch)\n",
    b"Traceback (most recent call last):\n",
    b"keras_bert.data.formats.DataFormatError: train.csv:3: unknown label 'x'\n",
]


@pytest.mark.parametrize("line", DROPPED)
def test_tensorflow_cpp_info_and_warning_lines_are_dropped(line):
    assert logs._CPP_NOISE.match(line)


@pytest.mark.parametrize("line", KEPT)
def test_errors_our_logs_and_tracebacks_are_kept(line):
    assert not logs._CPP_NOISE.match(line)


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
