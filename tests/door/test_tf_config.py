"""TF_CONFIG read once, checked at the door: each bad value is one line naming TF_CONFIG and the field."""

import json
import os
import time

import pytest

from keras_bert.errors import UserInputError
from keras_bert.training.tf_config import read_tf_config, writes_files

TWO = {"worker": ["127.0.0.1:2001", "127.0.0.1:2002"]}


def _config(cluster=TWO, task=None):
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0} if task is None else task})


BAD = [
    ("", "needs the TF_CONFIG environment variable"),
    ("{cluster: 1}",
     "TF_CONFIG is not JSON (Expecting property name enclosed in double quotes: line 1 column 2"),
    ("[]", "TF_CONFIG must be a JSON object with 'cluster' and 'task', got list []"),
    ('{"task": {"type": "worker"}}', "TF_CONFIG 'cluster' must be an object of task types"),
    (_config({"workers": ["a:1"]}),
     "TF_CONFIG cluster has task type 'workers'; expected one of chief, worker"),
    (_config({"worker": "a:1"}),
     'TF_CONFIG cluster \'worker\' must be a non-empty list of "host:port" strings, '
     'got "a:1"'),
    (_config({"worker": []}), "TF_CONFIG cluster 'worker' must be a non-empty list"),
    (_config({"worker": ["localhost:1", "localhost"]}),
     "TF_CONFIG cluster 'worker' address 1 is 'localhost'; "
     "expected host:port with a port from 1 to 65535"),
    (_config({"worker": ["localhost:99999"]}), "address 0 is 'localhost:99999'"),
    (_config({"worker": ["h:1", "h:2", "h:1"]}), "TF_CONFIG cluster gives address 'h:1' twice (worker 0 and "
                                                 "worker 2)"),
    (_config({"chief": ["h:1"], "worker": ["h:1"]}), "address 'h:1' twice (chief 0 and worker 0)"),
    (_config({"evaluator": ["h:1"]}), "TF_CONFIG cluster has no 'chief' or 'worker' address"),
    # was: accepted, then a 600 s wait ending "chief 0 did not start"
    (_config({"chief": ["h:1", "h:2"], "worker": ["h:3"]}),
     "TF_CONFIG cluster 'chief' has 2 addresses; a cluster has one chief"),
    (_config({"worker": ["h:1"], "ps": ["h:2"]}), "TF_CONFIG cluster has 'ps' addresses; "
                                                  "multi_worker_mirrored has no parameter servers"),
    # was: TypeError: unhashable type: 'list'
    (_config(task={"type": ["worker"], "index": 0}), 'TF_CONFIG task type ["worker"] is not in the cluster '
                                                     "(it has worker)"),
    (json.dumps({"cluster": TWO}),
     "TF_CONFIG 'task' must be an object with this process's 'type' and 'index'"),
    (_config(task={"type": "chief", "index": 0}), 'TF_CONFIG task type "chief" is not in the cluster (it has '
                                                  "worker)"),
    (_config(task={"type": "worker", "index": "abc"}),
     'TF_CONFIG task index must be a whole number, got "abc"'),
    (_config(task={"type": "worker", "index": 1.5}), "TF_CONFIG task index must be a whole number, got 1.5"),
    (_config(task={"type": "worker", "index": 5}),
     "TF_CONFIG task index 5 is not in the cluster: 'worker' has "
     "2 addresses (0 to 1)"),
    (_config(task={"type": "worker", "index": -1}), "TF_CONFIG task index -1 is not in the cluster"),
]


@pytest.mark.parametrize("value, expected", BAD, ids=[expected[:40] for _, expected in BAD])
def test_a_bad_tf_config_is_one_line_naming_the_field(value, expected):
    with pytest.raises(UserInputError) as raised:
        read_tf_config(value)
    message = str(raised.value)
    assert expected in message and "\n" not in message


GOOD = [  # (TF_CONFIG, (type, index), address, writes files, peers)
    (_config(task={"type": "worker", "index": 1}), ("worker", 1), "127.0.0.1:2002", False,
     {("worker", 0): "127.0.0.1:2001"}),
    (_config(task={"type": "worker", "index": "0"}), ("worker", 0), "127.0.0.1:2001", True,
     {("worker", 1): "127.0.0.1:2002"}),
    (_config({"chief": ["[::1]:3000"], "worker": ["h:1"], "evaluator": ["e:1"]}, {"type": "worker"}),
     ("worker", 0), "h:1", False, {("chief", 0): "[::1]:3000"}),
    (_config({"chief": ["[::1]:3000"], "worker": ["h:1"]}, {"type": "chief", "index": 0}), ("chief", 0),
     "[::1]:3000", True, {("worker", 0): "h:1"}),
]


@pytest.mark.parametrize("value, me, address, writes, peers", GOOD)
def test_a_good_tf_config_gives_the_task_its_address_peers_and_role(value, me, address, writes, peers):
    task = read_tf_config(value)
    assert ((task.type, task.index), task.address, task.writes_files, task.peers()) == (me, address, writes,
                                                                                         peers)


def test_a_recipe_refuses_a_task_outside_the_cluster_at_once_and_makes_no_output_dir(
        run_in_process, monkeypatch, tmp_path):
    """Row "task index 5 in a 2-worker cluster": no wait for the peers, no directory left behind."""
    monkeypatch.setenv("TF_CONFIG", _config(task={"type": "worker", "index": 5}))
    output = tmp_path / "model"
    started = time.monotonic()
    status, err = run_in_process("pretrain", "--distribution_strategy=multi_worker_mirrored",
                                 f"--model_dir={output}")
    took = time.monotonic() - started
    assert status == 1
    assert err.strip().splitlines() == ["error: TF_CONFIG task index 5 is not in the cluster: 'worker' has 2 "
                                        "addresses (0 to 1)"]
    assert took < 5, took
    assert not os.path.exists(output)


def test_tf_config_is_not_read_without_multi_worker_strategy(monkeypatch):
    """A stale TF_CONFIG in the environment does not matter to a one-device run: it is the writer."""
    monkeypatch.setenv("TF_CONFIG", "not json")
    assert writes_files("one_device") is True
    with pytest.raises(UserInputError, match="TF_CONFIG is not JSON"):
        writes_files("multi_worker_mirrored")
