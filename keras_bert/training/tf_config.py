"""The one reader of the TF_CONFIG environment variable: this process's place in a multi-worker cluster.

Every check runs when it is read, before any work, and a bad value is one `UserInputError` line naming
TF_CONFIG and the field ("TF_CONFIG task index 5 is not in the cluster: ...").
"""

import json
import os
import re
from typing import NamedTuple

from keras_bert.errors import UserInputError

TASK_TYPES = ("chief", "worker", "ps", "evaluator")
_ADDRESS = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^:\s\[\]]+):(\d+)$")


class ClusterTask(NamedTuple):
    """TF_CONFIG as read: `cluster` maps each task type to its "host:port" addresses; this process is task
    `index` of `type`."""

    cluster: dict
    type: str
    index: int

    @property
    def address(self):
        return self.cluster[self.type][self.index]

    @property
    def writes_files(self):
        """True for the task that writes checkpoints and results: the chief, else worker 0."""
        if "chief" in self.cluster:
            return self.type == "chief"
        return self.type == "worker" and self.index == 0

    def peers(self):
        """{(type, index): address} of the other tasks that join the strategy (every one but evaluators)."""
        return {(kind, index): address for kind, addresses in self.cluster.items() if kind != "evaluator"
                for index, address in enumerate(addresses) if (kind, index) != (self.type, self.index)}


def read_tf_config(value=None):
    """Reads `value` (default: the TF_CONFIG environment variable), a JSON object
    `{"cluster": {"worker": ["host:port", ...], ...}, "task": {"type": "worker", "index": 0}}`.

    Returns a `ClusterTask`. Raises `UserInputError` naming TF_CONFIG and the bad field when it is unset,
    not JSON, not that shape, names an unknown task type, an address without a port, the same address
    twice, more than one chief, parameter servers (not multi_worker_mirrored's), or a task that is not in
    the cluster (a type that is not a string is none of its types).
    """
    value = os.environ.get("TF_CONFIG", "") if value is None else value
    if not value.strip():
        raise UserInputError("strategy 'multi_worker_mirrored' needs the TF_CONFIG environment variable "
                             "(cluster 'worker' addresses and this process's 'task')")
    try:
        config = json.loads(value)
    except json.JSONDecodeError as e:
        raise UserInputError(f"TF_CONFIG is not JSON ({e}): {_short(value)}") from None
    if not isinstance(config, dict):
        raise UserInputError(f"TF_CONFIG must be a JSON object with 'cluster' and 'task', got "
                             f"{type(config).__name__} {_short(value)}")
    cluster = _cluster(config.get("cluster"))
    return ClusterTask(cluster, *_task(config.get("task"), cluster))


def writes_files(strategy_name):
    """Whether this process writes a run's files under strategy `strategy_name`: True but for a
    "multi_worker_mirrored" task of TF_CONFIG other than the chief (TF_CONFIG is read and checked then)."""
    return strategy_name != "multi_worker_mirrored" or read_tf_config().writes_files


def _cluster(cluster):
    if not isinstance(cluster, dict) or not cluster:
        raise UserInputError("TF_CONFIG 'cluster' must be an object of task types and their address lists "
                             f"(\"worker\": [\"host:port\", ...]), got {json.dumps(cluster)}")
    seen = {}
    for kind, addresses in cluster.items():
        if kind not in TASK_TYPES:
            raise UserInputError(f"TF_CONFIG cluster has task type {kind!r}; "
                                 f"expected one of {', '.join(TASK_TYPES)}")
        if not isinstance(addresses, list) or not addresses or not all(isinstance(a, str) for a in addresses):
            raise UserInputError(f"TF_CONFIG cluster {kind!r} must be a non-empty list of \"host:port\" "
                                 f"strings, got {json.dumps(addresses)}")
        for index, address in enumerate(addresses):
            match = _ADDRESS.match(address)
            if not match or not 0 < int(match[2]) < 65536:
                raise UserInputError(f"TF_CONFIG cluster {kind!r} address {index} is {address!r}; expected "
                                     "host:port with a port from 1 to 65535")
            if address in seen:
                raise UserInputError(f"TF_CONFIG cluster gives address {address!r} twice "
                                     f"({seen[address]} and {kind} {index}); every task needs its own "
                                     "host:port")
            seen[address] = f"{kind} {index}"
    if "ps" in cluster:
        raise UserInputError("TF_CONFIG cluster has 'ps' addresses; multi_worker_mirrored has no parameter "
                             "servers: give 'worker' (and at most one 'chief') addresses")
    if len(cluster.get("chief", [])) > 1:
        raise UserInputError(f"TF_CONFIG cluster 'chief' has {len(cluster['chief'])} addresses; a cluster "
                             "has one chief (the other tasks are 'worker's)")
    if "chief" not in cluster and "worker" not in cluster:
        raise UserInputError("TF_CONFIG cluster has no 'chief' or 'worker' address")
    return cluster


def _task(task, cluster):
    """(type, index) of TF_CONFIG's "task", checked against `cluster`."""
    if not isinstance(task, dict) or "type" not in task:
        raise UserInputError("TF_CONFIG 'task' must be an object with this process's 'type' and 'index' "
                             f"({{\"type\": \"worker\", \"index\": 0}}), got {json.dumps(task)}")
    kind, index = task["type"], task.get("index", 0)
    if not isinstance(kind, str) or kind not in cluster:
        raise UserInputError(f"TF_CONFIG task type {json.dumps(kind)} is not in the cluster (it has "
                             f"{', '.join(cluster)})")
    if isinstance(index, str) and re.fullmatch(r"\d+", index.strip()):
        index = int(index)  # TensorFlow's resolver takes the index as a string too
    if not isinstance(index, int) or isinstance(index, bool):
        raise UserInputError(f"TF_CONFIG task index must be a whole number, got {json.dumps(index)}")
    size = len(cluster[kind])
    if not 0 <= index < size:
        raise UserInputError(f"TF_CONFIG task index {index} is not in the cluster: {kind!r} has {size} "
                             f"address{'es' * (size != 1)} (0 to {size - 1})")
    return kind, index


def _short(value, limit=60):
    value = " ".join(value.split())
    return value if len(value) <= limit else value[:limit] + "..."
