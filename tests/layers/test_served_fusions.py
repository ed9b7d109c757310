"""The transformer block as a server runs it: TF's loader optimizes the saved graph (grappler, and oneDNN's
remapper on x86 builds), which should leave each Dense as one fused op (MatMul + bias [+ GELU] [+ residual])
and attention with two transposes a layer. Checked on the ops a TF1 Session runs from the SavedModel (its
full trace), as the model server runs them. The bfloat16 export: every Dense a fused bf16 matmul on constant
weights (what makes oneDNN use its blocked bf16 kernel) held once in the SavedModel, no weight cast, answers
with cosine >= 0.9999 to float32."""

import collections
import math
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from keras_bert import execution
from keras_bert.export import export_saved_model
from keras_bert.export.batching import SERVER_FLAGS_FILE
from keras_bert.layers.transformer import ACTIVATIONS
from keras_bert.models.encoder import BertEncoder
from tests.export.test_batching import server_flags
from tests.export.test_export import preprocessor  # noqa: F401
from tests.export.test_export import tiny_config as text_config


def test_gelu_is_the_exact_gelu():
    x = np.linspace(-12.0, 12.0, 4001, dtype="float32")
    reference = np.array([v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype("float64")])
    assert np.abs(np.asarray(ACTIVATIONS["gelu"](x)) - reference).max() < 2e-6
    assert np.abs(np.asarray(tf.nn.gelu(x, approximate=False)) - reference).max() < 2e-6


Node = collections.namedtuple("Node", "name op inputs")


def _skip_without_onednn_rewrites(op_types):
    """Skips the test where none of the executed `op_types` is a oneDNN op (the graph ran unrewritten)."""
    if not any(op.startswith("_Mkl") for op in op_types):
        pytest.skip("this TensorFlow runs without oneDNN's graph rewrites (TF_ENABLE_ONEDNN_OPTS=0 or not "
                    "x86)")


def _served(version_dir, word_ids, signature="serving_default"):
    """(pooled_output, the nodes a TF1 Session ran) of one token-id call (`signature`) of `version_dir` on
    `word_ids` [batch, seq] (every position attended). The nodes are read off the run's full trace ("name =
    Op(inputs)" per executed node): the model runs in the graph function every endpoint calls
    (`Serving.served_call`), optimized when the call instantiates it, which the partition graphs leave out."""
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.load(session, ["serve"], version_dir)
        signature = meta.signature_def[signature]
        feed = {signature.inputs["input_word_ids"].name: word_ids,
                signature.inputs["input_mask"].name: np.ones_like(word_ids),
                signature.inputs["input_type_ids"].name: np.zeros_like(word_ids)}
        metadata = tf.compat.v1.RunMetadata()
        options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
        pooled = session.run(signature.outputs["pooled_output"].name, feed, options=options,
                             run_metadata=metadata)
    nodes = []
    for device in metadata.step_stats.dev_stats:
        for stats in device.node_stats:
            match = re.fullmatch(r"(\S+) = ([\w.]+)\((.*)\)", stats.timeline_label)
            if match:
                nodes.append(Node(match[1], match[2], [name for name in match[3].split(", ") if name]))
    return pooled, nodes


def _bf16_kernel_constants(version_dir):
    """Names of the rank-2 bfloat16 Const nodes in `version_dir`'s saved graph and functions."""
    saved = saved_model_pb2.SavedModel()
    with open(f"{version_dir}/saved_model.pb", "rb") as f:
        saved.ParseFromString(f.read())
    graph = saved.meta_graphs[0].graph_def
    nodes = [*graph.node, *(node for function in graph.library.function for node in function.node_def)]
    return [(node.name, tuple(dim.size for dim in node.attr["value"].tensor.tensor_shape.dim))
            for node in nodes
            if node.op == "Const" and node.attr["dtype"].type == tf.bfloat16.as_datatype_enum
            and len(node.attr["value"].tensor.tensor_shape.dim) == 2]


def _optimized_op_types(version_dir, seq_length):
    """Op type -> count in the graph a TF1 Session runs for one token-id call of `version_dir`."""
    counts = {}
    for node in _served(version_dir, np.ones((2, seq_length), "int32"))[1]:
        counts[node.op] = counts.get(node.op, 0) + 1
    return counts


def test_served_encoder_runs_fused_dense_ops(tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config)
    version_dir = export_saved_model(encoder, str(tmp_path), signature="token_ids", warmup=False)
    counts = _optimized_op_types(version_dir, seq_length=8)
    _skip_without_onednn_rewrites(counts)
    layers = tiny_config.num_hidden_layers
    fused = sum(n for op, n in counts.items() if op.endswith("FusedMatMul"))
    unfused = {op: n for op, n in counts.items() if op in ("MatMul", "_MklMatMul", "BiasAdd", "Erf", "Erfc")}
    assert fused >= 4 * layers + 1, counts  # qkv, attention output, intermediate (+GELU), output; the pooler
    assert not unfused, counts
    assert sum(n for op, n in counts.items() if op.endswith("Transpose")) <= 2 * layers, counts


def test_bfloat16_export_runs_fused_matmuls_on_constant_weights(tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config)
    rng = np.random.default_rng(0)  # biases away from 0 (grappler drops a bias of zeros, and its fusion)
    encoder.set_weights([w + rng.normal(0, 0.05, w.shape).astype("float32") for w in encoder.get_weights()])
    word_ids = rng.integers(4, tiny_config.vocab_size, (4, 8)).astype("int32")
    version_dir = export_saved_model(encoder, str(tmp_path), signature="token_ids", warmup=False,
                                     dtype="bfloat16")
    pooled, nodes = _served(version_dir, word_ids)
    _skip_without_onednn_rewrites(node.op for node in nodes)
    by_name = {node.name: node for node in nodes}

    def source(name):  # the op feeding input `name`, through Identity nodes
        node = by_name.get(name.lstrip("^").split(":")[0])
        while node is not None and node.op == "Identity":
            node = by_name.get(node.inputs[0].split(":")[0])
        return node

    matmuls = [node for node in nodes if node.op.endswith("FusedMatMul")]
    layers = tiny_config.num_hidden_layers
    assert len(matmuls) == 4 * layers + 1, [node.op for node in nodes]  # every Dense and the pooler, fused
    bf16_constants = {name for name, _ in _bf16_kernel_constants(version_dir)}
    # Weights: bf16 constants, not variable reads.
    assert all(node.inputs[1].split(":")[0] in bf16_constants for node in matmuls), matmuls
    weight_ops = ("Const", "ReadVariableOp", "VarHandleOp")
    weight_casts = [node.name for node in nodes
                    if node.op == "Cast" and getattr(source(node.inputs[0]), "op", None) in weight_ops]
    assert not weight_casts
    # GELU fused into the intermediate matmul (no Erf left); no unfused matmul or bias.
    assert not [node.op for node in nodes if node.op in ("MatMul", "_MklMatMul", "BiasAdd", "Erf")]
    # The answers: cosine to the float32 model's >= 0.9999 (measured here ~0.99999).
    want = encoder({"input_word_ids": word_ids, "input_mask": np.ones_like(word_ids),
                    "input_type_ids": np.zeros_like(word_ids)})["pooled_output"].numpy()
    cosine = (pooled * want).sum(-1) / np.linalg.norm(pooled, axis=-1) / np.linalg.norm(want, axis=-1)
    assert pooled.dtype == np.float32 and cosine.min() >= 0.9999, cosine


def test_bfloat16_text_export_holds_each_weight_once(preprocessor, tmp_path):  # noqa: F811
    # A raw-text export has three signatures and runs the encoder on up to eight length buckets; all of them
    # call one inference function, so each Dense kernel is one bf16 constant in saved_model.pb (it was one
    # per bucket and signature: a MiniLM-L6 export of 406 MB against 45 MB of bf16 weights).
    encoder = BertEncoder(text_config())
    version_dir = export_saved_model(encoder, str(tmp_path), preprocessor, warmup=False, dtype="bfloat16")
    constants = sorted(shape for _, shape in _bf16_kernel_constants(version_dir))
    kernels = sorted(tuple(layer.kernel.shape) for layer in encoder._flatten_layers()
                     if isinstance(layer, keras.layers.Dense))
    assert len(kernels) == 4 * encoder.config.num_hidden_layers + 1
    assert constants == kernels
    served = tf.saved_model.load(version_dir).signatures["serving_default"]
    texts = ["hello world", "the quick brown fox jumps over the lazy dog " * 3]
    together = served(text=tf.constant(texts))["pooled_output"].numpy()
    alone = np.concatenate([served(text=tf.constant([t]))["pooled_output"].numpy() for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-2)


@pytest.mark.skipif(not execution.has_int8_matmul_hardware(),
                    reason="int8_matmul needs an int8 dot-product flag")
def test_calibrated_int8_export_quantizes_on_tf_own_kernel(preprocessor, tmp_path):  # noqa: F811
    # oneDNN's QuantizeV2 (what a MIN_FIRST QuantizeV2 becomes) hands every call to the intra-op pool, ~60 us
    # a Dense at a few rows; the static-range int8 form quantizes in the QuantizeV2 form the rewrite leaves to
    # TF's own kernel, and every Dense stays one int8 matmul on a constant range.
    encoder = BertEncoder(text_config())
    version_dir = export_saved_model(encoder, str(tmp_path), preprocessor, warmup=False,
                                     quantize="int8_matmul", calibration_texts=["hello world", "a dog"] * 4)
    word_ids = np.random.default_rng(0).integers(4, encoder.config.vocab_size, (1, 8)).astype("int32")
    pooled, nodes = _served(version_dir, word_ids, "serve_token_ids")
    ops = collections.Counter(node.op for node in nodes)
    _skip_without_onednn_rewrites(ops)
    dense = 4 * encoder.config.num_hidden_layers + 1
    assert ops["QuantizeV2"] == dense and not ops["_MklQuantizeV2"], ops
    assert ops["_QuantizedMatMul"] == dense, ops
    want = encoder({"input_word_ids": word_ids, "input_mask": np.ones_like(word_ids),
                    "input_type_ids": np.zeros_like(word_ids)})["pooled_output"].numpy()
    cosine = (pooled * want).sum() / np.linalg.norm(pooled) / np.linalg.norm(want)
    assert cosine >= 0.99, cosine
    with open(os.path.join(version_dir, SERVER_FLAGS_FILE), encoding="utf-8") as f:
        assert server_flags(f.read())["--tensorflow_intra_op_parallelism"] == 1  # the export's form's threads
