"""Quiet logs for the recipe and export scripts: progress bars, our own summaries and real warnings only.

`quiet(__name__)`, the first call of every script, hides two kinds of lines unless the user asks for them:
  - TensorFlow's C++ INFO/WARNING lines (`cudart_stub`, the oneDNN notice, XLA service lines). TensorFlow
    2.21 writes them through absl before `absl::InitializeLog()`, which TF never calls, so
    `TF_CPP_MIN_LOG_LEVEL` does not hide them (measured: `import tensorflow` prints them at levels 2 and 3):
    stderr is piped through a filter that drops exactly those lines (their time stamp is `0000 00:00:`);
    C++ ERROR lines and everything else pass, except two that every CPU-only run prints (no CUDA driver;
    an integer kernel without oneDNN);
  - absl/TensorFlow Python INFO lines (`functional_saver.py`, `builder_impl.py`): once absl has parsed the
    flags its verbosity is set to WARNING; the `keras_bert` logger keeps INFO.
`KERAS_BERT_VERBOSE=1`, or absl's own `--verbosity`/`-v` flag, shows everything.
"""

import atexit
import logging
import os
import re
import sys
import threading

from absl import app, flags
from absl import logging as absl_logging

# C++ INFO/WARNING lines written before absl::InitializeLog(), the notice that says so, the second line of
# cpu_feature_guard's INFO message, the node line under an end-of-data WARNING, and two ERROR-level lines
# that every CPU-only run prints and that change nothing (no CUDA driver; an int kernel without oneDNN).
_CPP_NOISE = re.compile(rb"^([IW]0000 00:00:|WARNING: All log messages before absl::InitializeLog\(\)|"
                        rb"To enable the following instructions: .* rebuild TensorFlow|\t \[\[\{\{node |"
                        rb"E0000 00:00:\S+ +\d+ (cuda_platform\.cc:\d+\] failed call to cuInit|"
                        rb"util\.cc:\d+\] oneDNN supports DT_INT))")


def verbose(argv=None):
    """True when the user asked for every log line: KERAS_BERT_VERBOSE=1 or a --verbosity / -v flag."""
    argv = sys.argv[1:] if argv is None else argv
    if os.environ.get("KERAS_BERT_VERBOSE", "0") not in ("", "0"):
        return True
    return any(arg in ("-v", "--verbosity") or arg.startswith(("-v=", "--verbosity=")) for arg in argv)


def _quiet_python_logs():
    if flags.FLAGS["verbosity"].present:
        return
    absl_logging.set_verbosity(absl_logging.WARNING)
    logging.getLogger("keras_bert").setLevel(logging.INFO)


def _filter_stderr():
    """Points file descriptor 2 at a pipe whose lines a thread copies to the real stderr, less `_CPP_NOISE`."""
    sys.stderr.flush()
    real_stderr = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)

    def forward():
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                while line and not _CPP_NOISE.match(line):
                    line = line[os.write(real_stderr, line):]

    thread = threading.Thread(target=forward, name="stderr-filter", daemon=True)
    thread.start()

    def restore():
        # At exit (after a traceback is printed): fd 2 back to the real stderr closes the pipe's last writer,
        # so the thread copies what is left and ends.
        sys.stderr.flush()
        os.dup2(real_stderr, 2)
        thread.join(timeout=10)

    atexit.register(restore)


def quiet(module_name):
    """Sets the quiet defaults when `module_name` is "__main__" (a script run, not an import) and the user
    did not ask for `verbose()` logs. Call it before importing TensorFlow, keras or keras_bert."""
    if module_name != "__main__" or verbose():
        return
    _filter_stderr()
    # Run once absl has parsed the flags: it raises its verbosity to INFO then, unless --verbosity was given.
    app.call_after_init(_quiet_python_logs)
