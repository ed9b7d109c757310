"""The first import of every script, before TensorFlow loads: the repository root on sys.path and quiet logs.

    if __package__:  # python -m recipes.x / python -m export.x
        from recipes import preamble  # noqa: F401
    else:  # python recipes/x.py / python export/x.py (export/preamble.py runs this file)
        import preamble  # noqa: F401

Quiet logs (`logs.quiet`) apply when the program running is one of the scripts, not when a test or another
program imports one.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPTS = tuple(os.path.join(_ROOT, name) for name in ("recipes", "export"))
if sys.path[0] in _SCRIPTS:  # `python recipes/x.py`: import from the repository root, as `-m recipes.x` does
    sys.path[0] = _ROOT

from recipes import logs  # noqa: E402

_main_file = getattr(sys.modules.get("__main__"), "__file__", None) or ""
if os.path.dirname(os.path.abspath(_main_file)) in _SCRIPTS:
    logs.quiet("__main__")
