"""Hidden temporary directories for atomic writes: marked with their writer, published with normal modes.

Exports and checkpoint saves write into `<parent>/.tmp-*` and rename (or move) the result into place, so a
reader sees all or nothing. Two things follow from that and are handled here:
  - `mkdtemp` makes the directory 0700, so a renamed SavedModel version is unreadable to a TF Serving
    process running as another user: `seal` gives the tree the modes a plain `mkdir`/`open` would have
    (0777 / 0666 less the umask);
  - a killed writer leaves its `.tmp-*` directory behind: each is marked with `host pid`, and the next
    `make_temp_dir` in the same parent removes those whose process is gone (another host's: after a day).
    Directories without our marker are never touched.
"""

import errno
import os
import shutil
import socket
import tempfile
import time

MARKER = ".keras_bert_writer"
_OTHER_HOST_STALE_S = 24 * 3600


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _is_stale(directory):
    try:
        with open(os.path.join(directory, MARKER), encoding="utf-8") as f:
            host, pid = f.read().split()
        age = time.time() - os.path.getmtime(os.path.join(directory, MARKER))
    except (OSError, ValueError):
        return False  # not ours (or not readable): leave it
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
        if name.startswith(".tmp-") and os.path.isdir(path) and _is_stale(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def make_temp_dir(parent, prefix=".tmp-"):
    """A new hidden directory in `parent` (created if missing) marked as ours; stale ones are removed first."""
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


def rename_to_free(source, target, next_target=None):
    """os.rename(source, target), returning where `source` went. When another writer published a directory
    at `target` first: renames to `next_target()` instead, or without `next_target` raises FileExistsError."""
    while True:
        try:
            os.rename(source, target)
            return target
        except OSError as e:
            if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            if not next_target:
                raise FileExistsError(f"{target} was written by another writer meanwhile") from None
            target = next_target()
