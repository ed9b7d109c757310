"""A multi-worker run whose peer never starts (TF_CONFIG with 2 workers on 127.0.0.1, one started): it says
whom it waits for, gives up after --worker_wait_s with one error line, and SIGTERM ends it at once."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

from tests.recipes.conftest import REPO


def _start(tmp_path, name, wait_s):
    sockets = [socket.socket() for _ in range(2)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    cluster = {"worker": [f"127.0.0.1:{s.getsockname()[1]}" for s in sockets]}
    for s in sockets:
        s.close()
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BERT_VERBOSE"}
    env.update(CUDA_VISIBLE_DEVICES="", TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker",
                                                                                           "index": 0}}))
    stderr = tmp_path / f"{name}.stderr"
    process = subprocess.Popen([sys.executable, "recipes/pretrain.py",
                                "--distribution_strategy=multi_worker_mirrored", f"--worker_wait_s={wait_s}",
                                f"--model_dir={tmp_path / name}"], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=open(stderr, "w"))  # noqa: SIM115
    return process, stderr, cluster["worker"][1]


def _wait_for_line(process, stderr, text, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if text in stderr.read_text():
            return time.monotonic()
        time.sleep(0.1)
    raise AssertionError(f"no {text!r} in:\n{stderr.read_text()[-3000:]}")


def test_a_missing_peer_is_named_waited_for_a_bounded_time_and_sigterm_ends_the_wait(tmp_path):
    bounded, bounded_err, peer = _start(tmp_path, "bounded", 3)
    # both at once: one TensorFlow import of wall time
    killed, killed_err, _ = _start(tmp_path, "killed", 600)
    try:
        _check(bounded, bounded_err, peer, killed, killed_err, tmp_path)
    finally:
        for process in (bounded, killed):
            if process.poll() is None:
                process.kill()


def _check(bounded, bounded_err, peer, killed, killed_err, tmp_path):
    waiting = _wait_for_line(bounded, bounded_err, "waits for")
    assert bounded.wait(timeout=60) == 1
    waited = time.monotonic() - waiting
    lines = [line for line in bounded_err.read_text().splitlines() if line.strip()]
    assert lines == [f"multi-worker: worker 0 waits for worker 1 ({peer}) to start (at most 3 s)",
                     f"error: multi-worker: worker 1 ({peer}) did not start within 3 s; start every worker "
                     "of TF_CONFIG, or wait longer (given as --distribution_strategy=multi_worker_mirrored, "
                     "--worker_wait_s=3.0)"]
    assert 2.9 < waited < 15, waited
    assert not os.path.exists(tmp_path / "bounded")  # the run wrote nothing

    _wait_for_line(killed, killed_err, "waits for")
    time.sleep(1)  # inside TensorFlow's start, which installs its own SIGTERM handler
    sent = time.monotonic()
    killed.send_signal(signal.SIGTERM)
    assert killed.wait(timeout=10) == 128 + signal.SIGTERM
    assert time.monotonic() - sent < 3
    assert not os.path.exists(tmp_path / "killed")  # stopped before writing: the directory it claimed is gone
