"""The check in a fresh process: the parent sends the jobs as JSON on stdin, the checking process
(`python -m keras_bert_servability --json`) prints the summaries and writes every served request's inputs
and outputs to a temporary folder, whose answers the parent then checks (`answers.check_answers`).

The check runs apart because a process that imported keras_bert has tensorflow_text's ops registered
already: the C API would count them as TF core (keras_bert_servability/__init__.py).
"""

import json
import os
import subprocess
import sys
import tempfile

from keras_bert.export.servability.answers import check_answers
from keras_bert_servability import DEFAULT_SERVING_VERSION, ServabilityError, load_check_arrays


def check_servable_subprocess(jobs, atol=1e-4, serving_version=DEFAULT_SERVING_VERSION, timeout=600):
    """Runs `keras_bert_servability.run_checks(jobs)` in a fresh Python process (no keras, no TF Python), as
    TF Serving's C++ loader sees the exports, then checks the served answers of every request. Returns the
    list of summaries; a job that failed either check carries `error`."""
    with tempfile.TemporaryDirectory(prefix="servability-") as answers_dir:
        spec = json.dumps({"jobs": jobs, "atol": atol, "serving_version": serving_version,
                           "answers_dir": answers_dir}, default=os.fspath)
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
        proc = subprocess.run([sys.executable, "-m", "keras_bert_servability", "--json"], input=spec,
                              text=True, capture_output=True, timeout=timeout, env=env)
        if proc.returncode != 0:
            raise ServabilityError(f"check process exited with {proc.returncode}:\n{proc.stderr[-4000:]}")
        return [_answers_checked(summary) for summary in json.loads(proc.stdout.strip().splitlines()[-1])]


def _answers_checked(summary):
    """`summary` less its `served` requests, or {export_dir, error} where a served answer is inconsistent."""
    try:
        for request in summary.pop("served", ()):
            inputs, outputs = load_check_arrays(request["arrays"])
            check_answers(request["where"], inputs, outputs or {})
    except ServabilityError as e:
        return {"export_dir": summary["export_dir"], "error": str(e)}
    return summary
