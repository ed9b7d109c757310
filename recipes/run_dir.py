"""A recipe's output directory: claimed through `keras_bert.outputs.claim` (inputs, lock), marked with the
recipe that writes it, and left as it was when the run writes nothing there (failed, stopped or unused)."""

import os
import shutil

from absl import flags

from keras_bert import outputs
from keras_bert.errors import UserInputError
from keras_bert.training import tf_config
from recipes import logs

FLAGS = flags.FLAGS
RUN_MARKER = ".keras_bert_run"  # in an output directory: the recipe writing there
RESUMING_RECIPES = ("pretrain", "distill")  # a rerun continues from the run's checkpoints


def claim_output_dir(flag, input_flags=(), check_only=False):
    """The output-directory rules of every recipe, for the directory of --`flag`: refused when it is,
    contains or lies inside the path of one of `input_flags` (writing would destroy the input), or while
    another run writes it (its lock, named); refused when not empty (the marker aside), unless it holds a run
    of this recipe that resumes (`RESUMING_RECIPES`: one it marked, or an unmarked one with checkpoints/,
    from before the marker) or --overwrite is given (a fresh start, in every recipe: a resumable run's files
    are set aside too): then its old files are set aside and removed once the
    run writes its own (never merged with them). Creates it and marks it as this recipe's; when the run ends
    (or fails, or is stopped by SIGTERM) having written nothing there, the directory is left as it was (or
    not there). A non-chief multi-worker task only checks the inputs: the chief claims the directory.
    `check_only`: raise what the claim would raise, and leave the directory as it is."""
    path, recipe = FLAGS[flag].value, logs.recipe_name()
    label = f"--{flag}={path}"
    inputs = {f"--{name}={FLAGS[name].value}": FLAGS[name].value for name in input_flags}
    if not tf_config.writes_files(FLAGS.get_flag_value("distribution_strategy", None)):
        return outputs.check_inputs(path, inputs, label, flag)
    held = outputs.claim(path, inputs, overwrite=True, kind="dir", label=label, flag=flag)
    try:
        entries = (sorted(set(os.listdir(path)) - {RUN_MARKER, outputs.LOCK_SUFFIX}) if os.path.isdir(path)
                   else [])
        owner = _marker(path)
        resumable = recipe in RESUMING_RECIPES and not FLAGS.overwrite and (
            owner == recipe or (owner is None
                                and os.path.exists(os.path.join(path, "checkpoints", "checkpoint"))))
        if entries and not resumable and not FLAGS.overwrite:
            raise UserInputError(f"{label} is not empty ({', '.join(entries[:3])}"
                                 f"{', ...' * (len(entries) > 3)}) and holds no run of {recipe} to resume: "
                                 f"pass --overwrite to replace its files, or choose another --{flag}")
        if check_only:
            return held.release(False)
        os.makedirs(path, exist_ok=True)
        stash = _set_aside(held.path, entries) if entries and not resumable else None
        if owner != recipe:
            with open(os.path.join(path, RUN_MARKER), "w", encoding="utf-8") as f:
                f.write(recipe + "\n")
    except BaseException:
        held.release(False)
        raise
    fresh = not entries or stash is not None  # nothing of an earlier run left in it
    replaced = False if owner == recipe else owner  # the marker this claim replaced (None: it added one)
    logs.AFTER_MAIN.append(lambda succeeded: _finish(held, succeeded, fresh, replaced, stash))


def _marker(path):
    try:
        with open(os.path.join(path, RUN_MARKER), encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def _set_aside(path, entries):
    """Moves `entries` of `path` into a hidden directory beside it (inside it when its parent is read-only),
    which the next writer there removes as stale if this process dies; returns that directory."""
    parent = os.path.dirname(path) if outputs.parent_writable(path) else path
    stash = outputs.make_temp_dir(parent, f".tmp-{os.path.basename(path)}-old-")
    for name in entries:
        os.rename(os.path.join(path, name), os.path.join(stash, name))
    return stash


def _walk(path, stash):
    """os.walk(path, topdown=False) less the set-aside directory `stash` (None: none)."""
    return [(root, files) for root, _, files in os.walk(path, topdown=False)
            if not (stash and (root + os.sep).startswith(stash + os.sep))]


def _unwritten(path, stash):
    """Whether no file but the marker (and the lock) is under `path`, `stash` aside."""
    return all(name in (RUN_MARKER, outputs.LOCK_SUFFIX) and root == path
               for root, files in _walk(path, stash) for name in files)


def _finish(held, succeeded, fresh, owner, stash):
    """After the run: a `fresh` directory it wrote nothing in goes back to how it was (old files, the marker
    of `owner` when it replaced another (None: there was none), or not there, with the parents the claim
    made); else the set-aside old files are removed. Drops the lock."""
    path = held.path
    if not fresh or not _unwritten(path, stash):
        if stash:
            shutil.rmtree(stash, ignore_errors=True)
        return held.release(succeeded)
    if owner is None:
        os.remove(os.path.join(path, RUN_MARKER))
    elif owner:
        with open(os.path.join(path, RUN_MARKER), "w", encoding="utf-8") as f:
            f.write(owner + "\n")
    for root, _ in _walk(path, stash):
        if root != path:
            os.rmdir(root)  # the empty directories the run made
    if stash:
        for name in os.listdir(stash):
            if name != outputs.MARKER:
                os.rename(os.path.join(stash, name), os.path.join(path, name))
        shutil.rmtree(stash)
    elif not held.existed:
        os.rmdir(path)
    held.release(held.existed)
