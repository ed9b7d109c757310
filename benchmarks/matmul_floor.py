"""The floor under a small served call: a BERT encoder's matmuls alone, in TensorFlow and in ONNX Runtime.

    python -m benchmarks.matmul_floor                 # both engines, each in its own process
    python -m benchmarks.matmul_floor --engine=tf     # one engine (what the parent runs)
    python -m benchmarks.matmul_floor --engine=tf --weights=constant --rows 8 32 128 8
                                                        # TF on constant weights, row counts in this order
    python -m benchmarks.matmul_floor --dtype=int8 --rows 8 32 128
                                                        # both engines' int8 matmuls, as their exports serve

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

`--weights=constant` (TF only) bakes the kernels and biases into the function as constants: oneDNN then runs
its blocked-weight kernel on weights it reorders once and keeps. TF keeps one reordered copy per op, in the
layout the first call's row count asked for, and the float32 layout oneDNN picks depends on the row count;
the row counts run in the order given, through one function, so a later count whose layout differs from the
first's shows the cost of reordering every weight on every call (docs/serving.md, "What stays out of
reach"). `--dtype=bfloat16` runs TF's matmuls in bf16, as a bfloat16 export serves them: with
`--weights=constant` and row counts on both sides of a layout change, the check that a CPU keeps one bf16
weight layout (`ONEDNN_VERBOSE=1` prints each weight reorder).

`--dtype=int8` times both engines' int8 forms of the same chain, each as its int8 export serves a Dense:
TF the calibrated "int8_matmul" form (`serving_form.static_int8_matmul`: each input shifted and quantized on
TF's QuantizeV2, oneDNN's `_QuantizedMatMul` on constant int8 kernels with one scale per output unit, bias
fused; each input range the largest |input| of a float32 pass on the first row count), ONNX Runtime the
chain quantized by `onnxruntime.quantization.quantize_dynamic` (QInt8 weights: its int8 export's form, each
input quantized per call). `--weights` does not apply.
"""

import re

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


_TF_FORWARD = {}


def chain(x, dense):
    """The forward chain of the 24 projections on `x`: (the last layer's output, each layer's query/key/value
    output). `dense(x, layer, projection, residual=None)` computes one projection (its index in PROJECTIONS)
    of `x` plus its bias, and `residual` where given, in the engine's terms."""
    qkv_outputs = []
    for layer in range(LAYERS):
        qkv_outputs.append(dense(x, layer, 0))  # feeds attention in the model
        attended = dense(x, layer, 1, residual=x)
        x = dense(dense(attended, layer, 2), layer, 3, residual=attended)
    return x, qkv_outputs


def tf_call(rows, constant=False, dtype="float32"):
    """A call of TF's chained matmuls on `rows` rows in `dtype` ("int8": the static int8 form); one
    tf.function (any row count) per weights form and dtype."""
    tf = common.configure_tensorflow()
    if (constant, dtype) not in _TF_FORWARD:
        _TF_FORWARD[constant, dtype] = (_tf_int8_forward(tf, rows) if dtype == "int8"
                                        else _tf_forward(tf, constant, dtype))
    forward = _TF_FORWARD[constant, dtype]
    x = tf.random.stateless_normal((rows, HIDDEN), seed=(1, 2))
    x = x if dtype == "int8" else tf.cast(x, dtype)
    return lambda: [t.numpy() for t in tf.nest.flatten(forward(x))]


def _tf_forward(tf, constant, dtype):
    arrays = [[(tf.cast(k, dtype).numpy(), tf.cast(b, dtype).numpy()) for k, b in layer]
              for layer in weights()]
    variables = None if constant else [[(tf.Variable(k), tf.Variable(b)) for k, b in layer]
                                       for layer in arrays]

    @tf.function(input_signature=[tf.TensorSpec([None, HIDDEN], dtype)])
    def forward(x):
        # Constants are made inside the traced function: Const nodes feeding the matmuls, not captures.
        layers = variables or [[(tf.constant(k), tf.constant(b)) for k, b in layer] for layer in arrays]

        def dense(x, layer, projection, residual=None):
            kernel, bias = layers[layer][projection]
            y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
            return y if residual is None else y + residual

        return chain(x, dense)

    return forward


def _tf_int8_forward(tf, rows):
    """The chain with every projection as the calibrated int8 export serves it (`static_int8_matmul`), its
    input ranges the largest |input| of each projection in a float32 pass on `rows` rows."""
    import keras
    import numpy as np

    from keras_bert.export.serving_form import static_int8_matmul

    arrays = weights()
    ranges = [[0.0] * len(PROJECTIONS) for _ in range(LAYERS)]

    def calibrating(x, layer, projection, residual=None):  # a float32 pass recording each input's |x| max
        ranges[layer][projection] = float(np.abs(x).max())
        kernel, bias = arrays[layer][projection]
        return x @ kernel + bias + (0.0 if residual is None else residual)

    chain(np.asarray(tf.random.stateless_normal((rows, HIDDEN), seed=(1, 2))), calibrating)
    quantized = []
    for layer, layer_ranges in zip(arrays, ranges, strict=True):
        quantized.append([])
        for (kernel, bias), input_range in zip(layer, layer_ranges, strict=True):
            # Keras's int8 kernel quantization, as the export's: one scale per output unit.
            int8, scale = keras.quantizers.abs_max_quantize(kernel, axis=0, to_numpy=True)
            quantized[-1].append((np.asarray(int8), input_range, np.asarray(scale)[0], bias))

    def dense(x, layer, projection, residual=None):
        kernel, input_range, scale, bias = quantized[layer][projection]
        y = static_int8_matmul(x, kernel, input_range, scale, bias)
        return y if residual is None else y + residual

    @tf.function(input_signature=[tf.TensorSpec([None, HIDDEN], tf.float32)])
    def forward(x):
        return chain(x, dense)

    return forward


def ort_call(rows, int8=False):
    import os
    import tempfile

    import numpy as np
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper

    nodes, initializers = [], []
    for i, layer in enumerate(weights()):
        for j, (kernel, bias) in enumerate(layer):
            initializers += [numpy_helper.from_array(kernel, f"k{i}_{j}"),
                             numpy_helper.from_array(bias, f"b{i}_{j}")]

    def dense(source, layer, projection, residual=None):  # tensor names in, the output's name out
        name = f"{('qkv', 'att', 'inter', 'out')[projection]}{layer}"
        weight = f"{layer}_{projection}"
        nodes.append(helper.make_node("MatMul", [source, f"k{weight}"], [f"{name}_mm"]))
        nodes.append(helper.make_node("Add", [f"{name}_mm", f"b{weight}"],
                                      [f"{name}_b" if residual else name]))
        if residual:
            nodes.append(helper.make_node("Add", [f"{name}_b", residual], [name]))
        return name

    x, outputs = chain("x", dense)
    value_info = [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in [x, *outputs]]
    graph = helper.make_graph(nodes, "matmul_floor", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                    [None, HIDDEN])],
                              value_info, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with tempfile.TemporaryDirectory() as workdir:
            plain, quantized = os.path.join(workdir, "plain.onnx"), os.path.join(workdir, "int8.onnx")
            with open(plain, "wb") as f:
                f.write(model)
            quantize_dynamic(plain, quantized, weight_type=QuantType.QInt8)
            with open(quantized, "rb") as f:
                model = f.read()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = common.NUM_THREADS
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feed = {"x": np.random.default_rng(1).normal(size=(rows, HIDDEN)).astype(np.float32)}
    return lambda: session.run(None, feed)


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--engine", choices=["both", "tf", "ort"], default="both")
    parser.add_argument("--rows", type=int, nargs="+", default=[32, 320])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--weights", choices=["variable", "constant"], default="variable",
                        help="TF's weights: variables (what a float32 export serves) or graph constants (a "
                             "bfloat16 or int8 export's)")
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "int8"], default="float32",
                        help="TF's matmul dtype (ONNX Runtime's stays float32, but for int8: both engines' "
                             "int8 exports' form)")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.engine == "both":
        results = {"cpu_flags": common.reported_cpu_flags()}
        for engine in ("tf", "ort"):
            results[engine] = common.run_subprocess(
                "matmul_floor",
                [f"--engine={engine}", f"--repeats={args.repeats}", f"--weights={args.weights}",
                 f"--dtype={args.dtype}", "--rows", *map(str, args.rows)])
        for engine in ("tf", "ort"):
            for key, ms in results[engine].items():
                match = re.fullmatch(r"rows(\d+)_ms(_again)?", key)
                if match and ms:
                    rows = int(match[1])
                    flops = 2 * rows * LAYERS * sum(k * n for k, n in PROJECTIONS)
                    print(f"{engine:4s} rows {rows:4d}{match[2] or '':6s}: {ms:8.3f} ms  "
                          f"({flops / ms / 1e6:.0f} {'GOP' if args.dtype == 'int8' else 'GFLOP'}/s)")
        common.emit(dict(kind="matmul_floor", **results))
        return
    if args.engine == "tf":
        def make(rows):
            return tf_call(rows, constant=args.weights == "constant", dtype=args.dtype)
    else:
        def make(rows):
            return ort_call(rows, int8=args.dtype == "int8")
    # In the order given (a repeated count is timed again under its own key with a "_again" suffix).
    timed = {}
    for rows in args.rows:
        key = f"rows{rows}_ms" + ("_again" if f"rows{rows}_ms" in timed else "")
        timed[key] = round(1e3 * median_latency(make(rows), args.repeats), 3)
    weights_form = "constant" if args.dtype == "int8" and args.engine == "tf" else args.weights
    common.emit(dict(kind="matmul_floor", engine=args.engine, weights=weights_form,
                     dtype=args.dtype if args.engine == "tf" or args.dtype == "int8" else "float32",
                     **timed))


if __name__ == "__main__":
    main()
