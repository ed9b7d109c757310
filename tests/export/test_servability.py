"""The servability check's process imports neither keras nor TF's Python package, and decodes the protos it
reads as the wheel's generated modules do."""

import json
import os
import subprocess
import sys

import numpy as np
import tensorflow as tf
from tensorflow.core.protobuf import meta_graph_pb2, saved_model_pb2

import keras_bert.export.servability as servability
from keras_bert_servability import protos

# The checking process's imports (`python -m keras_bert_servability`), by name, as it makes them.
_PROBE = """
import json, sys
import keras_bert_servability as servability
api = servability.TensorFlowCApi()
print(json.dumps({"core_ops": sorted(api.core_ops), "tf_text_ops": sorted(api.tf_text_ops),
                  "modules": sorted(m for m in sys.modules
                                    if m.split(".")[0] in ("keras", "keras_bert", "tf_keras", "tensorflow",
                                                           "tensorflow_text", "google"))}))
"""


def test_checking_process_imports_no_keras_and_no_tensorflow_python():
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300,
                          env=env, check=True)
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe["modules"] == []  # no stand-in `tensorflow` either: the protos are decoded by hand
    assert len(probe["core_ops"]) > 1000  # TF core's op registry was read through the C API
    # tf-text's ops count as tf-text, not core (a process that imported keras_bert has them registered
    # before the check starts, which made them core).
    assert "FastWordpieceTokenizeWithOffsets" in probe["tf_text_ops"]
    assert not set(probe["core_ops"]) & set(servability.TF_TEXT_OP_FIRST_SERVING)


def test_protos_decode_as_the_generated_modules_write():
    meta = meta_graph_pb2.MetaGraphDef()
    meta.meta_info_def.tags.extend(["serve", "gpu"])
    meta.graph_def.node.add(name="x", op="Placeholder")
    meta.graph_def.node.add(name="call", op="__inference_f_7")
    function = meta.graph_def.library.function.add()
    function.signature.name = "__inference_f_7"
    function.node_def.add(name="t", op="FastWordpieceTokenizeWithOffsets")
    signature = meta.signature_def["serving_default"]
    signature.inputs["text"].name = "serving_default_text:0"
    signature.outputs["logits"].name = "StatefulPartitionedCall:1"
    saved_model = saved_model_pb2.SavedModel()
    saved_model.meta_graphs.add().CopyFrom(meta)

    ((tags, decoded),) = protos.meta_graphs(saved_model.SerializeToString())
    assert tags == {"serve", "gpu"}
    assert protos.graph_ops(decoded) == {"Placeholder", "FastWordpieceTokenizeWithOffsets"}
    assert protos.signatures(decoded) == {"serving_default": {
        "inputs": {"text": "serving_default_text:0"}, "outputs": {"logits": "StatefulPartitionedCall:1"}}}
    for value in (np.array([[b"a\x00", b""], [b"\xff", b"bc"]], dtype=object),
                  np.array([[1, -2, 3]], np.int32), np.arange(6, dtype=np.float32).reshape(2, 3),
                  np.array([-5, 2**40], np.int64)):
        got = protos.tensor_to_numpy(tf.make_tensor_proto(value).SerializeToString())
        assert got.dtype == value.dtype and got.shape == value.shape and got.tolist() == value.tolist()
    int_val = tf.make_tensor_proto(np.array([7, -1], np.int32))
    int_val.tensor_content = b""
    int_val.int_val.extend([7, -1])  # the packed repeated field, as a hand-written request has it
    assert protos.tensor_to_numpy(int_val.SerializeToString()).tolist() == [7, -1]


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
