"""`python export/x.py` imports this as `preamble` (the script's folder is on sys.path): it runs the one
preamble, recipes/preamble.py."""

import os
import runpy

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
runpy.run_path(os.path.join(_ROOT, "recipes", "preamble.py"))
