"""One Dense layer's matmul in each served form, interleaved in one process: float32, bfloat16, Keras's own
int8 Dense, int8_weights (float32 and bfloat16), int8_matmul with per-row input ranges and with one static
range (99.99th percentile of |x|, as calibration gives) (keras_bert/export/serving_form.py).

    python -m benchmarks.int8_matmul [--rows=1024 --inputs=384 --units=1536]

The default shape is one MiniLM feed-forward projection at batch 8 x seq 128. Each form is a Dense layer
without activation, built from the same float32 kernel, called in a tf.function; prints ms, GFLOP/s,
the ratio to float32, the max error relative to float32's largest output, and the load average.
"""

import json
import os

from benchmarks import common

FORMS = ("float32", "bfloat16", "keras_int8", "int8_weights", "int8_weights_bf16", "int8_matmul",
         "int8_static")


def dense_forms(inputs, units, seed=0, input_range=None):
    """{form: Dense layer} of one float32 kernel [inputs, units] (and bias) in each of FORMS ("int8_static":
    with the static `input_range`)."""
    import keras
    import numpy as np

    from keras_bert.export.serving_form import quantize_kernel, use_int8_matmul

    rng = np.random.default_rng(seed)
    weights = [rng.normal(0, 0.05, [inputs, units]).astype("float32"),
               rng.normal(0, 0.1, [units]).astype("float32")]
    layers = {}
    for form in FORMS:
        layer = keras.layers.Dense(units,
                                   dtype="bfloat16" if form.endswith("bf16") or form == "bfloat16" else None)
        layer.build((None, inputs))
        layer.set_weights(weights)
        if form == "keras_int8":
            layer.quantize("int8")
        elif form.startswith("int8"):
            quantize_kernel(layer)
            if form in ("int8_matmul", "int8_static"):
                use_int8_matmul(layer, input_range if form == "int8_static" else None)
        layers[form] = layer
    return layers


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--inputs", type=int, default=384)
    parser.add_argument("--units", type=int, default=1536)
    parser.add_argument("--repeats", type=int, default=9)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    tf = common.configure_tensorflow()
    import numpy as np

    x = np.random.default_rng(1).normal(size=[args.rows, args.inputs]).astype("float32")
    input_range = float(np.percentile(np.abs(x), 99.99))
    x = tf.constant(x)
    calls = {form: tf.function(lambda layer=layer: tf.cast(layer(x), tf.float32))
             for form, layer in dense_forms(args.inputs, args.units, input_range=input_range).items()}
    want = calls["float32"]().numpy()
    ms = common.interleaved_latency_ms(calls, args.repeats)
    flops = 2 * args.rows * args.inputs * args.units
    results = {form: {"ms": ms[form], "gflops": round(flops / ms[form] / 1e6, 1),
                      "speedup": round(ms["float32"] / ms[form], 2),
                      "max_rel_error": round(float(np.abs(calls[form]().numpy() - want).max()
                                                   / np.abs(want).max()), 4)}
               for form in calls}
    print(json.dumps({"shape": [args.rows, args.inputs, args.units], "machine": common.machine_description(),
                      "load_average": os.getloadavg(), **results}, indent=1))


if __name__ == "__main__":
    main()
