"""Crash-safe checkpoints, stopping at a global step, failing on a NaN loss, and TensorBoard scalars for
`model.fit`.

`TrainingCheckpoint` saves model weights, optimizer slots and the step counter (which drives the learning
rate schedule) with `tf.train.CheckpointManager`: a checkpoint's files are complete before the `checkpoint`
index file is atomically replaced to point at it, so a process killed mid-save resumes from the previous
one. Resume = build the model and optimizer, `restore()`, then `fit(initial_epoch=...)`. The encoder's
configuration is kept beside the checkpoints, so a resume with another architecture fails naming both, and
a full disk fails naming the directory, without leaving the partial `ckpt-N_temp/` that would fail the retry.
"""

import errno
import glob
import hashlib
import json
import logging
import math
import os
import re
import shutil
import statistics
import time

import keras
import tensorflow as tf

from keras_bert.errors import DiskFullError, UserInputError
from keras_bert.training import distribute

logger = logging.getLogger("keras_bert")

# What tensorboard's scalar summary writes, built here so TensorBoard itself need not be installed.
_SCALAR_METADATA = tf.compat.v1.SummaryMetadata(
    plugin_data=tf.compat.v1.SummaryMetadata.PluginData(plugin_name="scalars")).SerializeToString()


class TrainingCheckpoint:
    """Saves/restores `model` + its optimizer (incl. `iterations`) under `directory`.

    Args:
        model: a compiled Keras model (its `optimizer` is checkpointed; it is built here if needed).
        directory: where checkpoints go (`ckpt-<step>.*` + the `checkpoint` index file).
        max_to_keep: how many recent checkpoints to keep.
        strategy: the distribution strategy; in multi-worker runs only the chief writes to `directory`,
            the other workers write to a scratch directory that is removed (all must call `save`).
        tracked: what is saved beside the optimizer (default `model`); a distiller passes its trained part,
            so a resume never restores weights over the teacher it was given.
        identity: a JSON-able dict of what defines the run (inputs' fingerprints by content, e.g.
            `file_fingerprint`, and settings), kept beside the checkpoints; a resume whose identity differs
            is refused naming the keys that changed. A run saved without one (before its recipe kept it)
            resumes with a warning, and keeps this run's from then on.
    """

    def __init__(self, model, directory, max_to_keep=3, strategy=None, tracked=None, identity=None):
        self.model = model
        self.identity = None if identity is None else json.loads(json.dumps(identity))
        self.optimizer = model.optimizer
        strategy = strategy or tf.distribute.get_strategy()
        if not self.optimizer.built:
            with strategy.scope():
                self.optimizer.build(model.trainable_variables)
        self.is_chief = distribute.is_chief(strategy)
        _, task_id = distribute.task_info(strategy)
        self.directory = directory if self.is_chief else os.path.join(directory, f".worker_{task_id}_scratch")
        tracked = model if tracked is None else tracked
        # The state beside the weights (dropout's seed generators), so a resumed run draws the masks the
        # uninterrupted one would.
        weights = {id(weight) for weight in getattr(tracked, "weights", ())}
        seeds = [v for v in getattr(tracked, "variables", ()) if id(v) not in weights]
        self.checkpoint = tf.train.Checkpoint(model=tracked, optimizer=self.optimizer,
                                              **({"seeds": seeds} if seeds else {}))
        # A checkpoint saved without the seeds (before they were kept) restores the rest.
        self._without_seeds = tf.train.Checkpoint(model=tracked, optimizer=self.optimizer)
        self.manager = tf.train.CheckpointManager(self.checkpoint, self.directory, max_to_keep=max_to_keep,
                                                  step_counter=self.optimizer.iterations)
        self._config_path = os.path.join(directory, CONFIG_FILE)
        self._identity_path = os.path.join(directory, IDENTITY_FILE)
        if self.is_chief:
            _remove_partial_saves(self.directory)
        # Non-chief workers restore what the chief wrote.
        self._restore_manager = self.manager if self.is_chief else tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=max_to_keep)

    @property
    def step(self):
        return int(self.optimizer.iterations.numpy())

    def restore(self):
        """Restores the latest complete checkpoint, if any. Returns the step it was saved at (0 if none)."""
        path = self._restore_manager.latest_checkpoint
        if path:
            saved, current = _read_json(self._config_path), _encoder_config(self.model)
            if saved is not None and current is not None and saved != current:
                raise UserInputError(f"{os.path.dirname(self._config_path)} holds a run of another "
                                     f"configuration ({_differences(saved, current)}); resume with its "
                                     "configuration or start in another directory")
            stored = _read_json(self._identity_path)
            if self.identity is not None and stored is not None and stored != self.identity:
                changed = "; ".join(f"{key} changed" for key in sorted(set(stored) | set(self.identity))
                                    if stored.get(key) != self.identity.get(key))
                raise UserInputError(f"{os.path.dirname(self._identity_path)} holds a run of other inputs "
                                     f"({changed}); resume with the same ones")
            try:
                saved_seeds = any(name.startswith("seeds/") for name, _ in tf.train.list_variables(path))
            except (tf.errors.OpError, ValueError):
                saved_seeds = True  # unreadable: the restore says how
            try:
                (self.checkpoint if saved_seeds else self._without_seeds).restore(
                    path).assert_existing_objects_matched()
            except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as e:
                first = str(e).strip().splitlines()[0][:300]
                raise UserInputError(f"{path} holds a run of another configuration, which does not fit this "
                                     f"one ({first}); this run: {current}") from None
            if self.identity is not None and stored is None:
                logger.warning("%s: no record of the inputs of the run it resumes (saved before they were "
                               "kept); resuming without comparing them", self.directory)
                if self.is_chief:
                    _write_json_atomically(self._identity_path, self.identity)
        return self.step

    def save(self):
        """Saves at the current step (no-op if a checkpoint of this step exists). Returns the path."""
        step = self.step
        latest = self.manager.latest_checkpoint
        if latest and latest.endswith(f"-{step}"):
            return latest
        try:
            path = self.manager.save(checkpoint_number=step)
        except (OSError, tf.errors.ResourceExhaustedError) as e:
            _remove_partial_saves(self.directory)
            if getattr(e, "errno", None) != errno.ENOSPC and "space" not in str(e).lower():
                raise
            raise DiskFullError(f"{self.directory}: the disk is full; checkpoint ckpt-{step} was not written "
                                "(its partial files are removed): free space and run again to resume from "
                                "the last checkpoint") from None
        config = _encoder_config(self.model)
        if self.is_chief and config is not None and not os.path.exists(self._config_path):
            _write_json_atomically(self._config_path, config)
        if self.is_chief and self.identity is not None and not os.path.exists(self._identity_path):
            _write_json_atomically(self._identity_path, self.identity)
        if not self.is_chief:
            shutil.rmtree(self.directory, ignore_errors=True)
        return path

    def discard(self):
        """Removes the checkpoint directory (a run that ended needs no resume; only the chief writes it)."""
        if self.is_chief:
            shutil.rmtree(self.directory, ignore_errors=True)


CONFIG_FILE = "bert_config.json"
IDENTITY_FILE = "run_identity.json"
# What tf.train.CheckpointManager writes before the rename that completes a save.
_PARTIAL_SAVE = re.compile(r"^ckpt-\d+_temp$")


def file_fingerprint(paths):
    """The SHA-256 of each of `paths` (None skipped) by content: a file's bytes; a directory's files (or a
    checkpoint prefix's `prefix.*` files), their relative names and bytes. A copy has its original's, a file
    replaced in place (same size and mtime or not) another. What a `TrainingCheckpoint` identity holds of
    the files a run reads (about 1 s a GB)."""
    fingerprints = []
    for path in (p for p in paths if p):
        if os.path.isfile(path):
            files = {"": path}  # one file: its bytes alone, whatever its name
        elif os.path.isdir(path):
            files = {os.path.relpath(os.path.join(root, name), path): os.path.join(root, name)
                     for root, _, names in os.walk(path) for name in names}
        else:
            files = {os.path.basename(name): name for name in glob.glob(glob.escape(path) + ".*")}
        digest = hashlib.sha256()
        for name in sorted(files):
            digest.update(name.encode("utf-8") + b"\0")
            with open(files[name], "rb") as f:
                while block := f.read(1 << 20):
                    digest.update(block)
        fingerprints.append(digest.hexdigest())
    return fingerprints


def _remove_partial_saves(directory):
    """Removes the `ckpt-N_temp` directories a save killed (or out of disk) left in `directory`."""
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if _PARTIAL_SAVE.match(name):
                shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _encoder_config(model):
    """The model's encoder configuration as a dict (None for a model without one)."""
    config = getattr(getattr(model, "encoder", None), "config", None)
    return None if config is None else json.loads(json.dumps(config.to_dict()))


def _read_json(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _differences(saved, current):
    keys = sorted(k for k in set(saved) | set(current) if saved.get(k) != current.get(k))
    return "; ".join(f"{k}: {saved.get(k)} there, {current.get(k)} in this run" for k in keys)


def _write_json_atomically(path, value):
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, sort_keys=True)
    os.replace(tmp, path)


class CheckpointCallback(keras.callbacks.Callback):
    """Saves a `TrainingCheckpoint` every `save_steps` optimizer steps and at the end of training.

    Args:
        training_checkpoint: the `TrainingCheckpoint` to save.
        save_steps: save whenever the optimizer's step count is a multiple of this (int > 0).
    """

    def __init__(self, training_checkpoint, save_steps):
        super().__init__()
        self.training_checkpoint = training_checkpoint
        self.save_steps = save_steps

    def on_train_batch_end(self, batch, logs=None):
        if self.training_checkpoint.step % self.save_steps == 0:
            self.training_checkpoint.save()

    def on_train_end(self, logs=None):
        self.training_checkpoint.save()


class StopAtStep(keras.callbacks.Callback):
    """Stops `fit` once the optimizer has taken `num_steps` steps in total (across restarts).

    Args:
        num_steps: the total optimizer steps of the run (int), counted by `optimizer.iterations`.
    """

    def __init__(self, num_steps):
        super().__init__()
        self.num_steps = num_steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.num_steps:
            self.model.stop_training = True


class CompileLog(keras.callbacks.Callback):
    """Logs at the end of `fit` the batch lengths the train step met and what meeting them cost: each new
    length is a new input shape (a compiled step compiles anew), paid by the first step that has it.

    `watch(dataset)` returns the training dataset (batches of `inputs` dicts with `input_mask`, or tuples
    starting with one) noting each batch's length as it is read; reads keep the steps' order (prefetching
    only reads ahead), so the k-th length noted is the k-th step's. `bound`: the most lengths the data can
    have, said beside the count.

    Args:
        bound: the most batch lengths the data can have (int), or None (not said).
    """

    def __init__(self, bound=None):
        super().__init__()
        self.bound = bound
        self.lengths = []  # each batch read, in order
        self.first = {}  # length -> seconds of the first call that ran a step of it
        self.others = []  # seconds of the calls that met no new length
        self._started = None

    def watch(self, dataset):
        def note(length):
            self.lengths.append(int(length))
            return length

        def noted(inputs, *rest):
            length = tf.py_function(note, [tf.shape(inputs["input_mask"])[-1]], tf.int32)
            with tf.control_dependencies([length]):  # noted when the batch is read, not skipped
                inputs = {name: tf.identity(value) for name, value in inputs.items()}
            return (inputs, *rest) if rest else inputs

        return dataset.map(noted)

    def on_train_begin(self, logs=None):
        self._steps_done = 0
        self._train_started = time.perf_counter()

    def on_train_batch_begin(self, batch, logs=None):
        self._started = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        seconds = time.perf_counter() - self._started
        steps = getattr(self.model, "steps_per_execution", 1) or 1
        new = [length for length in self.lengths[self._steps_done:self._steps_done + steps]
               if length not in self.first]
        self._steps_done += steps
        for length in new:  # a call meeting several new lengths counts once, under the first
            self.first[length] = seconds / len(new)
        if not new:
            self.others.append(seconds)

    def on_train_end(self, logs=None):
        if not self.first:
            return
        total = time.perf_counter() - self._train_started
        steady = statistics.median(self.others) if self.others else 0.0
        extra = sum(max(0.0, seconds - steady) for seconds in self.first.values())
        execution = getattr(self.model, "execution", None) or (
            "xla" if self.model.jit_compile else "kernels")
        bound = f" of at most {self.bound}" if self.bound else ""
        logger.info("train step (%s): %d batch lengths%s (%s); their first steps took %.1f s more than a "
                    "steady step (%.3f s): %.0f%% of the %.1f s of training", execution, len(self.first),
                    bound, ", ".join(map(str, sorted(self.first))), extra, steady,
                    100 * extra / max(total, 1e-9), total)


class TrainingDivergedError(UserInputError, RuntimeError):
    """The training loss became NaN or infinite: the weights are no longer usable."""


class FailOnNaN(keras.callbacks.Callback):
    """Raises `TrainingDivergedError` (naming the step and the loss) as soon as the training loss is not
    finite. Unlike Keras' `TerminateOnNaN`, which only stops `fit`, the caller cannot go on to save or
    export the NaN model; put it first in `callbacks` so no checkpoint of that step is written either."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            step = int(self.model.optimizer.iterations.numpy())
            raise TrainingDivergedError(
                f"training loss is {float(loss)} at step {step}: the model diverged and is not saved. Check "
                "the labels and inputs, or lower the learning rate")


class ScalarSummaries(keras.callbacks.Callback):
    """Writes the training logs (loss, metrics) and the learning rate to TensorBoard every `every_steps`
    steps, indexed by the global step, so curves continue across restarts. Only the chief writes.

    Args:
        log_dir: the TensorBoard directory (event files under it).
        every_steps: write every this many optimizer steps (default 100).
        enabled: False writes nothing (a worker that is not the chief).
    """

    def __init__(self, log_dir, every_steps=100, enabled=True):
        super().__init__()
        self.every_steps = every_steps
        self.log_dir = log_dir if enabled else None
        self._writer = None

    @property
    def writer(self):
        # Made at the first write: a run that fails before its first step leaves no event file behind.
        if self._writer is None and self.log_dir is not None:
            self._writer = tf.summary.create_file_writer(self.log_dir)
        return self._writer

    def on_train_batch_end(self, batch, logs=None):
        step = int(self.model.optimizer.iterations.numpy())
        if self.writer is None or step % self.every_steps:
            return
        optimizer = self.model.optimizer
        with self.writer.as_default(step=step):
            for name, value in (logs or {}).items():
                _scalar(f"train/{name}", value, step)
            _scalar("train/learning_rate", keras.ops.convert_to_numpy(optimizer.learning_rate), step)
        self.writer.flush()

    def write(self, prefix, results, step):
        """Writes a dict of scalars (e.g. evaluation results) at `step`."""
        if self.writer is None:
            return
        with self.writer.as_default(step=step):
            for name, value in results.items():
                _scalar(f"{prefix}/{name}", value, step)
        self.writer.flush()


def _scalar(tag, value, step):
    tf.summary.write(tag, tf.constant(float(value), tf.float32), step=step, metadata=_SCALAR_METADATA)
