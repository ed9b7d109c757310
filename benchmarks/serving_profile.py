"""Where a `serving_default` call of the MiniLM sentence-embedding export spends its time, op by op.

    python -m benchmarks.serving_profile [--repeats=20] [--batch_size=8] [--int8] [--dtype=bfloat16]

The export of `benchmarks.serving_peers` (ours, float32, its calibrated int8_matmul form or bfloat16) is
loaded the way TF Serving loads it, into a TF1 Session (`tf.compat.v1.saved_model.load`: grappler and oneDNN
rewrite the graph as for the model server), and serving_default runs on batches of successive timed texts
(one by default) with full tracing (`RunOptions(trace_level=FULL_TRACE)`); each node's time in the step
stats (its op's start to end) is summed over the traced calls, by op type and by node (a node of every layer
counted as one). With two intra-op threads and inter-op parallelism the ops' times may add up to more than
the wall time: the shares say where the work is, not the critical path. The untraced median wall time of the
same calls is reported beside them. Each node is also counted in its stage (`stages`): text -> ids (the
preprocessor), the encoder, and the rest (pooling, normalizing, the signature's own ops), with the number of
ops each ran per call and its most run op types. Function-call nodes (CALL_OPS: the shared inference
graph, the length buckets' conds) are not counted: their functions' nodes are.
"""

import collections
import re
import statistics
import tempfile
import time

from benchmarks import common
from benchmarks.inputs import max_seq_length, minilm_dir, sentence_texts

TOP = 40
# Ops that call a function: their span covers the function's own nodes, which the trace reports too, so
# they are left out of the sums (counted, they doubled the time of the inference graph function).
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "While",
                      "StatelessWhile"})
_OP_TYPE = re.compile(r"=\s*([A-Za-z0-9_]+)\(")  # timeline_label: "node = OpType(inputs)"
# Node names summed over the layers: the function-call prefixes dropped, the layer index starred.
_CALL = re.compile(r"(Stateful)?PartitionedCall(_\d+)?$")
_LAYER_INDEX = re.compile(r"transformer_layer_\d+(_\d+)?")


def _node_kind(node_name):
    parts = [part for part in node_name.split("/") if not _CALL.match(part)]
    return _LAYER_INDEX.sub("transformer_layer_*", "/".join(parts))


def _summary(times, total_us, calls):
    return [{"name": name, "ms_per_call": round(us / calls / 1e3, 3), "share": round(us / total_us, 3)}
            for name, us in times.most_common(TOP)]


def _stage(node_name):
    """The stage of a served node: 'text_to_ids', 'encoder' or 'pooling_and_rest'."""
    if "bert_encoder" in node_name:
        return "encoder"
    if "preprocessor" in node_name or "tokenizer" in node_name or "packer" in node_name:
        return "text_to_ids"
    return "pooling_and_rest"


def profile_calls(repeats, batch_size=1, quantize=None, dtype="float32"):
    """{wall_ms, traced_op_ms, top_op_types, top_nodes} of `repeats` traced calls of `batch_size` texts
    (successive timed texts), of the float32 export, its `quantize` form (calibrated on other texts) or its
    `dtype` form."""
    tf = common.configure_tensorflow()
    from keras_bert.export import export_saved_model
    from keras_bert.models.encoder import BertEncoder

    timed, calibration = sentence_texts()
    directory = minilm_dir()
    encoder = BertEncoder.from_pretrained(directory, seq_length=max_seq_length(directory))
    by_type, by_node, walls = collections.Counter(), collections.Counter(), []
    by_stage, stage_ops, stage_types = collections.Counter(), collections.Counter(), {}
    with tempfile.TemporaryDirectory() as workdir:
        version_dir = export_saved_model(encoder, workdir,  # the checkpoint's pooling: the encoder's own
                                         warmup=False, quantize=quantize, dtype=dtype,
                                         calibration_texts=calibration if quantize else None)
        config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=common.NUM_THREADS,
                                          inter_op_parallelism_threads=common.NUM_THREADS)
        with tf.Graph().as_default(), tf.compat.v1.Session(config=config) as session:
            meta = tf.compat.v1.saved_model.load(session, ["serve"], version_dir)
            signature = meta.signature_def["serving_default"]
            feed_name = signature.inputs["text"].name
            fetch = signature.outputs["sentence_embedding"].name
            options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
            for call in range(repeats + 2):
                start_text = call * batch_size % len(timed)
                feed = {feed_name: timed[start_text:start_text + batch_size]}
                start = time.perf_counter()
                session.run(fetch, feed)
                walls.append(time.perf_counter() - start)
                if call < 2:  # warm-up: oneDNN primitives are built on the first calls
                    continue
                metadata = tf.compat.v1.RunMetadata()
                session.run(fetch, feed, options=options, run_metadata=metadata)
                for device in metadata.step_stats.dev_stats:
                    for node in device.node_stats:
                        micros = node.op_end_rel_micros - node.op_start_rel_micros
                        match = _OP_TYPE.search(node.timeline_label)
                        if match and match.group(1) in CALL_OPS:
                            continue
                        by_type[match.group(1) if match else node.node_name] += micros
                        by_node[_node_kind(node.node_name)] += micros
                        by_stage[_stage(node.node_name)] += micros
                        stage_ops[_stage(node.node_name)] += 1
                        stage_types.setdefault(_stage(node.node_name), collections.Counter())[
                            match.group(1) if match else node.node_name] += 1
    total = sum(by_type.values()) or 1
    stages = {stage: {"ms_per_call": round(us / repeats / 1e3, 3),
                      "ops_per_call": stage_ops[stage] // repeats,
                      "most_run_ops": {op: n // repeats for op, n in stage_types[stage].most_common(12)}}
              for stage, us in by_stage.most_common()}
    return {"batch_size": batch_size, "quantize": quantize, "dtype": dtype, "stages": stages,
            "wall_ms": round(1e3 * statistics.median(walls[2:]), 2), "traced_calls": repeats,
            "traced_op_ms": round(total / repeats / 1e3, 2),
            "top_op_types": _summary(by_type, total, repeats),
            "top_nodes": _summary(by_node, total, repeats)}


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=20, help="traced calls (after two warm-up calls)")
    parser.add_argument("--batch_size", type=int, default=1, help="texts per call")
    parser.add_argument("--int8", action="store_true", help="profile the calibrated int8_matmul export")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                        help="the export's compute dtype")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    common.emit(dict(kind="serving_profile", **profile_calls(args.repeats, args.batch_size,
                                                             "int8_matmul" if args.int8 else None,
                                                             args.dtype)))


if __name__ == "__main__":
    main()
