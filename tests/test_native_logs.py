"""TensorFlow's C++ log lines off stderr in library use (keras_bert/native_logs.py): which lines are dropped,
that everything else comes through in order, and where the library scopes the filter (its import, the first
`serve` and `predict` calls)."""

import contextlib
import dataclasses
import os
import re
import select
import subprocess
import sys
import textwrap
import threading

import pytest

from keras_bert import BertClassifier, BertEncoder, native_logs
from keras_bert.text import BertPreprocessor, BertTokenizer

# As TensorFlow 2.21 prints them on a CPU machine (captured from `python recipes/run_classifier.py` and a
# first `serve`).
DROPPED = [
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    b"I0000 00:00:1796042593.201045   20597 port.cc:153] oneDNN custom operations are on. You may see ...\n",
    b"I0000 00:00:1796042593.201385   20597 cudart_stub.cc:31] Could not find cuda drivers on your machine\n",
    b"W0000 00:00:1796042294.579521   15841 local_rendezvous.cc:412] Local rendezvous is aborting\n",
    b"W0000 00:00:1796514992.533774   20101 op_level_cost_estimator.cc:699] Error in PredictCost() for the "
    b"op: goo.gle/debugonly  op: \"Softmax\" attr { key: \"T\" value { type: DT_FLOAT } }\n",
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
    b"/x.py:3: UserWarning: a real warning\n",
]


@pytest.mark.parametrize("line", DROPPED)
def test_tensorflow_cpp_info_and_warning_lines_are_dropped(line):
    assert native_logs.NOISE.match(line)
    assert native_logs._may_be_noise(line[:20])  # held while it arrives, never copied half


@pytest.mark.parametrize("line", KEPT)
def test_errors_our_logs_warnings_and_tracebacks_are_kept(line):
    assert not native_logs.NOISE.match(line)


@pytest.fixture
def quiet_env(monkeypatch):
    monkeypatch.delenv("KERAS_BERT_VERBOSE", raising=False)
    assert native_logs._STATE["process"] is None  # the scripts' filter is not on in the tests


def _fd2():
    stat = os.fstat(2)
    return stat.st_dev, stat.st_ino


@pytest.mark.parametrize("verbose, active, noise_shown", [("0", True, False), ("1", True, True),
                                                          ("0", False, True)])
def test_quiet_drops_noise_and_copies_the_rest_in_order(capfd, monkeypatch, verbose, active, noise_shown):
    monkeypatch.setenv("KERAS_BERT_VERBOSE", verbose)
    before = _fd2()
    with native_logs.quiet(active):
        for line in [KEPT[0], *DROPPED[:3], KEPT[4], DROPPED[-1], b"partial line without end"]:
            os.write(2, line)
    os.write(2, b"|after\n")
    assert _fd2() == before
    err = capfd.readouterr().err.encode()
    if noise_shown:
        assert err == b"".join([KEPT[0], *DROPPED[:3], KEPT[4], DROPPED[-1], b"partial line without end",
                                b"|after\n"])
    else:
        assert err == KEPT[0] + KEPT[4] + b"partial line without end|after\n"


def test_quiet_restores_stderr_when_the_block_raises(capfd, quiet_env):
    before = _fd2()
    with pytest.raises(RuntimeError, match="in the block"), native_logs.quiet():
        os.write(2, DROPPED[1] + KEPT[0])
        raise RuntimeError("in the block")
    assert _fd2() == before and native_logs._STATE["depth"] == 0
    assert capfd.readouterr().err.encode() == KEPT[0]


def test_overlapping_blocks_of_two_threads_lose_nothing(capfd, quiet_env):
    entered, first_left = threading.Barrier(2), threading.Event()
    before = _fd2()

    def block(name, leave_first):
        with native_logs.quiet():
            entered.wait(timeout=10)
            os.write(2, f"{name} inside\n".encode() + DROPPED[2])
            if not leave_first:
                first_left.wait(timeout=10)
                os.write(2, f"{name} after the other left\n".encode() + DROPPED[0])
        if leave_first:
            first_left.set()

    threads = [threading.Thread(target=block, args=(name, name == "a")) for name in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    assert _fd2() == before and native_logs._STATE["depth"] == 0
    lines = capfd.readouterr().err.splitlines()
    assert sorted(lines) == ["a inside", "b after the other left", "b inside"]


def _read_within(fd, seconds=5.0):
    return os.read(fd, 4096) if select.select([fd], [], [], seconds)[0] else b""


def test_a_partial_line_comes_through_before_its_end_and_noise_is_held():
    pipe_in, pipe_out = os.pipe(), os.pipe()
    thread = threading.Thread(target=native_logs._copy_less_noise, args=(pipe_in[0], pipe_out[1]))
    thread.start()
    try:
        os.write(pipe_in[1], b"progress 50%")  # a progress line: shown now, not at its newline
        assert _read_within(pipe_out[0]) == b"progress 50%"
        os.write(pipe_in[1], b"\rprogress 100%\nI0000 00:00:1796042593.2 1 port.cc")  # may be noise: held
        assert _read_within(pipe_out[0]) == b"\rprogress 100%\n"
        assert _read_within(pipe_out[0], 0.3) == b""
        os.write(pipe_in[1], b":153] oneDNN\nno newline at the end")
    finally:
        os.close(pipe_in[1])
        thread.join(timeout=10)
    rest = b""
    while chunk := os.read(pipe_out[0], 4096):
        rest += chunk
    os.close(pipe_out[0])
    assert rest == b"no newline at the end"


def test_only_the_first_serve_and_predict_calls_are_scoped(monkeypatch, tiny_config, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "movie"]
                               + [f"w{i}" for i in range(53)]) + "\n")
    one_layer = dataclasses.replace(tiny_config, num_hidden_layers=1)  # the calls, not the depth, are scoped
    model = BertClassifier(BertEncoder(one_layer), num_classes=2,
                           preprocessor=BertPreprocessor(BertTokenizer(str(vocab)), 8))
    scoped = []
    monkeypatch.setattr(native_logs, "quiet", lambda active=True: scoped.append(active) or
                        contextlib.nullcontext())
    for _ in range(2):
        model.serve({"text": ["good movie"]})
    model.serve({"text": ["good movie"]}, long_text="windows")  # another traced function: its first call
    for _ in range(2):
        model.predict(["good movie"], verbose=0)
    assert scoped == [True, False, True, True, False]


# A fresh process: TensorFlow's import lines come only there. Markers between the steps say where a line was.
PROGRAM = textwrap.dedent("""
    import os, sys, warnings
    def mark(name):
        print("@" + name, file=sys.stderr, flush=True)
    import keras_bert as kb
    from keras_bert import native_logs
    mark("imported")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "movie"] + [f"w{i}" for i in range(23)]
    with open(sys.argv[1], "w") as f:
        f.write("\\n".join(words))
    config = kb.BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=32)
    preprocessor = kb.text.BertPreprocessor(kb.text.BertTokenizer(sys.argv[1]), 16)
    first, second = (kb.BertClassifier(kb.BertEncoder(config), num_classes=2, preprocessor=preprocessor)
                     for _ in range(2))
    mark("built")
    first.predict(["good movie"], verbose=0)
    mark("predicted")
    second.serve({"text": ["good movie"]})
    mark("served")
    import tensorflow as tf
    from keras_bert.export import export_saved_model
    export_dir = os.path.join(os.path.dirname(sys.argv[1]), "export")
    version_dir = export_saved_model(second, export_dir)
    mark("exported")
    loaded = tf.saved_model.load(version_dir)  # as the serving guide shows: the graph, no keras_bert code
    loaded.signatures["serving_default"](text=tf.constant(["good movie"]))
    mark("loaded")
    with native_logs.quiet():
        os.write(2, b"E0000 00:00:1.0 1 op_kernel.cc:1] a real error\\n")
        warnings.warn("a real warning")
    mark("end")
""")


def _run_program(tmp_path, verbose):
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BERT_VERBOSE", "TF_CPP_MIN_LOG_LEVEL")}
    env.update(KERAS_BERT_VERBOSE=verbose, CUDA_VISIBLE_DEVICES="")
    result = subprocess.run([sys.executable, "-c", PROGRAM, str(tmp_path / "vocab.txt")], env=env,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    parts = re.split(rb"^@(\w+)\n", result.stderr, flags=re.M)
    # {marker: the lines printed before it, since the previous marker}
    return {name.decode(): text.splitlines() for text, name in zip(parts[::2], parts[1::2], strict=False)}


@pytest.mark.slow
def test_a_fresh_program_prints_no_tensorflow_lines_unless_verbose(tmp_path):
    quiet = _run_program(tmp_path, "0")
    assert list(quiet) == ["imported", "built", "predicted", "served", "exported", "loaded", "end"]
    noise = [line for lines in quiet.values() for line in lines if native_logs.NOISE.match(line)]
    assert not noise, noise  # was: 19 lines (import, cuInit, oneDNN int64, 9 grappler PredictCost)
    assert quiet["end"][0] == b"E0000 00:00:1.0 1 op_kernel.cc:1] a real error"
    assert any(b"UserWarning: a real warning" in line for line in quiet["end"])

    loud = _run_program(tmp_path, "1")
    assert any(b"oneDNN custom operations" in line or b"cudart_stub" in line for line in loud["imported"])
    # The cause of grappler's 9 "Error in PredictCost()" lines per call of a loaded export (a Softmax of
    # unknown input rank) is gone from the graph, not hidden: none even verbose.
    assert not [line for lines in loud.values() for line in lines if b"PredictCost()" in line]
