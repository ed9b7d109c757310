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
RUN_MARKER = outputs.RUN_MARKER  # in an output directory: the recipe writing there, then the entries it keeps
RESUMING_RECIPES = ("pretrain", "distill")  # a rerun continues from the run's checkpoints


def claim_output_dir(flag, input_flags=(), check_only=False, unfinished=False):
    """The output-directory rules of every recipe, for the directory of --`flag`: refused when it is,
    contains or lies inside the path of one of `input_flags` (writing would destroy the input), or while
    another run writes it (its lock, named); refused when not empty (the marker aside), unless it holds a run
    of this recipe that resumes (`RESUMING_RECIPES`: one it marked, or an unmarked one with checkpoints/,
    from before the marker; with `unfinished`, one it marked that still holds checkpoints/: a fine-tuning
    run killed in training, as one that ended removes them) or --overwrite is given (a fresh start, in
    every recipe: a resumable run's files are set aside too): then the earlier runs' files are set aside
    and removed once the run writes its own (never merged with them). Only the runs' files: the entries an
    unmarked directory held when a run first claimed it (a directory it shares, say the working directory)
    are recorded in the marker and kept, named in one logged line. A run killed after setting files aside
    leaves them in a stash beside the directory, which the next run's claim settles
    (`keras_bert.outputs.recover`): restored when the killed run wrote no file, else removed with a one-line
    notice (its output is the newer one, and a resuming recipe continues from it). Creates it and marks it
    as this recipe's; when the run ends (or fails, or is stopped by SIGTERM) having written nothing there,
    the directory is left as it was (or not there). A non-chief multi-worker task only checks the inputs:
    the chief claims the directory. `check_only`: raise what the claim would raise, and leave the directory
    as it is."""
    path, recipe = FLAGS[flag].value, logs.recipe_name()
    label = f"--{flag}={path}"
    inputs = {f"--{name}={FLAGS[name].value}": FLAGS[name].value for name in input_flags}
    if not tf_config.writes_files(FLAGS.get_flag_value("distribution_strategy", None)):
        return outputs.check_inputs(path, inputs, label, flag)
    held = outputs.claim(path, inputs, overwrite=True, kind="dir", label=label, flag=flag)
    try:
        entries = (sorted(set(os.listdir(path)) - {RUN_MARKER, outputs.LOCK_SUFFIX}) if os.path.isdir(path)
                   else [])
        entries = [name for name in entries if not name.startswith(".tmp-")]  # our stashes, temporaries
        owner, marker_text, kept = _marker(path)
        if owner is None and not os.path.exists(os.path.join(path, "checkpoints", "checkpoint")):
            kept = entries  # not a run directory: none of its entries is a run's
        kept = [name for name in kept if name in entries]
        ours = [name for name in entries if name not in kept]
        resumable = not FLAGS.overwrite and (recipe in RESUMING_RECIPES and (
            owner == recipe or (owner is None
                                and os.path.exists(os.path.join(path, "checkpoints", "checkpoint"))))
            or unfinished and owner == recipe and os.path.isdir(os.path.join(path, "checkpoints")))
        if entries and not resumable and not FLAGS.overwrite:
            raise UserInputError(f"{label} is not empty ({', '.join(entries[:3])}"
                                 f"{', ...' * (len(entries) > 3)}) and holds no run of {recipe} to resume: "
                                 f"pass --overwrite to replace its files, or choose another --{flag}")
        if check_only:
            return held.release(False)
        os.makedirs(path, exist_ok=True)
        stash = outputs.set_aside(held.path, ours, "run", kept=kept) if ours and not resumable else None
        text = "".join(line + "\n" for line in [recipe, *kept])
        if text != marker_text:
            with open(os.path.join(path, RUN_MARKER), "w", encoding="utf-8") as f:
                f.write(text)
        outputs.log_kept(label, kept, "no run wrote")
    except BaseException:
        held.release(False)
        raise
    fresh = not ours or stash is not None  # nothing of an earlier run left in it
    marker_text = False if text == marker_text else marker_text  # False: the marker was left as it was
    logs.AFTER_MAIN.append(lambda succeeded: _finish(held, succeeded, fresh, marker_text, stash, kept))


def _marker(path):
    """(recipe, whole text, kept entries) of the run marker of `path`; (None, None, []) without one."""
    try:
        with open(os.path.join(path, RUN_MARKER), encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None, None, []
    recipe, *kept = text.splitlines() or [""]
    return recipe.strip(), text, [name for name in kept if name]


def _finish(held, succeeded, fresh, marker_text, stash, kept):
    """After the run: a `fresh` directory it wrote nothing in goes back to how it was (old files, the marker
    `marker_text` it had (None: there was none; False: it is unchanged), or not there, with the parents the
    claim made); else the set-aside old files are removed. Drops the lock."""
    path = held.path
    if not fresh or outputs.run_wrote(path, kept):
        if stash:
            shutil.rmtree(stash, ignore_errors=True)
        return held.release(succeeded)
    if marker_text is None:
        os.remove(os.path.join(path, RUN_MARKER))
    elif marker_text is not False:
        with open(os.path.join(path, RUN_MARKER), "w", encoding="utf-8") as f:
            f.write(marker_text)
    if stash:
        outputs.restore(stash)  # the empty directories the run made go too
    else:
        for name in sorted(set(os.listdir(path)) - {*kept, RUN_MARKER, outputs.LOCK_SUFFIX}):
            if not name.startswith(".tmp-") and os.path.isdir(os.path.join(path, name)):
                shutil.rmtree(os.path.join(path, name))  # holds no file: the directories the run made
        if not held.existed:
            os.rmdir(path)
    held.release(held.existed)
