"""Fine-tuning step time and peak memory of a sentence classifier at seq 128.

  python -m benchmarks.finetune --impl=ours --size=mini           # BertClassifier.fit, XLA, AdamW
  python -m benchmarks.finetune --impl=kerashub --size=mini       # BertTextClassifier (preprocessor=None)
  python -m benchmarks.finetune --impl=transformers --size=mini   # BertForSequenceClassification, torch CPU

Each configuration runs alone in its process, so `peak_rss_mb` (VmHWM from /proc/self/status, which counts
the native allocations of TF and torch) is that configuration's peak resident memory, the framework's own
~1 GiB baseline included. Step time: epoch 1 (compiles) is warm-up, epoch 2 is timed.
"""

import argparse
import time

from benchmarks import common

NUM_CLASSES = 3  # MNLI-sized head


def classification_batch(batch_size):
    import numpy as np

    batch = common.pretraining_batch(batch_size)
    labels = np.random.default_rng(1).integers(0, NUM_CLASSES, size=(batch_size,), dtype=np.int32)
    return {k: batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")}, labels


def _keras_fit(model, x, labels, steps):
    tf = common.configure_tensorflow()
    import keras

    model.compile(optimizer=keras.optimizers.AdamW(2e-5, weight_decay=0.01, epsilon=1e-6),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    dataset = tf.data.Dataset.from_tensors((x, labels)).repeat().prefetch(tf.data.AUTOTUNE)
    timer = common.epoch_timer()
    model.fit(dataset, steps_per_epoch=steps, epochs=2, callbacks=[timer], verbose=0)
    return timer.times[-1] / steps


def run_ours(size, batch_size, steps):
    common.configure_tensorflow()
    import keras

    from keras_bert.config import BertConfig
    from keras_bert.models.classifier import BertClassifier
    from keras_bert.models.encoder import BertEncoder

    keras.utils.set_random_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    config = BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate)
    model = BertClassifier(BertEncoder(config), num_classes=NUM_CLASSES)
    x, labels = classification_batch(batch_size)
    return _keras_fit(model, x, labels, steps)


def run_kerashub(size, batch_size, steps):
    common.configure_tensorflow()
    import keras
    import keras_hub

    keras.utils.set_random_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=common.VOCAB_SIZE, num_layers=layers, num_heads=heads, hidden_dim=hidden,
        intermediate_dim=intermediate, max_sequence_length=512)
    model = keras_hub.models.BertTextClassifier(backbone, num_classes=NUM_CLASSES, preprocessor=None)
    b, labels = classification_batch(batch_size)
    x = {"token_ids": b["input_word_ids"], "segment_ids": b["input_type_ids"],
         "padding_mask": b["input_mask"].astype(bool)}
    return _keras_fit(model, x, labels, steps)


def run_transformers(size, batch_size, steps):
    torch = common.configure_torch()
    import transformers

    torch.manual_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    config = transformers.BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                                     num_attention_heads=heads, intermediate_size=intermediate,
                                     num_labels=NUM_CLASSES)
    model = transformers.BertForSequenceClassification(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01, eps=1e-6)
    b, labels = classification_batch(batch_size)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impl", choices=sorted(RUNNERS), default="ours")
    parser.add_argument("--size", choices=sorted(common.SIZES), default="mini")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=3, help="warm-up steps, then as many timed steps")
    args = parser.parse_args()
    seconds = RUNNERS[args.impl](args.size, args.batch_size, args.steps)
    common.emit(dict(kind="finetune", impl=args.impl, size=args.size, batch_size=args.batch_size,
                     step_s=round(seconds, 4),
                     examples_per_s=round(args.batch_size / seconds, 1)))


if __name__ == "__main__":
    main()
