"""The check in a fresh process: the parent sends the jobs as JSON on stdin, the worker
(`python -m servability --json`, see `__main__.py`) prints the summaries.

The worker imports this package as the top-level `servability` (its parent directory put first on the
path), not as `keras_bert.export.servability`: `keras_bert/__init__.py` would import keras and TensorFlow's
Python package, which the proto stub of `protos.py` must not meet.
"""

import json
import os
import subprocess
import sys

from .check import run_checks
from .errors import ServabilityError
from .ops import DEFAULT_SERVING_VERSION

# The directory that holds this package: on the worker's path, it makes `servability` importable alone.
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check_servable_subprocess(jobs, atol=1e-4, serving_version=DEFAULT_SERVING_VERSION, timeout=600):
    """Runs `run_checks(jobs)` in a fresh Python process (no keras, no TF Python), as TF Serving's C++
    loader sees the exports. Returns the list of summaries."""
    spec = json.dumps({"jobs": jobs, "atol": atol, "serving_version": serving_version}, default=os.fspath)
    path = os.pathsep.join(p for p in (PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path,
           "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
    proc = subprocess.run([sys.executable, "-m", "servability", "--json"], input=spec, text=True,
                          capture_output=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise ServabilityError(f"check process exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    """Worker side: reads {"jobs", "atol", "serving_version"} from stdin, prints `run_checks`' JSON."""
    spec = json.loads(sys.stdin.read())
    print(json.dumps(run_checks(spec["jobs"], spec["atol"], spec["serving_version"])))
