"""`python export/x.py` imports this as `preamble` (the script's folder is on sys.path): it runs the one
preamble, recipes/preamble.py."""

import os
import runpy

runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes", "preamble.py"))
