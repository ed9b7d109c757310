"""The floor under a small served call: a BERT encoder's matmuls alone, in TensorFlow and in ONNX Runtime.

    python -m benchmarks.matmul_floor                 # both engines, each in its own process
    python -m benchmarks.matmul_floor --engine=tf     # one engine (what the parent runs)

The 24 matmuls of MiniLM-L6 (6 layers; hidden 384, intermediate 1536: the fused query/key/value [384, 1152],
the attention output [384, 384], the intermediate [384, 1536] and the output [1536, 384]), chained as in a
forward pass (each layer's input is the previous layer's output; bias added to every product, the residual to
the attention output and the output), on `--rows` token rows: 32 is one short request (batch 1, ~25 pieces
rounded up to 8), 320 a batch of 8 such texts. Attention, LayerNorm, GELU and the tokenizer are left out: what
remains is the work no graph rewrite removes. TensorFlow runs it as one tf.function of MatMul + BiasAdd on
float32 variables (the ops a served Dense becomes, fused by grappler into one oneDNN op); ONNX Runtime as
MatMul + Add on initializers (its default CPU provider, graph optimizations on). The same seeded weights;
each engine on `common.NUM_THREADS` threads; latency is the median of `--repeats` calls after 2 warm-up
calls. If this floor alone is above a peer's whole call, no rewrite of our graph reaches that peer there.
"""


from benchmarks import common
from benchmarks.common import median_latency

LAYERS = 6
HIDDEN, INTERMEDIATE = 384, 1536
# (input width, output width) of each layer's Dense projections: qkv, attention output, intermediate, output.
PROJECTIONS = ((HIDDEN, 3 * HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, INTERMEDIATE), (INTERMEDIATE, HIDDEN))


def weights():
    """[(kernel, bias)] per projection per layer, float32, seeded: the same numbers for both engines."""
    import numpy as np

    rng = np.random.default_rng(0)
    return [[(rng.normal(0, 0.02, (k, n)).astype(np.float32), rng.normal(0, 0.02, n).astype(np.float32))
             for k, n in PROJECTIONS] for _ in range(LAYERS)]


def tf_call(rows):
    tf = common.configure_tensorflow()
    layers = [[(tf.Variable(k), tf.Variable(b)) for k, b in layer] for layer in weights()]

    @tf.function
    def forward(x):
        qkv_outputs = []
        for (qkv, qkv_b), (att, att_b), (inter, inter_b), (out, out_b) in layers:
            qkv_outputs.append(tf.nn.bias_add(tf.matmul(x, qkv), qkv_b))  # feeds attention in the model
            attended = tf.nn.bias_add(tf.matmul(x, att), att_b) + x
            x = tf.nn.bias_add(tf.matmul(tf.nn.bias_add(tf.matmul(attended, inter), inter_b), out),
                               out_b) + attended
        return x, qkv_outputs

    x = tf.random.stateless_normal((rows, HIDDEN), seed=(1, 2))
    return lambda: [t.numpy() for t in tf.nest.flatten(forward(x))]


def ort_call(rows):
    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    nodes, initializers, outputs, x = [], [], [], "x"

    def dense(name, source, weight, residual=None):
        nodes.append(helper.make_node("MatMul", [source, f"k{weight}"], [f"{name}_mm"]))
        nodes.append(helper.make_node("Add", [f"{name}_mm", f"b{weight}"],
                                      [f"{name}_b" if residual else name]))
        if residual:
            nodes.append(helper.make_node("Add", [f"{name}_b", residual], [name]))
        return name

    for i, layer in enumerate(weights()):
        for j, (kernel, bias) in enumerate(layer):
            initializers += [numpy_helper.from_array(kernel, f"k{i}_{j}"),
                             numpy_helper.from_array(bias, f"b{i}_{j}")]
        outputs.append(dense(f"qkv{i}", x, f"{i}_0"))
        attended = dense(f"att{i}", x, f"{i}_1", residual=x)
        x = dense(f"out{i}", dense(f"inter{i}", attended, f"{i}_2"), f"{i}_3", residual=attended)
    value_info = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in [x, *outputs]]
    graph = helper.make_graph(nodes, "matmul_floor", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [None, HIDDEN])],
                              value_info, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = common.NUM_THREADS
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    feed = {"x": np.random.default_rng(1).normal(size=(rows, HIDDEN)).astype(np.float32)}
    return lambda: session.run(None, feed)


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--engine", choices=["both", "tf", "ort"], default="both")
    parser.add_argument("--rows", type=int, nargs="+", default=[32, 320])
    parser.add_argument("--repeats", type=int, default=200)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.engine == "both":
        results = {"cpu_flags": common.reported_cpu_flags()}
        for engine in ("tf", "ort"):
            results[engine] = common.run_subprocess(
                "matmul_floor",
                [f"--engine={engine}", f"--repeats={args.repeats}", "--rows", *map(str, args.rows)])
        flops = {rows: 2 * rows * LAYERS * sum(k * n for k, n in PROJECTIONS) for rows in args.rows}
        for engine in ("tf", "ort"):
            for rows in args.rows:
                ms = results[engine].get(f"rows{rows}_ms")
                if ms:
                    print(f"{engine:4s} rows {rows:4d}: {ms:8.3f} ms  ({flops[rows] / ms / 1e6:.0f} GFLOP/s)")
        common.emit(dict(kind="matmul_floor", **results))
        return
    make = tf_call if args.engine == "tf" else ort_call
    common.emit(dict(kind="matmul_floor", engine=args.engine,
                     **{f"rows{rows}_ms": round(1e3 * median_latency(make(rows), args.repeats), 3)
                        for rows in args.rows}))


if __name__ == "__main__":
    main()
