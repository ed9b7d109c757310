"""The servability package loads alone: its checking process imports neither keras nor TF's Python package."""

import json
import os
import subprocess
import sys

import numpy as np

import keras_bert.export.servability as servability

_PROBE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import servability
api = servability.TensorFlowCApi(load_tf_text=False)
print(json.dumps({"core_ops": len(api.core_ops),
                  "tensorflow_file": getattr(sys.modules["tensorflow"], "__file__", None),
                  "modules": sorted(m for m in sys.modules
                                    if m.split(".")[0] in ("keras", "keras_bert", "tf_keras")
                                    or m.startswith(("tensorflow.python", "tensorflow_text")))}))
"""


def test_checking_process_imports_no_keras_and_no_tensorflow_python():
    package_parent = os.path.dirname(os.path.dirname(servability.__file__))
    proc = subprocess.run([sys.executable, "-c", _PROBE, package_parent], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}, check=True)
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe["modules"] == []
    # The proto stub, not the real package: the real one has an __init__.py file.
    assert probe["tensorflow_file"] is None
    assert probe["core_ops"] > 1000  # TF core's op registry was read through the C API


def test_check_arrays_round_trip_keeps_trailing_nuls(tmp_path):
    # An object array: numpy's fixed-width bytes ("S") would already have dropped the NULs.
    inputs = {"text": np.array([b"a\x00", b"", b"\x00\x00b\x00"], dtype=object), "ids": [[1, 2], [3, 4]]}
    path = tmp_path / "check.npz"
    servability.save_check_arrays(path, inputs, {"logits": [[0.5, -1.0]]})
    got_inputs, expected = servability.load_check_arrays(path)
    assert list(got_inputs["text"]) == [b"a\x00", b"", b"\x00\x00b\x00"]
    assert got_inputs["ids"].tolist() == [[1, 2], [3, 4]]
    assert expected["logits"].tolist() == [[0.5, -1.0]]
    servability.save_check_arrays(path, inputs, None)
    assert servability.load_check_arrays(path)[1] is None
