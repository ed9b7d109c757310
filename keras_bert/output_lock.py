"""The lock of one output (`take_lock` / `release_lock`, used by `keras_bert.outputs.claim`): an exclusive
lock file beside the output (`<parent>/.<name>.keras_bert_lock`, linked into place whole: host, pid, boot id,
start time, the whole command), on which the holder keeps an exclusive flock that the kernel drops when the
process dies however it dies (in a container, on another host of an NFS mount). A second writer of the same
path (another thread of this process too) is refused at once, naming the first and the lock file; a lock whose
flock is free, or that is empty or unreadable, is taken over with one warning."""

import contextlib
import fcntl
import logging
import os
import shlex
import socket
import sys
import tempfile
import threading

from keras_bert.errors import UserInputError

LOCK_SUFFIX = ".keras_bert_lock"
logger = logging.getLogger("keras_bert")
# lock path -> [thread id, count, descriptor holding its flock]: the claims of one thread of this process
# that hold it (a library save inside a script's claim); another thread of this process is refused as
# another process would be.
_HELD = {}


class Busy(UserInputError):
    """Another live writer (process, or thread of this one) holds the output's lock; the message names it."""


def noun(flag):
    """How a message names the output: its script flag, or "path"."""
    return f"--{flag}" if flag else "path"


def parent_writable(path):
    """Whether the directory holding `path` takes new entries (not so for a volume mounted in a read-only
    root: its output directory is then locked and filled from inside)."""
    return os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)


def take_lock(path, label, flag):
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
                   f"wait for it to finish or choose another {noun(flag)}")
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
                       f"finish or choose another {noun(flag)} (if that run is gone, remove {lock})")
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


def release_lock(lock):
    """Drops one hold of `lock` by this thread (`take_lock`); the last removes the lock file."""
    _HELD[lock][1] -= 1
    if not _HELD[lock][1]:
        fd = _HELD.pop(lock)[2]
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)
        os.close(fd)  # after the removal: a waiting writer then finds no lock, or its own
