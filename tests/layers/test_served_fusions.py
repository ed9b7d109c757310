"""The transformer block as a server runs it: TF's loader optimizes the saved graph (grappler, and oneDNN's
remapper on x86 builds), which should leave each Dense as one fused op (MatMul + bias [+ GELU] [+ residual])
and attention with two transposes a layer. Checked on the graph a TF1 Session builds from the SavedModel, as
the model server does."""

import math

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.export import export_saved_model
from keras_bert.layers.transformer import ACTIVATIONS
from keras_bert.models.encoder import BertEncoder


def test_gelu_is_the_exact_gelu():
    x = np.linspace(-12.0, 12.0, 4001, dtype="float32")
    reference = np.array([v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype("float64")])
    assert np.abs(np.asarray(ACTIVATIONS["gelu"](x)) - reference).max() < 2e-6
    assert np.abs(np.asarray(tf.nn.gelu(x, approximate=False)) - reference).max() < 2e-6


def _optimized_op_types(version_dir, seq_length):
    """Op type -> count in the graph a TF1 Session runs for one token-id call of `version_dir`."""
    counts = {}
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta = tf.compat.v1.saved_model.load(session, ["serve"], version_dir)
        signature = meta.signature_def["serving_default"]
        feed = {signature.inputs[name].name: np.ones((2, seq_length), "int32")
                for name in ("input_word_ids", "input_mask", "input_type_ids")}
        metadata = tf.compat.v1.RunMetadata()
        options = tf.compat.v1.RunOptions(output_partition_graphs=True)
        session.run(signature.outputs["pooled_output"].name, feed, options=options, run_metadata=metadata)
        for graph in metadata.partition_graphs:
            for function in [graph, *graph.library.function]:
                for node in getattr(function, "node", None) or getattr(function, "node_def", []):
                    counts[node.op] = counts.get(node.op, 0) + 1
    return counts


def test_served_encoder_runs_fused_dense_ops(tiny_config, tmp_path):
    encoder = BertEncoder(tiny_config)
    version_dir = export_saved_model(encoder, str(tmp_path), signature="token_ids", warmup=False)
    counts = _optimized_op_types(version_dir, seq_length=8)
    if not any(op.startswith("_Mkl") for op in counts):
        pytest.skip("this TensorFlow runs without oneDNN's graph rewrites (TF_ENABLE_ONEDNN_OPTS=0 or not "
                    "x86)")
    layers = tiny_config.num_hidden_layers
    fused = sum(n for op, n in counts.items() if op.endswith("FusedMatMul"))
    unfused = {op: n for op, n in counts.items() if op in ("MatMul", "_MklMatMul", "BiasAdd", "Erf", "Erfc")}
    assert fused >= 4 * layers + 1, counts  # qkv, attention output, intermediate (+GELU), output; the pooler
    assert not unfused, counts
    assert sum(n for op, n in counts.items() if op.endswith("Transpose")) <= 2 * layers, counts
