"""tf.distribute strategies by name, and which worker writes files.

A multi-worker start says which workers it waits for, gives up after `worker_wait_s` with one error, and
SIGTERM or Ctrl-C end the process at once, then and for the rest of the run (TensorFlow's own start blocks
in C++, holding the GIL, until every worker of TF_CONFIG is up, and installs a SIGTERM handler that keeps the
process alive).
"""

import contextlib
import os
import signal
import socket
import sys
import threading
import time

import tensorflow as tf

from keras_bert.errors import UserInputError
from keras_bert.training.tf_config import read_tf_config

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def get_strategy(name="one_device", tpu_address=None, worker_wait_s=600):
    """Returns a `tf.distribute.Strategy`.

    Args:
        name: "one_device" (first GPU, else CPU), "mirrored" (all local GPUs), "multi_worker_mirrored"
            (workers and this process's task from the TF_CONFIG environment variable) or "tpu".
        tpu_address: the TPU name or grpc address for "tpu" ("" or None: the local TPU).
        worker_wait_s: "multi_worker_mirrored": how long to wait for every worker to start (see the module
            docstring); then a `UserInputError` naming the workers that did not start.

    Returns:
        The `tf.distribute.Strategy`: OneDeviceStrategy, MirroredStrategy, MultiWorkerMirroredStrategy or
        TPUStrategy.

    Raises:
        ValueError: an unknown `name`.
        UserInputError: "multi_worker_mirrored": TF_CONFIG missing or malformed, or workers that did not
            start within `worker_wait_s` (named).
    """
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        return _start_multi_worker(read_tf_config(), worker_wait_s)
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"strategy name must be one of {STRATEGIES}, got {name!r}")


def _start_multi_worker(task, wait_s):
    """MultiWorkerMirroredStrategy() once every other worker of `task`'s cluster accepts connections, waiting
    at most `wait_s` seconds (TensorFlow's own start would block in C++, holding the GIL, for ever); meanwhile
    this worker's port takes connections too, so that its peers see it started, and SIGTERM / SIGINT end the
    process. They do from then on too: a worker blocked in a collective op ends at once."""
    peers = {f"{kind} {index} ({address})": address for (kind, index), address in task.peers().items()}
    print(f"multi-worker: {task.type} {task.index} waits for {', '.join(peers) or 'no other worker'} "
          f"to start (at most {wait_s:g} s)", file=sys.stderr, flush=True)
    in_main = threading.current_thread() is threading.main_thread()
    handlers = [(signum, signal.signal(signum, _end_at_once)) for signum in (signal.SIGTERM, signal.SIGINT)
                if in_main]
    try:
        with _listening(task.address):
            deadline = time.monotonic() + wait_s
            while True:
                peers = {name: address for name, address in peers.items() if not _accepts(address)}
                if not peers:
                    break
                if time.monotonic() > deadline:
                    raise UserInputError(f"multi-worker: {', '.join(peers)} did not start within "
                                         f"{wait_s:g} s; start every worker of TF_CONFIG, or wait longer")
                time.sleep(0.2)
    finally:
        for signum, handler in handlers:
            signal.signal(signum, handler)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    if in_main:  # TensorFlow's start installed a SIGTERM handler that keeps the process alive
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_DFL)
    return strategy


@contextlib.contextmanager
def _listening(address):
    """This worker's port accepting connections (not served: TensorFlow's server takes the port after)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("", int(address.rsplit(":", 1)[1])))
        listener.listen(16)
    except OSError:
        pass  # not a local port (or in use): the peers wait for TensorFlow's own server instead
    try:
        yield
    finally:
        listener.close()


def _accepts(address):
    host, port = address.rsplit(":", 1)
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def _end_at_once(signum, frame):
    del frame
    os._exit(128 + signum)


def task_info(strategy):
    """(task_type, task_id) of this process; ("worker", 0) when not multi-worker."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return "worker", 0
    return resolver.task_type, resolver.task_id or 0


def is_chief(strategy):
    """True for the one process that writes checkpoints, logs and results (worker 0 or the 'chief').

    Args:
        strategy: the run's `tf.distribute.Strategy` (any strategy other than MultiWorkerMirroredStrategy
            has one process: the chief).

    Returns:
        bool.
    """
    task_type, task_id = task_info(strategy)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    return task_type == "chief" or (task_type == "worker" and task_id == 0 and not _has_chief(strategy))


def _has_chief(strategy):
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return "chief" in spec

