"""The one guarded writer: every file or directory the library and the scripts write is claimed here.

`claim(path, inputs, overwrite)` is the rule set, in one place: the output may not be, hold or lie inside
one of its `inputs` (paths compared after resolving symlinks); an existing file or non-empty directory is
refused unless `overwrite`; and the claim takes an exclusive lock beside the output
(`<parent>/.<name>.keras_bert_lock`, linked into place whole: host, pid, boot id, start time, the whole
command), so a second writer of the same path (another thread of this process too) is refused at once,
naming the first and the lock file. The holder keeps an exclusive flock on it, which the kernel drops when
the process dies however it dies (in a container, on another host of an NFS mount): a lock whose flock is
free, or that is empty or unreadable, is taken over with one warning; `claim_first` takes the first free
one of several (numbered versions). `writing_file` and `writing_dir` write under a hidden temporary name in
the same parent and rename it into place: a failed or killed write leaves no partial output, and parents the
claim created are removed again; with `overwrite` a
directory is replaced whole, never merged with its stale files.

The temporary directories (`make_temp_dir`) are marked with their writer (`host pid`); the next one made in
the same parent removes those whose process is gone (another host's: after a day). `mkdtemp` makes them
0700, so `seal` gives a tree the modes a plain `mkdir`/`open` would have (0777 / 0666 less the umask), so a
TF Serving process running as another user can read a published version.
"""

import contextlib
import fcntl
import logging
import os
import shlex
import shutil
import socket
import sys
import tempfile
import threading
import time

from keras_bert.errors import UserInputError

MARKER = ".keras_bert_writer"
LOCK_SUFFIX = ".keras_bert_lock"
_OTHER_HOST_STALE_S = 24 * 3600
logger = logging.getLogger("keras_bert")
# lock path -> [thread id, count, descriptor holding its flock]: the claims of one thread of this process
# that hold it (a library save inside a script's claim); another thread of this process is refused as
# another process would be.
_HELD = {}


class Busy(UserInputError):
    """Another live writer (process, or thread of this one) holds the output's lock; the message names it."""


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
    """Removes the `.tmp-*` directories of `parent` that a dead writer of ours left; returns their paths."""
    removed = []
    for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
        path = os.path.join(parent, name)
        if name.startswith(".tmp-") and os.path.isdir(path) and _owner_gone(os.path.join(path, MARKER)):
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
    {label: path}; None entries are skipped). `label` names the output in the message (default: `path`),
    `flag` the script flag a user would change (default: "path")."""
    labelled = inputs.items() if isinstance(inputs, dict) else ((source, source) for source in inputs)
    for source_label, source in labelled:
        if not source:
            continue
        if within(source, path):
            relation = "is or contains"
        elif within(path, source):
            relation = "lies inside"
        else:
            continue
        raise UserInputError(f"{label or path} {relation} the input {source_label}: writing there would "
                             f"replace it; choose another {_noun(flag)}")


def _noun(flag):
    return f"--{flag}" if flag else "path"


def _contents(path):
    """The entries of directory `path`, less its lock and the temporaries a dead writer of ours left there."""
    remove_stale(path)
    return sorted(name for name in os.listdir(path) if name != LOCK_SUFFIX)


def parent_writable(path):
    """Whether the directory holding `path` takes new entries (not so for a volume mounted in a read-only
    root: its output directory is then locked and filled from inside)."""
    return os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


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


def _lock(path, label, flag):
    """Takes the lock of output `path` for this process; returns the lock file. Raises UserInputError naming
    the other writer and the lock file when a live process holds it."""
    lock = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + LOCK_SUFFIX)
    if not parent_writable(path) and os.path.isdir(path):
        lock = os.path.join(path, LOCK_SUFFIX)  # a writable directory in a read-only one (a mounted volume)
    held = _HELD.get(lock)
    if held is not None and held[0] == threading.get_ident():
        held[1] += 1
        return lock
    if held is not None:
        raise Busy(f"{label or path} is being written by another thread of this process (pid {os.getpid()}); "
                   f"wait for it to finish or choose another {_noun(flag)}")
    for _ in range(3):  # a stale lock is taken over; a lock released meanwhile is tried again
        try:
            fd = _create_locked(lock)
        except OSError as e:  # a read-only or foreign parent: said of the output, not of our lock file
            raise UserInputError(f"{label or path} cannot be written here ({e.strerror}: "
                                 f"{os.path.dirname(lock)})") from None
        if fd is None:
            fd = _take_over(lock)
        if fd is None:
            raise Busy(f"{label or path} is being written by another run ({_describe(lock)}); wait for it to "
                       f"finish or choose another {_noun(flag)} (if that run is gone, remove {lock})")
        if fd >= 0:
            _HELD[lock] = [threading.get_ident(), 1, fd]
            return lock
    raise Busy(f"{label or path}: other runs took and released its lock {lock} meanwhile; run again")


def _owner_line():
    """What a lock records of its holder: `host pid boot_id start_ticks`, then the whole command line."""
    owner = f"{socket.gethostname()} {os.getpid()} {_boot_id()} {_start_ticks(os.getpid())}"
    return f"{owner}\n{shlex.join(sys.argv)}\n"


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return "-"


def _start_ticks(pid):
    """The start time of process `pid` (clock ticks since boot, /proc/<pid>/stat field 22); None if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[19]  # fields after the command, which may hold spaces
    except (OSError, IndexError):
        return None


def _create_locked(lock):
    """A new lock file holding our owner line and an exclusive flock (the holder's proof of life, released by
    the kernel when the process dies): written beside it and linked into place, so it is never seen empty.
    Returns its open descriptor, or None when the lock file exists."""
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(lock) + ".", dir=os.path.dirname(lock))
    try:
        with contextlib.suppress(OSError):  # a file system without flock: the owner line is the proof
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, _owner_line().encode("utf-8"))
        os.chmod(tmp, 0o644)
        os.link(tmp, lock)
    except FileExistsError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    finally:
        os.remove(tmp)
    return fd


def _take_over(lock):
    """The descriptor of existing `lock`, flocked and rewritten as ours, when its holder cannot be alive
    (logged in one line); None when it may be; -1 when it went away meanwhile (try again)."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return -1
    flocked = True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None  # its holder lives
    except OSError:
        flocked = False  # no flock here: the owner line decides
    try:
        same = os.fstat(fd).st_ino == os.stat(lock).st_ino
    except FileNotFoundError:
        same = False
    why = _stale_reason(lock, flocked) if same else None
    if why is None:
        os.close(fd)
        return -1 if not same else None
    logger.warning("%s: taking over the lock of %s: %s", lock, _describe(lock), why)
    os.ftruncate(fd, 0)
    os.pwrite(fd, _owner_line().encode("utf-8"), 0)
    return fd


def _stale_reason(lock, flocked):
    """Why the holder of `lock` cannot be alive, `flocked`: its flock was free (every writer of this version
    holds it while it lives); None when it may be (an older writer's lock, which has no flock, of a live
    process or of another host; without flock, a live pid of this boot)."""
    try:
        with open(lock, encoding="utf-8") as f:
            fields = f.readline().split()
    except (OSError, UnicodeDecodeError):
        return "the lock is unreadable"
    if not fields:
        return "the lock is empty (its writer was killed while making it)"
    if len(fields) not in (2, 4) or not fields[1].isdigit():
        return "the lock is malformed"
    here, pid = fields[0] == socket.gethostname(), int(fields[1])
    if len(fields) == 4:
        if flocked:
            return "its process is gone"
        if fields[2] != _boot_id():
            return "it is of an earlier boot of this machine" if here else None
        return "its process is gone" if _start_ticks(pid) != fields[3] else None
    return "its process is gone" if here and _start_ticks(pid) is None else None  # an older `host pid`


def _describe(lock):
    try:
        with open(lock, encoding="utf-8") as f:
            host, pid, *_ = f.readline().split()
            command = f.readline().strip()
    except (OSError, UnicodeDecodeError, ValueError):
        return "an unknown run"
    return f"pid {pid} on {host}" + (f": {command}" if command else "")


class Claim:
    """An output held by this process (from `claim`): `path`, `existed` (it was there before the claim)
    and `created` (the parent directories the claim made). `release(succeeded)` drops the lock and, after
    a failure, removes those parents when they are still empty."""

    def __init__(self, path, lock, existed, created):
        self.path, self.lock, self.existed, self.created = path, lock, existed, created

    def release(self, succeeded=True):
        if self.lock is not None:
            _HELD[self.lock][1] -= 1
            if not _HELD[self.lock][1]:
                fd = _HELD.pop(self.lock)[2]
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.lock)
                os.close(fd)  # after the removal: a waiting writer then finds no lock, or its own
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
        lock = _lock(path, label, flag)
    except BaseException:
        Claim(path, None, False, created).release(False)
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
    success its tree gets the umask's modes (`seal`) and is renamed to `path`, replacing a directory that was
    there whole. On failure nothing of it is left. Yields the temporary directory's path."""
    with claim(path, inputs, overwrite, "dir") as held, filling(held) as tmp:
        yield tmp


@contextlib.contextmanager
def filling(held):
    """The body of `writing_dir` for a directory already claimed (`held`, a `Claim` of kind "dir"): yields a
    hidden temporary directory, sealed and renamed to `held.path` on success, removed on failure."""
    parent, name = os.path.split(held.path)
    inside = not parent_writable(held.path)  # a directory in a read-only one: filled file by file
    tmp = make_temp_dir(held.path if inside else parent, prefix=f".tmp-{name}-")
    try:
        yield tmp
        seal(tmp)
        (_move_into if inside else _replace)(tmp, held.path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _move_into(source, target):
    """Empties `target` (but for `source` and its lock), then renames each entry of `source` into it."""
    for name in _contents(target):
        entry = os.path.join(target, name)
        if entry != source:
            shutil.rmtree(entry) if os.path.isdir(entry) and not os.path.islink(entry) else os.remove(entry)
    for name in os.listdir(source):
        os.replace(os.path.join(source, name), os.path.join(target, name))


def _replace(source, target):
    """Renames directory `source` to `target`; an existing `target` is moved aside first and removed after."""
    if not os.path.lexists(target):
        return os.rename(source, target)
    old = f"{source}-replaced"
    os.rename(target, old)
    try:
        os.rename(source, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


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
