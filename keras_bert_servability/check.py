"""Loads an export as TF Serving does, runs its warmup requests and given inputs, and compares outputs.

The served answers' consistency (each task folder's `served.py`) is checked by the parent process
(`keras_bert.export.servability`), which imports keras_bert: `run_checks` hands it every request's inputs
and outputs as .npz files.
"""

import json
import os

import numpy as np

from .c_api import TensorFlowCApi
from .codec import json_outputs, load_check_arrays, save_check_arrays
from .errors import ServabilityError
from .ops import DEFAULT_SERVING_VERSION, op_report, saved_model_ops
from .warmup import warmup_requests


def check(export_dir, runs=(), atol=1e-4, serving_version=DEFAULT_SERVING_VERSION, api=None, refused=()):
    """Loads `export_dir` as TF Serving does, runs its warmup requests, then each of `runs`.

    Args:
        export_dir: a version directory (`.../<version>` holding saved_model.pb).
        runs: list of (signature, inputs, expected): inputs {key: numpy array} (bytes/object arrays for
            strings); expected {output key: numpy array} or None; every output present in `expected`
            must match within `atol` (max abs difference; strings exactly) and in shape.
        serving_version: the TF Serving release whose tf-text ops the graph must stay within.
        api: a `TensorFlowCApi` to reuse across exports.
        refused: list of (signature, inputs) the server should refuse (bad requests), run after `runs`.

    Returns a dict: `ops` (op_report), `signatures`, `warmup_requests` (how many ran), `runs`: per run
    {signature, max_abs_diff, outputs}, `refused`: per refused request the error TF gave, or None where it
    was served, `served`: (where, inputs, outputs) of every warmup request and run, for the answer check.
    Raises `ServabilityError` on a load/run failure, an op Serving lacks, or a mismatch.
    """
    api = api or TensorFlowCApi()
    report = {"export_dir": os.fspath(export_dir), "runs": [], "served": []}
    report["ops"] = op_report(saved_model_ops(export_dir), api.core_ops, api.tf_text_ops, serving_version)
    if report["ops"]["missing"]:
        raise ServabilityError(f"{export_dir}: TF Serving {serving_version} lacks ops "
                               f"{json.dumps(report['ops']['missing'], indent=1)}")
    model = api.load_saved_model(export_dir)
    try:
        report["signatures"] = sorted(k for k in model.signatures if k != "__saved_model_init_op")
        if "serving_default" not in model.signatures:
            raise ServabilityError(f"{export_dir} has no serving_default signature, which TF Serving "
                                   f"requires; it has {report['signatures']}")
        warmups = warmup_requests(export_dir)
        report["warmup_requests"] = len(warmups)
        for sig, request in warmups:
            report["served"].append((f"{export_dir} warmup request to {sig!r}", request,
                                     model.run(sig, request)))
        for signature, inputs, expected in runs:
            outputs = model.run(signature, inputs)
            report["served"].append((f"{export_dir} signature {signature!r}", inputs, outputs))
            diffs = {key: _compare(export_dir, signature, key, outputs, want, atol)
                     for key, want in (expected or {}).items()}
            report["runs"].append({"signature": signature, "max_abs_diff": diffs, "outputs": outputs})
        report["refused"] = [_refusal(model, signature, inputs) for signature, inputs in refused]
    finally:
        model.close()
    return report


def _refusal(model, signature, inputs):
    """The error of running a request that should fail, or None where it was served."""
    try:
        model.run(signature, inputs)
    except ServabilityError as e:
        return str(e)
    return None


def _compare(export_dir, signature, key, outputs, want, atol):
    where = f"{export_dir} signature {signature!r}"
    if key not in outputs:
        raise ServabilityError(f"{where} has no output {key!r}; it has {sorted(outputs)}")
    got = outputs[key]
    if got.shape != np.shape(want):
        raise ServabilityError(f"{where}: output {key!r} has shape {got.shape}, expected {np.shape(want)}")
    if got.dtype == object:  # tf.string outputs (a classifier's `label`) must match exactly
        wrong = np.flatnonzero(got.ravel() != np.asarray(want, dtype=object).ravel())
        if wrong.size:
            raise ServabilityError(f"{where}: output {key!r} is {got.ravel()[wrong[0]]!r} at flat index "
                                   f"{wrong[0]}, expected {np.asarray(want).ravel()[wrong[0]]!r}")
        return 0.0
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
    if not diff <= atol:
        raise ServabilityError(f"{where}: output {key!r} differs from the expected values by {diff:.3g} "
                               f"> atol {atol}")
    return diff


def run_checks(jobs, atol=1e-4, serving_version=DEFAULT_SERVING_VERSION, answers_dir=None):
    """Checks several exports in this process. `jobs`: list of dicts with `export_dir` and optional `runs`
    and `refused` (`check`'s), lists of {"signature": name, "arrays": .npz path from `save_check_arrays`}.
    Returns a JSON-able list of summaries (outputs as lists); a failing job carries `error` instead of
    raising. With `answers_dir`, each summary lists under `served` every request as {"where", "arrays": an
    .npz there of its inputs and outputs}."""
    api = TensorFlowCApi()
    summaries = []
    for job in jobs:
        runs = [(run.get("signature", "serving_default"), *load_check_arrays(run["arrays"]))
                for run in job.get("runs", ())]
        refused = [(run.get("signature", "serving_default"), load_check_arrays(run["arrays"])[0])
                   for run in job.get("refused", ())]
        try:
            report = check(job["export_dir"], runs, atol=atol, serving_version=serving_version, api=api,
                           refused=refused)
        except (ServabilityError, OSError) as e:
            summaries.append({"export_dir": os.fspath(job["export_dir"]), "error": str(e)})
            continue
        for run in report["runs"]:
            run["outputs"] = json_outputs(run["outputs"])
        served = report.pop("served")
        if answers_dir:
            report["served"] = []
            for where, inputs, outputs in served:
                path = os.path.join(answers_dir, f"{len(summaries)}-{len(report['served'])}.npz")
                save_check_arrays(path, inputs, outputs)
                report["served"].append({"where": where, "arrays": path})
        summaries.append(report)
    return summaries
