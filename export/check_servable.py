"""Loads a SavedModel the way TF Serving does and runs it: exit status 0 only if it would serve.

    keras-bert check_servable --export_dir=/models/bert_classifier/1 \
        [--text="a sentence" --text="another"] [--text_b=...] [--signature=serving_default] \
        [--input=question="who?" --input=context="a paragraph"] \
        [--expected=expected.npz] [--serving_version=2.20]

Runs in a fresh process without keras or keras_bert (nor TensorFlow's Python package: the package
keras_bert_servability, through `keras_bert.export.servability.check_servable_subprocess`): the installed
wheel's C API (`libtensorflow_cc.so.2`) with the tensorflow-text kernels registered by TF_LoadLibrary, the
session-based TF_LoadSessionFromSavedModel loader, the warmup requests, then serving_default on --text (or
on the inputs of --expected, an .npz from `servability.save_check_arrays`, compared to its outputs); then
each served answer is checked here (entity spans, probabilities: `servability.check_answers`). The
inputs are named as the signature names them: --text / --text_b, or --input=NAME=TEXT for any input. Prints
the signatures, every non-core op with the first TF Serving release that has it, and the outputs as JSON.
"""

import json
import os
import sys
import tempfile

import numpy as np
from absl import flags

from keras_bert.export import servability
from recipes import flags as shared_flags
from recipes import logs

FLAGS = flags.FLAGS
shared_flags.define_one("export_dir", help="Version directory (holds saved_model.pb); repeat for several.")
shared_flags.define("signature")
shared_flags.define_served_inputs()
flags.DEFINE_string("expected", None, ".npz of inputs and expected outputs (servability.save_check_arrays).")
shared_flags.check("expected", shared_flags.existing_file)
flags.DEFINE_float("atol", 1e-4, "Largest allowed |output - expected|.")
shared_flags.check("atol", shared_flags.at_least(0))
flags.DEFINE_string("serving_version", "2.20", "TF Serving release the graph's tf-text ops must exist in.")
flags.DEFINE_enum("rest_response", None, ["instances", "inputs"],
                  "Print only the outputs of the --text run as the body TF Serving's REST :predict returns "
                  "for a request in this format (row: predictions, columnar: outputs).")
shared_flags.required("export_dir")


def rest_response(outputs, request_format):
    """The JSON body TF Serving's REST API returns for these outputs: row format ("instances" request) ->
    {"predictions": one entry per example}, columnar ("inputs") -> {"outputs": ...}; a single output is
    given bare, several as a dict by name."""
    if request_format == "inputs":
        return {"outputs": next(iter(outputs.values())) if len(outputs) == 1 else outputs}
    rows = [dict(zip(outputs, values, strict=True)) for values in zip(*outputs.values(), strict=True)]
    if len(outputs) == 1:
        rows = [next(iter(row.values())) for row in rows]
    return {"predictions": rows}


def main(argv):
    del argv
    for export_dir in FLAGS.export_dir:  # a missing SavedModel is the user's error, said in one line
        os.stat(os.path.join(export_dir, "saved_model.pb"))
    with tempfile.TemporaryDirectory(prefix="check_servable-") as tmp:
        runs = []
        if FLAGS.expected:
            runs.append({"signature": FLAGS.signature, "arrays": FLAGS.expected})
        elif shared_flags.served_inputs():
            inputs = {name: np.array([t.encode() for t in values], dtype=object)
                      for name, values in shared_flags.served_inputs().items()}
            servability.save_check_arrays(os.path.join(tmp, "inputs.npz"), inputs, None)
            runs.append({"signature": FLAGS.signature, "arrays": os.path.join(tmp, "inputs.npz")})
        reports = servability.check_servable_subprocess(
            [{"export_dir": export_dir, "runs": runs} for export_dir in FLAGS.export_dir], FLAGS.atol,
            FLAGS.serving_version)
    failed = False
    for export_dir, report in zip(FLAGS.export_dir, reports, strict=True):
        if "error" in report:
            print(f"NOT SERVABLE: {report['error']}", file=sys.stderr)
            failed = True
            continue
        if FLAGS.rest_response and report["runs"]:
            print(json.dumps(rest_response(report["runs"][0]["outputs"], FLAGS.rest_response)))
        else:
            print(json.dumps(report, indent=1))
        onednn = sorted(report["ops"]["onednn"])
        print(f"OK: {export_dir} loads and runs in the TF Serving C++ loader; needs TF Serving >= "
              f"{report['ops']['min_serving_version']}"
              + (f", built for x86-64 with oneDNN (ops {', '.join(onednn)})" if onednn else ""),
              file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    logs.run(main)
