"""Does Keras rematerialization lower the peak memory of a BERT train step? Peak RSS and step time of a
classifier train step with and without `keras.RematScope(mode="activations")` (the feed-forward GELU
recomputed in the backward pass), XLA on and off, each in its own process.

    python -m benchmarks.remat            # base width, 4 layers, batch 32, seq 128 (--size=mini: 256 wide)
"""

import contextlib
import json

from benchmarks import common

BATCH_SIZE = 32


def step(remat, jit_compile, size):
    tf = common.configure_tensorflow()
    import keras
    import numpy as np

    from keras_bert.config import BertConfig
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.tasks.classification.model import BertClassifier

    layers, hidden, heads, intermediate = common.SIZES[size]
    config = BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate)
    # "list_of_layers" over the transformer blocks fails on TF in graph mode (tf.custom_gradient takes no
    # keyword arguments; a block's call has `training=`): only activation rematerialization runs.
    scope = keras.RematScope(mode="activations") if remat else contextlib.nullcontext()
    with scope:
        model = BertClassifier(BertEncoder(config), num_classes=2)
    model.compile(optimizer="adam", loss="auto", metrics=None, jit_compile=jit_compile)
    batch = common.pretraining_batch(BATCH_SIZE)
    inputs = {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}
    labels = np.zeros((BATCH_SIZE,), np.int32)
    seconds, loss, _, _ = common.fit_timed(model, tf, [(inputs, labels)], 3)
    return {"remat": remat, "jit_compile": jit_compile, "size": size, "step_s": round(seconds, 2),
            "loss": round(loss, 4)}


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--run", action="store_true", help="one configuration, in this process")
    parser.add_argument("--remat", action="store_true")
    parser.add_argument("--jit_compile", action="store_true")
    parser.add_argument("--size", choices=sorted(common.SIZES), default="base4")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.run:
        common.emit(step(args.remat, args.jit_compile, args.size))
        return
    results = [common.run_subprocess("remat", ["--run", f"--size={args.size}", *flags], timeout=900)
               for flags in ([], ["--remat"], ["--jit_compile"], ["--jit_compile", "--remat"])]
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
