"""Quiet logs for the recipe and export scripts: progress bars, our own summaries and real warnings only.

`quiet()`, which `run` calls where a script's run starts (its `__main__` line, or `keras-bert COMMAND`), hides
two kinds of lines unless the user asks for them:
  - TensorFlow's C++ INFO/WARNING lines (grappler's, XLA service lines), which `TF_CPP_MIN_LOG_LEVEL` does
    not hide in TensorFlow 2.21: stderr is piped, for the rest of the process, through the filter
    keras_bert/native_logs.py defines (the library uses it around its import, where the start-up lines are
    born, and a first call only), which drops exactly those lines; C++ ERROR lines and everything else pass,
    except two that every CPU-only run prints (no CUDA driver; an integer kernel without oneDNN);
  - absl/TensorFlow Python INFO lines (`functional_saver.py`, `builder_impl.py`): once absl has parsed the
    flags its verbosity is set to WARNING; the `keras_bert` logger keeps INFO.
keras_bert's own log lines print as the summary alone (INFO) or `WARNING message`, not in absl's format.
`KERAS_BERT_VERBOSE=1`, or absl's own `--verbosity`/`-v` flag, shows everything.

`run(main)`, every script's `__main__` line, prints an error the user fixes (their data, files, flags or
disk: `keras_bert.errors.UserInputError`, OSError, a ValueError raised by our own code) as one line,
`error: <message> (given as --flag=value)`, and exits 1; a bug keeps its traceback, as does any error
when `verbose()`.
"""

import functools
import logging
import os
import signal
import sys
import threading
import traceback

from absl import app, flags
from absl import logging as absl_logging

import keras_bert
from keras_bert import native_logs
from keras_bert.errors import UserInputError
from keras_bert_servability import ServabilityError


def verbose(argv=None):
    """True when the user asked for every log line: KERAS_BERT_VERBOSE=1 or a --verbosity / -v flag."""
    argv = sys.argv[1:] if argv is None else argv
    if native_logs.verbose():
        return True
    return any(arg in ("-v", "--verbosity") or arg.startswith(("-v=", "--verbosity=")) for arg in argv)


def _quiet_python_logs():
    if flags.FLAGS["verbosity"].present:
        return
    absl_logging.set_verbosity(absl_logging.WARNING)
    logging.getLogger("keras_bert").setLevel(logging.INFO)


class ProjectFormat(logging.Formatter):
    """The keras_bert logger's lines in every script: a summary (INFO) as its message alone, anything else
    as `LEVEL message` (`WARNING ...`), never absl's `I1202 06:00:00.1 123 file.py:1]` prefix."""

    def format(self, record):
        message = super().format(record)
        return message if record.levelno == logging.INFO else f"{record.levelname} {message}"


def _project_format():
    logger = logging.getLogger("keras_bert")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ProjectFormat())
    logger.addHandler(handler)
    logger.propagate = False  # not also through absl's handler on the root logger
    logger.setLevel(logging.INFO)


_QUIET = []  # once quiet() has run: the stderr filter is set up once per process


def quiet():
    """Sets the scripts' quiet defaults for this process (once), unless the user asked for `verbose()` logs:
    where a run starts (`run`), not when a script is imported (a test, another program)."""
    if _QUIET:
        return
    _QUIET.append(True)
    _project_format()
    if verbose():
        return
    native_logs.filter_process_stderr()
    # Run once absl has parsed the flags: it raises its verbosity to INFO then, unless --verbosity was given.
    app.call_after_init(_quiet_python_logs)


# Called with True / False after a script's main returned / raised (e.g. to tidy an output directory).
AFTER_MAIN = []
_SCRIPT_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), name) + os.sep
                     for name in ("recipes", "export"))


def run(main):
    """The scripts' entry point: `app.run(main)` with the quiet logs and one-line errors, those of the flags'
    checks when absl parses the command line (`recipes.flags.parse`) and `call_main`'s."""
    from recipes import flags as shared_flags

    quiet()
    app.run(functools.partial(call_main, main), flags_parser=shared_flags.parse)


def recipe_name():
    """The running script's name ("run_classifier" for `python -m recipes.run_classifier` or its path)."""
    return os.path.splitext(os.path.basename(sys.argv[0]))[0]


def call_main(main, argv):
    """main(argv); an error the user fixes is printed as `error_line` to stderr and gives exit status 1.
    SIGTERM raises SystemExit(143) in the main thread, so the `AFTER_MAIN` hooks run for a stopped run too."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _stop) if in_main_thread else None
    try:
        result = main(argv)
    except BaseException as e:
        for hook in AFTER_MAIN:
            hook(False)
        if not isinstance(e, Exception):
            raise
        line = error_line(e)
        if line is None or verbose():
            raise
        print(line, file=sys.stderr, flush=True)
        return 1
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    for hook in AFTER_MAIN:
        hook(True)
    return result


def _stop(signum, frame):
    del frame
    raise SystemExit(128 + signum)


def error_line(error):
    """`error: <message> (given as --flag=value)` for an error the user fixes, else None (a bug). The flags
    are the notes `common.flag_errors` added, else the flags given whose values the message names."""
    if not _is_user_error(error):
        return None
    message = " ".join(str(error).split("\n")).strip() or type(error).__name__
    notes = [note.removeprefix("given as ") for note in getattr(error, "__notes__", [])]
    if not notes and "--" not in message:
        notes = [flag.serialize() for flag in _given_flags() if _names_value(message, flag.value)]
    return f"error: {message}" + (f" (given as {', '.join(notes)})" if notes else "")


def _is_user_error(error):
    if isinstance(error, (OSError, app.UsageError, UserInputError, ServabilityError)):
        return True
    if (type(error).__name__ in ("NotFoundError", "PermissionDeniedError")
            and "tensorflow" in type(error).__module__):
        return True  # tf.io.gfile's errors about a user's file
    if isinstance(error, ValueError):  # raised by our checks, not deep inside Keras or TensorFlow
        frames = traceback.extract_tb(error.__traceback__)
        ours = _SCRIPT_DIRS + (os.path.dirname(os.path.abspath(keras_bert.__file__)) + os.sep,)
        return bool(frames) and os.path.abspath(frames[-1].filename).startswith(ours)
    return False


def _given_flags():
    seen = []
    for name in flags.FLAGS:
        flag = flags.FLAGS[name]
        if flag.present and flag not in seen and flag.name != "verbosity":
            seen.append(flag)
    return seen


def _names_value(message, value):
    values = value if isinstance(value, list) else [value]
    return any(isinstance(v, str) and len(v) >= 3 and v in message for v in values)
