"""TensorFlow's native (C++) log lines kept off stderr, unless KERAS_BERT_VERBOSE=1 asks for them.

TensorFlow 2.21 writes its C++ INFO/WARNING lines through absl before `absl::InitializeLog()`, which TF
never calls, so `TF_CPP_MIN_LOG_LEVEL` does not hide them (measured: `import tensorflow` prints them at
levels 2 and 3). They are born in a few places: the import (the oneDNN and `cudart_stub` notices,
`cpu_feature_guard`), the first device listing without a CUDA driver (`failed call to cuInit`), the first
run of a traced function (grappler's `PredictCost()` warnings; oneDNN's int64 notice). Two ways to drop
them, both copying every other line to the real stderr (C++ ERROR lines, Python warnings, tracebacks):

    with native_logs.quiet():         # library use: fd 2 through a filter for the block only
        import tensorflow as tf
    native_logs.filter_process_stderr()   # the scripts (recipes/logs.py): for the whole process

keras_bert's __init__ imports TensorFlow inside `quiet` (and calls `list_devices_without_cuda` there), so
`import keras_bert` prints no start-up line; recipes/logs.py turns on `filter_process_stderr` where a
script's run starts.
"""

import atexit
import contextlib
import os
import re
import sys
import threading

try:
    import fcntl
except ImportError:  # not POSIX: pipes keep their default size
    fcntl = None

# C++ INFO/WARNING lines written before absl::InitializeLog(), the notice that says so, the second line of
# cpu_feature_guard's INFO message, the node line under an end-of-data WARNING, and two ERROR-level lines
# that every CPU-only run prints and that change nothing (no CUDA driver; an int kernel without oneDNN).
# LiteRT's: the converter's list of custom ops under its WARNING line, XNNPACK's INFO line.
NOISE = re.compile(rb"^([IW]0000 00:00:|WARNING: All log messages before absl::InitializeLog\(\)|"
                   rb"To enable the following instructions: .* rebuild TensorFlow|\t \[\[\{\{node |"
                   rb"Custom ops: |Details:$|\ttf\.\w+\(.*\) -> |"
                   rb"See instructions: https://www\.tensorflow\.org/lite/guide/ops_custom$|"
                   rb"INFO: Created TensorFlow Lite XNNPACK delegate for CPU\.$|"
                   rb"E0000 00:00:\S+ +\d+ (cuda_platform\.cc:\d+\] failed call to cuInit|"
                   rb"util\.cc:\d+\] oneDNN supports DT_INT))")
# How every NOISE line starts: a line begun with none of these is copied at once, before its end arrives.
NOISE_STARTS = (b"I0000 00:00:", b"W0000 00:00:", b"E0000 00:00:", b"WARNING: All log messages before absl",
                b"To enable the following instructions: ", b"\t [[{{node ", b"Custom ops: ", b"Details:",
                b"\ttf.", b"See instructions: ", b"INFO: Created TensorFlow Lite XNNPACK")
_PIPE_BYTES = 1 << 20  # a C++ burst while the reader waits for the GIL fits (Linux; else the default 64 KiB)


def verbose():
    """True when the environment asks for every log line: KERAS_BERT_VERBOSE set, and not to "0"."""
    return os.environ.get("KERAS_BERT_VERBOSE", "0") not in ("", "0")


def _may_be_noise(start):
    """Whether a line that begins with the bytes `start` (its end not read yet) can still be NOISE."""
    return any(start[:len(prefix)] == prefix[:len(start)] for prefix in NOISE_STARTS)


def _flush_stderr():
    """What Python buffered for stderr, written to the fd 2 in force (nothing where sys.stderr is None or
    closed)."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stderr.flush()


def _write_all(fd, data):
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # the real stderr is gone: the pipe is still drained, so no writer blocks
        pass


def _copy_less_noise(read_end, real_stderr):
    """Copies the pipe `read_end` to `real_stderr` until every writer closed it, less NOISE lines; a
    partial line that cannot be noise (a progress line, a prompt) is copied as it comes. Closes both."""
    held, in_line = b"", False  # held: the start of a line that may be noise; in_line: copied mid-line
    try:
        while chunk := os.read(read_end, 65536):
            *lines, rest = (held + chunk).split(b"\n")
            for line in lines:
                if in_line or not NOISE.match(line):
                    _write_all(real_stderr, line + b"\n")
                in_line = False
            held = rest
            if rest and (in_line or not _may_be_noise(rest)):
                _write_all(real_stderr, rest)
                held, in_line = b"", True
        if held and (in_line or not NOISE.match(held)):
            _write_all(real_stderr, held)
    finally:
        os.close(read_end)
        os.close(real_stderr)


class _Filter:
    """File descriptor 2 pointed at a pipe whose lines a thread copies to the real stderr, less NOISE, until
    `close`."""

    def __init__(self):
        _flush_stderr()
        self.real_stderr = os.dup(2)
        read_end, write_end = os.pipe()
        if hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux
            with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size: the default size
                fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        self.thread = threading.Thread(target=_copy_less_noise, args=(read_end, os.dup(self.real_stderr)),
                                       name="stderr-filter", daemon=True)
        self.thread.start()
        os.dup2(write_end, 2)
        os.close(write_end)

    def close(self, timeout):
        """fd 2 back to the real stderr: the pipe's last writer closes, so the thread copies what is left
        and ends (waited for up to `timeout` s: a child process may hold the pipe open longer)."""
        _flush_stderr()
        os.dup2(self.real_stderr, 2)
        os.close(self.real_stderr)
        self.thread.join(timeout)


_LOCK = threading.Lock()
_STATE = {"process": None, "scope": None, "depth": 0}


def filter_process_stderr():
    """Drops NOISE from stderr for the rest of the process (the scripts' quiet logs, recipes/logs.py); the
    real stderr is put back at exit, after what is left in the pipe is copied."""
    with _LOCK:
        if _STATE["process"] is None:
            _STATE["process"] = _Filter()
            atexit.register(_STATE["process"].close, 10)


@contextlib.contextmanager
def quiet(active=True):
    """A block during which NOISE lines written to file descriptor 2 (by any thread) are dropped and every
    other line is copied to the real stderr, in order; fd 2 is restored on leaving the block, an exception
    too. Nothing is filtered when `active` is False, with `verbose()`, or under `filter_process_stderr`.
    Blocks may nest or overlap across threads: the filter stays until the last one leaves."""
    entered = active and _enter()
    try:
        yield
    finally:
        if entered:
            _leave()


def _enter():
    """Starts (or joins) the scoped filter; False where none applies or fd 2 cannot be duplicated."""
    with _LOCK:
        if _STATE["depth"] == 0:
            if verbose() or _STATE["process"] is not None:
                return False
            try:
                _STATE["scope"] = _Filter()
            except OSError:  # no usable fd 2 (a closed stderr): nothing to filter
                return False
        _STATE["depth"] += 1
        return True


def _leave():
    with _LOCK:
        _STATE["depth"] -= 1
        if _STATE["depth"] == 0:
            scope, _STATE["scope"] = _STATE["scope"], None
            scope.close(timeout=10)


def list_devices_without_cuda():
    """Lists TensorFlow's physical devices now (inside `quiet`, at import) where no GPU can be used (no CUDA
    driver loads, or CUDA_VISIBLE_DEVICES hides every GPU), so that the `failed call to cuInit` line is
    printed there and not at the first model build. Elsewhere nothing is done: CUDA reads
    CUDA_VISIBLE_DEVICES when it starts, which a program may still set after `import keras_bert`."""
    import ctypes

    if os.environ.get("CUDA_VISIBLE_DEVICES") not in ("", "-1"):
        try:
            ctypes.CDLL("libcuda.so.1")
            return
        except OSError:
            pass
    import tensorflow as tf

    tf.config.list_physical_devices()
