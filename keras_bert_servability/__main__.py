"""`python -m keras_bert_servability --json`: the checking process of
`keras_bert.export.servability.check_servable_subprocess`. Reads {"jobs", "atol", "serving_version",
"answers_dir"} as JSON on stdin and prints `run_checks`' summaries as one JSON line."""

import json
import sys

from .check import run_checks


def main():
    spec = json.loads(sys.stdin.read())
    summaries = run_checks(spec["jobs"], spec["atol"], spec["serving_version"], spec.get("answers_dir"))
    print(json.dumps(summaries))


if sys.argv[1:] == ["--json"]:
    main()
