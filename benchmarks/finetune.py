"""Fine-tuning step time and peak memory of a sentence classifier at seq 128.

  python -m benchmarks.finetune --impl=ours --size=mini           # BertClassifier.fit, XLA, AdamW
  python -m benchmarks.finetune --impl=kerashub --size=mini       # BertTextClassifier (preprocessor=None)
  python -m benchmarks.finetune --impl=transformers --size=mini   # BertForSequenceClassification, torch CPU
  python -m benchmarks.finetune --impl=ours --data=task --steps=12 --pad_to_multiple_of=16  # real, trimmed

Each configuration runs alone in its process, so `peak_rss_mb` (VmHWM from /proc/self/status, which counts
the native allocations of TF and torch) is that configuration's peak resident memory, the framework's own
~1 GiB baseline included. Step time: epoch 1 (compiles) is warm-up, epoch 2 is timed.
"""

import time

from benchmarks import common, inputs

NUM_CLASSES = 3  # MNLI-sized head


def classification_batch(batch_size):
    import numpy as np

    batch = common.pretraining_batch(batch_size)
    labels = np.random.default_rng(1).integers(0, NUM_CLASSES, size=(batch_size,), dtype=np.int32)
    return {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}, labels


def task_batches(batch_size, count, pad_to_multiple_of=0):
    """`count` real batches of the default classification task (docstring sentences, 4 topics) packed at
    seq 128 with the standard uncased vocab by the library's pipeline; with `pad_to_multiple_of`, grouped by
    length and cut to it (as run_classifier --pad_to_multiple_of)."""
    from keras_bert.data import features
    from keras_bert.tasks.classification import reader as classification
    from keras_bert.tasks.classification.default_data import default_classification_files
    from keras_bert.text import BertPreprocessor, BertTokenizer

    tokenizer = BertTokenizer(inputs.vocab_file())
    examples = classification.read_classification_file(default_classification_files()[0])
    labels = sorted({example.label for example in examples})
    dataset = features.classification_dataset(examples, BertPreprocessor(tokenizer, common.SEQ_LENGTH),
                                              labels, batch_size=batch_size, shuffle=True, seed=0,
                                              pad_to_multiple_of=pad_to_multiple_of)
    return [(x, y % NUM_CLASSES) for x, y in dataset.take(count).as_numpy_iterator()]


def _keras_fit(model, batches, steps, to_inputs=lambda x: x):
    tf = common.configure_tensorflow()
    import keras

    model.compile(optimizer=keras.optimizers.AdamW(2e-5, weight_decay=0.01, epsilon=1e-6),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    seconds, _, _, _ = common.fit_timed(model, tf, batches, steps, lambda b: (to_inputs(b[0]), b[1]))
    return seconds


def run_ours(size, batches, steps):
    common.configure_tensorflow()
    import keras

    from keras_bert.config import BertConfig
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.tasks.classification.model import BertClassifier

    keras.utils.set_random_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    config = BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate)
    model = BertClassifier(BertEncoder(config), num_classes=NUM_CLASSES)
    return _keras_fit(model, batches, steps)


def run_kerashub(size, batches, steps):
    common.configure_tensorflow()
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=common.VOCAB_SIZE, num_layers=layers, num_heads=heads, hidden_dim=hidden,
        intermediate_dim=intermediate, max_sequence_length=512)
    model = keras_hub.models.BertTextClassifier(backbone, num_classes=NUM_CLASSES, preprocessor=None)

    def to_inputs(b):
        return {"token_ids": b["input_word_ids"], "segment_ids": b["input_type_ids"],
                "padding_mask": b["input_mask"].astype(bool)}

    return _keras_fit(model, batches, steps, to_inputs)


def run_transformers(size, batches, steps):
    torch = common.configure_torch()
    import transformers

    torch.manual_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    config = transformers.BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden,
                                     num_hidden_layers=layers, num_attention_heads=heads,
                                     intermediate_size=intermediate,
                                     num_labels=NUM_CLASSES)
    model = transformers.BertForSequenceClassification(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01, eps=1e-6)
    if len(batches) > 1:
        raise ValueError("--impl=transformers runs on the synthetic batch only")
    b, labels = batches[0]
    inputs = dict(input_ids=torch.from_numpy(b["input_word_ids"]).long(),
                  attention_mask=torch.from_numpy(b["input_mask"]).long(),
                  token_type_ids=torch.from_numpy(b["input_type_ids"]).long(),
                  labels=torch.from_numpy(labels).long())

    def step():
        model(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(steps):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


RUNNERS = {"ours": run_ours, "kerashub": run_kerashub, "transformers": run_transformers}


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--impl", choices=sorted(RUNNERS), default="ours")
    parser.add_argument("--size", choices=sorted(common.SIZES), default="mini")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3, help="warm-up steps, then as many timed steps")
    parser.add_argument("--data", choices=["synthetic", "task"], default="synthetic",
                        help="one full-length synthetic batch, or --steps real batches of the default "
                             "classification task (short sentences: mostly padding at seq 128)")
    parser.add_argument("--pad_to_multiple_of", type=int, default=0,
                        help="--data=task: cut each batch's padding to this multiple (ours only)")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.data == "task":
        common.configure_tensorflow()  # before the input pipeline runs TF
        batches = task_batches(args.batch_size, args.steps, args.pad_to_multiple_of)
    else:
        batches = [classification_batch(args.batch_size)]
    seconds = RUNNERS[args.impl](args.size, batches, args.steps)
    common.emit(dict(kind="finetune", impl=args.impl, size=args.size, batch_size=args.batch_size,
                     data=args.data, pad_to_multiple_of=args.pad_to_multiple_of,
                     computed_fraction=round(sum(x["input_mask"].size for x, _ in batches) /
                                             (len(batches) * args.batch_size * common.SEQ_LENGTH), 4),
                     real_fraction=round(sum(int(x["input_mask"].sum()) for x, _ in batches) /
                                         (len(batches) * args.batch_size * common.SEQ_LENGTH), 4),
                     step_s=round(seconds, 4), examples_per_s=round(args.batch_size / seconds, 1)))


if __name__ == "__main__":
    main()
