"""tf.distribute strategies by name, and which worker writes files."""

import json
import os

import tensorflow as tf

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def get_strategy(name="one_device", tpu_address=None):
    """Returns a `tf.distribute.Strategy`.

    Args:
        name: "one_device" (first GPU, else CPU), "mirrored" (all local GPUs), "multi_worker_mirrored"
            (workers and this process's task from the TF_CONFIG environment variable) or "tpu".
        tpu_address: the TPU name or grpc address for "tpu" ("" or None: the local TPU).
    """
    if name == "one_device":
        gpus = tf.config.list_logical_devices("GPU")
        return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")
    if name == "mirrored":
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            raise ValueError("strategy 'multi_worker_mirrored' needs the TF_CONFIG environment "
                             "variable (cluster 'worker' addresses and this process's 'task')")
        try:
            json.loads(os.environ["TF_CONFIG"])
        except json.JSONDecodeError as e:
            raise ValueError(f"TF_CONFIG is not valid JSON: {e}") from None
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu_address or "")
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise ValueError(f"strategy name must be one of {STRATEGIES}, got {name!r}")


def task_info(strategy):
    """(task_type, task_id) of this process; ("worker", 0) when not multi-worker."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return "worker", 0
    return resolver.task_type, resolver.task_id or 0


def is_chief(strategy):
    """True for the one process that writes checkpoints, logs and results (worker 0 or the 'chief')."""
    task_type, task_id = task_info(strategy)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    return task_type == "chief" or (task_type == "worker" and task_id == 0 and not _has_chief(strategy))


def _has_chief(strategy):
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return "chief" in spec

