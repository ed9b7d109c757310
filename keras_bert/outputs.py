"""The one guarded writer: every file or directory the library and the scripts write is claimed here.

`claim(path, inputs, overwrite)` is the rule set, in one place: the output may not be, hold or lie inside
one of its `inputs` (paths compared after resolving symlinks, and files by identity, st_dev/st_ino, so a
hard link or symlink to an input is the input); an existing file or non-empty directory is
refused unless `overwrite`; and the claim takes the output's lock (`keras_bert.output_lock`: a second
writer of the same path is refused at once, naming the first); `claim_first` takes the first free one of
several (numbered versions). `writing_file` and `writing_dir` write under a hidden temporary name in
the same parent and rename it into place: a failed or killed write leaves no partial output, and parents the
claim created are removed again. `overwrite` means "replace my previous output", nothing else: a
directory writer records the entries it wrote (`MANIFEST`), and replaces those and the entries it writes
now, never a file it did not write in a directory it shares (kept, and named in one logged line); a
directory holding only its previous output is replaced whole by one rename. The old entries are first set
aside in a stash beside the output (`.tmp-<name>-old-*`, `set_aside`); a replacement interrupted by a kill
is settled by the next claim of the same output (`recover`): the old output is restored when the new one
never got in place whole, or removed, with a one-line notice, when it did.

The temporary directories (`make_temp_dir`) are marked with their writer (`host pid`); the next one made in
the same parent removes those whose process is gone (another host's: after a day). `mkdtemp` makes them
0700, so `seal` gives a tree the modes a plain `mkdir`/`open` would have (0777 / 0666 less the umask), so a
TF Serving process running as another user can read a published version.
"""

import contextlib
import json
import logging
import os
import shutil
import socket
import tempfile
import time

from keras_bert.errors import UserInputError
from keras_bert.output_lock import LOCK_SUFFIX, Busy, parent_writable, release_lock, take_lock
from keras_bert.output_lock import noun as _noun

MARKER = ".keras_bert_writer"
MANIFEST = ".keras_bert_output"  # in a directory a writer filled: the entries it wrote, one a line
STASH = ".keras_bert_replacing"  # in a `.tmp-<name>-old-*` stash: what it holds the old entries of
RUN_MARKER = ".keras_bert_run"  # in a recipe's run directory: the recipe, then the entries it keeps
_OTHER_HOST_STALE_S = 24 * 3600
logger = logging.getLogger("keras_bert")


class Taken(UserInputError):
    """The output exists (a file; a non-empty directory) and `overwrite` was not given."""


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _owner_gone(owner_file):
    """Whether the `host pid` writer named in `owner_file` is gone; False when unreadable or not ours."""
    try:
        with open(owner_file, encoding="utf-8") as f:
            host, pid = f.readline().split()
        age = time.time() - os.path.getmtime(owner_file)
    except (OSError, ValueError):
        return False
    if host != socket.gethostname():
        return age > _OTHER_HOST_STALE_S
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False  # alive under another user, or a malformed pid
    return False


def remove_stale(parent):
    """Removes the `.tmp-*` directories of `parent` that a dead writer of ours left, but for the stashes of
    an interrupted replacement (`set_aside`), which the next claim of their target recovers (`recover`);
    returns their paths."""
    removed = []
    for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
        path = os.path.join(parent, name)
        if (name.startswith(".tmp-") and os.path.isdir(path) and not os.path.exists(os.path.join(path, STASH))
                and _owner_gone(os.path.join(path, MARKER))):  # a stash is left to `recover`
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def make_temp_dir(parent, prefix=".tmp-"):
    """A new hidden directory in `parent` (created if missing) marked as ours; stale ones are removed
    first."""
    os.makedirs(parent, exist_ok=True)
    remove_stale(parent)
    path = tempfile.mkdtemp(prefix=prefix, dir=parent)
    with open(os.path.join(path, MARKER), "w", encoding="utf-8") as f:
        f.write(f"{socket.gethostname()} {os.getpid()}\n")
    return path


def seal(path):
    """Removes the marker of `path` and gives every directory 0777 and every file 0666, less the umask."""
    os.remove(os.path.join(path, MARKER))
    mask = _umask()
    for root, _, files in os.walk(path):  # every directory comes up as a root once
        os.chmod(root, 0o777 & ~mask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~mask)


def within(inner, outer):
    """Whether path `inner` is `outer` or lies under it, after resolving symlinks and relative parts."""
    inner, outer = os.path.realpath(inner), os.path.realpath(outer)
    return os.path.commonpath([inner, outer]) == outer


def check_inputs(path, inputs, label=None, flag=None):
    """Raises UserInputError when `path` is, holds or lies inside one of `inputs` (paths, or a dict
    {label: path}; None entries are skipped), compared by resolved path and by file identity (st_dev,
    st_ino: a hard link to an input at `path` or under it is the input). `label` names the output in the
    message (default: `path`), `flag` the script flag a user would change (default: "path")."""
    labelled = inputs.items() if isinstance(inputs, dict) else ((source, source) for source in inputs)
    linked = None  # the file identities at `path`, read once when a path comparison does not decide
    for source_label, source in labelled:
        if not source:
            continue
        if within(source, path):
            relation = "is or contains"
        elif within(path, source):
            relation = "lies inside"
        elif _identity(source) in (linked := linked if linked is not None else _identities(path)):
            relation = "is the same file as" if _identity(source) == _identity(path) else "holds a link to"
        else:
            continue
        raise UserInputError(f"{label or path} {relation} the input {source_label}: writing there would "
                             f"replace it; choose another {_noun(flag)}")


def _identity(path):
    """(st_dev, st_ino) of `path` (symlinks followed): one file under any name or link; None if absent."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


def _identities(path):
    """The identities of `path` and, for a directory, of every entry under it (hard links inside it)."""
    found = {_identity(path)} - {None}
    for root, directories, files in os.walk(path) if os.path.isdir(path) else ():
        for name in directories + files:
            with contextlib.suppress(OSError):
                stat = os.lstat(os.path.join(root, name))
                found.add((stat.st_dev, stat.st_ino))
    return found


def _contents(path):
    """The entries of directory `path`, less its lock and the temporaries a dead writer of ours left there."""
    remove_stale(path)
    return sorted(name for name in os.listdir(path) if name != LOCK_SUFFIX)


def _makedirs(directory):
    """os.makedirs(directory); returns the directories it created, deepest first."""
    created = []
    while directory and not os.path.exists(directory):
        created.append(directory)
        directory = os.path.dirname(directory)
    for made in reversed(created):
        with contextlib.suppress(FileExistsError):
            os.mkdir(made)
    return created


class Claim:
    """An output held by this process (from `claim`): `path`, `existed` (it was there before the claim)
    and `created` (the parent directories the claim made). `release(succeeded)` drops the lock and, after
    a failure, removes those parents when they are still empty."""

    def __init__(self, path, lock, existed, created):
        self.path, self.lock, self.existed, self.created = path, lock, existed, created

    def release(self, succeeded=True):
        if self.lock is not None:
            release_lock(self.lock)
            self.lock = None
        if not succeeded:
            for directory in self.created:
                with contextlib.suppress(OSError):
                    os.rmdir(directory)  # only an empty one goes
            self.created = []

    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        self.release(kind is None)


def claim(path, inputs=(), overwrite=False, kind="dir", label=None, flag=None):
    """Claims output `path` (kind "dir" or "file") for this process and returns its `Claim`, the lock held.

    Raises UserInputError (nothing created, no lock kept) when `path` is, holds or lies inside one of
    `inputs` (`check_inputs`), is of the other kind, or exists (a file; a directory: not empty) without
    `overwrite`, or when another live process holds its lock. `label` / `flag` name the output and the flag
    to change in the messages (default: the path; "path")."""
    path = os.path.abspath(os.fspath(path))
    check_inputs(path, inputs, label, flag)
    created = _makedirs(os.path.dirname(path))
    try:
        lock = take_lock(path, label, flag)
    except BaseException:
        Claim(path, None, False, created).release(False)
        raise
    try:
        recover(path)
    except BaseException:
        Claim(path, lock, False, created).release(False)
        raise
    result = Claim(path, lock, os.path.lexists(path), created)
    try:
        _check_free(path, kind, overwrite, label, flag)
    except BaseException:
        result.release(False)
        raise
    return result


def _check_free(path, kind, overwrite, label, flag):
    label, hint = label or path, "--overwrite" if flag else "overwrite=True"
    if not os.path.lexists(path):
        return
    if os.path.isdir(path) != (kind == "dir"):
        raise UserInputError(f"{label} is a "
                             f"{'directory, not a file' if kind == 'file' else 'file, not a directory'}")
    entries = _contents(path) if kind == "dir" else [os.path.basename(path)]
    if entries and not overwrite:
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        what = f"is not empty ({shown})" if kind == "dir" else "exists"
        raise Taken(f"{label} {what}: pass {hint} to replace it, or choose another {_noun(flag)}")


def claim_first(paths, kind="dir"):
    """The `Claim` of the first of `paths` (an iterable, e.g. numbered versions) that is free: absent or an
    empty directory, and no live writer holding its lock (`Busy`, `Taken` skip to the next). Two writers
    taking the first free one of the same `paths` at once get distinct ones."""
    for path in paths:
        try:
            return claim(path, (), False, kind)
        except (Busy, Taken):
            continue
    raise UserInputError("no free output path")


@contextlib.contextmanager
def writing_dir(path, inputs=(), overwrite=False):
    """Claims directory `path` (`claim`) and yields a new hidden directory beside it to write into; on
    success its tree gets the umask's modes (`seal`), a `MANIFEST` naming its entries, and takes the place
    of this writer's previous output (`put_in_place`): files it did not write are kept. On failure nothing
    of it is left. Yields the temporary directory's path."""
    with claim(path, inputs, overwrite, "dir") as held, filling(held, manifest=True) as tmp:
        yield tmp


@contextlib.contextmanager
def filling(held, manifest=False):
    """The body of `writing_dir` for a directory already claimed (`held`, a `Claim` of kind "dir"): yields a
    hidden temporary directory, sealed (with a `MANIFEST` when `manifest`) and put in place of `held.path`
    on success (`put_in_place`), removed on failure."""
    parent, name = os.path.split(held.path)
    inside = not parent_writable(held.path)  # a directory in a read-only one: filled entry by entry
    tmp = make_temp_dir(held.path if inside else parent, prefix=f".tmp-{name}-")
    try:
        yield tmp
        seal(tmp)
        if manifest:
            with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
                f.writelines(name + "\n" for name in sorted(os.listdir(tmp)))
        put_in_place(tmp, held.path, inside)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _written(target):
    """The entries of directory `target` that a writer of ours wrote there: those its `MANIFEST` names, and
    the manifest itself (none without one)."""
    try:
        with open(os.path.join(target, MANIFEST), encoding="utf-8") as f:
            return {line.rstrip("\n") for line in f if line.strip()} | {MANIFEST}
    except OSError:
        return set()


def _present(target):
    """The entries of directory `target`, less locks and hidden temporaries of ours."""
    return [name for name in _contents(target)
            if not name.startswith(".tmp-") and not name.endswith(LOCK_SUFFIX)]


def put_in_place(source, target, inside=False):
    """Puts the entries of directory `source` in place of this writer's previous output at `target`: the
    entries the previous `MANIFEST` names and those of the same names as the new ones. Every other entry of
    `target` (a file it did not write, in a directory it shares) is kept and named in one logged line.
    When `target` holds nothing else (and is not the working directory), it is replaced whole by one rename;
    else entry by entry. The old entries are first set aside (`set_aside`): an interrupted replacement is
    undone or finished by the next claim of `target` (`recover`)."""
    if not os.path.lexists(target):
        return os.rename(source, target)
    incoming = sorted(os.listdir(source))
    present = _present(target)
    ours = (_written(target) | set(incoming)) & set(present)
    kept = sorted(set(present) - ours)
    # whole only when nothing else is there, hidden entries too (a live writer's temporary, a nested lock)
    whole = not inside and set(_contents(target)) <= ours and not within(os.getcwd(), target)
    stash = set_aside(target, sorted(ours), "whole" if whole else "merge", incoming, kept)
    try:
        if whole:
            os.rename(source, target)
        else:
            for name in sorted(incoming, key=lambda name: name == MANIFEST):  # the manifest last: complete
                os.rename(os.path.join(source, name), os.path.join(target, name))
    except BaseException:
        restore(stash)
        raise
    shutil.rmtree(stash, ignore_errors=True)
    log_kept(target, kept)


def log_kept(label, kept, why="this writer did not write"):
    """Logs in one line the entries `kept` in output `label` because `why` (none: nothing logged)."""
    if kept:
        shown = ", ".join(kept[:5]) + (", ..." if len(kept) > 5 else "")
        logger.warning("%s: kept %d entr%s that %s: %s", label, len(kept), "y" if len(kept) == 1 else "ies",
                       why, shown)


def set_aside(target, names, mode, incoming=(), kept=()):
    """Moves `names` (entries of directory `target`; all of it, the directory itself, when `mode` is
    "whole") into `<stash>/old`, a new hidden directory beside `target` (inside it when its parent is
    read-only) that records what it holds (`STASH`: the target, the mode, the `incoming` entries that will
    replace them, the `kept` entries that are not the writer's). Returns the stash. Modes: "whole" and
    "merge" (a `writing_dir`: its new output is complete once `target` has a `MANIFEST`), "run" (a recipe's
    run directory: the new output is whatever the run writes there)."""
    parent, name = os.path.split(target)
    stash = make_temp_dir(parent if parent_writable(target) else target, f".tmp-{name}-old-")
    with open(os.path.join(stash, STASH), "w", encoding="utf-8") as f:
        json.dump({"target": target, "mode": mode, "incoming": list(incoming), "kept": list(kept)}, f)
    old = os.path.join(stash, "old")
    if mode == "whole":
        os.rename(target, old)
        return stash
    os.mkdir(old)
    for entry in names:
        os.rename(os.path.join(target, entry), os.path.join(old, entry))
    return stash


def _stash_info(stash):
    with open(os.path.join(stash, STASH), encoding="utf-8") as f:
        return json.load(f)


def _in_place(info):
    """Whether the new output of an interrupted replacement (a stash's `info`) got in place: a directory
    writer's once its `MANIFEST` is there; a run's once it wrote any file."""
    if info["mode"] == "run":
        return run_wrote(info["target"], info["kept"])
    return os.path.exists(os.path.join(info["target"], MANIFEST))


def run_wrote(target, kept=()):
    """Whether a file is under run directory `target` outside its `kept` entries, its run marker, its lock
    and our hidden temporaries."""
    for name in _present(target):
        entry = os.path.join(target, name)
        if name in kept or name == RUN_MARKER:
            continue
        if not os.path.isdir(entry) or os.path.islink(entry) or any(files for _, _, files in os.walk(entry)):
            return True
    return False


def restore(stash):
    """Undoes `set_aside`: the entries the new output brought (of a run: everything but the kept entries
    and the run marker, which hold no file) are removed and the old entries moved back; the stash goes."""
    info = _stash_info(stash)
    target, old = info["target"], os.path.join(stash, "old")
    if info["mode"] == "whole":
        if os.path.isdir(old) and not os.path.lexists(target):
            os.rename(old, target)
    elif os.path.isdir(target):
        keep = set(info["kept"]) | {RUN_MARKER}
        brought = ({*info["incoming"], MANIFEST} if info["mode"] == "merge"
                   else set(_present(target)) - keep)
        for name in sorted(brought & set(_present(target))):
            entry = os.path.join(target, name)
            shutil.rmtree(entry) if os.path.isdir(entry) and not os.path.islink(entry) else os.remove(entry)
        for name in sorted(os.listdir(old)) if os.path.isdir(old) else ():
            os.rename(os.path.join(old, name), os.path.join(target, name))
    shutil.rmtree(stash, ignore_errors=True)


def recover(path):
    """Finishes or undoes each interrupted replacement of `path` (a stash of `set_aside` whose writer is
    gone, beside `path` or inside it): when the new output got in place whole, the set-aside old output is
    removed; else the old output is restored (the new output's partial entries removed). Either is logged
    in one line naming the stash. Returns the stashes handled."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    handled = []
    for folder in (parent, path):
        for entry in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            stash = os.path.join(folder, entry)
            if not (entry.startswith(f".tmp-{name}-old-") and os.path.isfile(os.path.join(stash, STASH))
                    and _owner_gone(os.path.join(stash, MARKER))):
                continue
            try:
                info = _stash_info(stash)
            except (OSError, ValueError):
                continue
            if info.get("target") != path:
                continue
            if _in_place(info):
                shutil.rmtree(stash, ignore_errors=True)
                logger.warning("%s: removed %s, the earlier output that an interrupted overwrite had set "
                               "aside (the new output got in place)", path, stash)
            else:
                restore(stash)
                logger.warning("%s: restored the earlier output from %s: the overwrite that set it aside was "
                               "interrupted before its new output got in place", path, stash)
            handled.append(stash)
    return handled


@contextlib.contextmanager
def writing_file(path, inputs=(), overwrite=False, label=None, flag=None):
    """Claims file `path` (`claim`) and yields a hidden temporary path beside it to write; on success the file
    gets the umask's mode and is renamed to `path` (replacing an existing one only with `overwrite`, checked
    at the claim). On failure the temporary file is removed and no output is left."""
    with claim(path, inputs, overwrite, "file", label, flag) as held:
        parent, name = os.path.split(held.path)
        # ours alone while the lock is held; a killed write's is replaced
        tmp = os.path.join(parent, f".tmp-{name}")
        try:
            yield tmp
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, held.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
