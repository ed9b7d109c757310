"""Fine-tuning as users run it, end to end: wall time and accuracy of the real MiniLM-L6 checkpoint on a
real-text task of short and long texts, our recipe and `fit` against a torch loop and KerasHub.

  python -m benchmarks.finetune_end_to_end                        # every peer, one round
  python -m benchmarks.finetune_end_to_end --peers=recipe,torch --rounds=2

Peers, each a fresh process timed from its start to its accuracy (imports, checkpoint load, training and
evaluation included), on the same train/dev CSVs, checkpoint, batch size, epochs and peak learning rate:
  recipe        `python -m recipes.run_classifier` with its default flags (batches cut to their tokens)
  recipe_fixed  the same with --pad_to_multiple_of=0 (every batch padded to --max_seq_length)
  recipe_kernels  the default recipe with --nojit_compile (TF's kernels: no compile per batch length)
  recipe_xla    the default recipe with --jit_compile (XLA whatever the run's length)
  fit           `BertClassifier.from_pretrained(...)`, `compile()`, `fit(texts, labels)` on raw strings
  torch         a plain transformers + torch loop: BertForSequenceClassification, dynamic padding (each
                batch padded to its longest text), AdamW (weight decay 0.01), 10% warmup + linear decay
  kerashub      `keras_hub.models.BertTextClassifier.from_preset(...)` (the same weights, written by
                `save_keras_hub`) and its `fit(texts, labels)` with KerasHub's defaults

The task: sentences of the standard library's docstrings labeled by topic
(keras_bert.tasks.classification.default_data), joined into passages of 1 to 6 consecutive sentences of one
topic, so texts run
from ~10 to over 128 tokens (truncated at --max_seq_length by every peer).
"""

import csv
import json
import os
import random
import re
import sys
import tempfile
import time

from benchmarks import common, inputs

PEERS = ("recipe", "recipe_fixed", "recipe_kernels", "recipe_xla", "fit", "torch", "kerashub")
# The recipe's flags beyond the shared ones, per recipe peer.
RECIPE_FLAGS = {"recipe": [], "recipe_fixed": ["--pad_to_multiple_of=0"],
                "recipe_kernels": ["--nojit_compile"], "recipe_xla": ["--jit_compile"]}
# Sentences per passage, cycled: mostly short texts with a tail of long ones.
PASSAGE_SENTENCES = (1, 1, 2, 1, 3, 1, 6)


def write_task(directory, per_class_train, per_class_dev, seed=0):
    """Writes train.csv and dev.csv (`text,label`) of passages of docstring sentences by topic; returns
    their paths. Where a topic's sentences cannot make `per_class_train` distinct passages, the dev passages
    keep sentences of their own and the training passages regroup the rest, each pass over them shuffled
    anew (a larger training set of distinct passages whose sentences recur; dev never shares one)."""
    from keras_bert.tasks.classification.default_data import topic_sentences

    rng = random.Random(seed)
    splits = {"train": [], "dev": []}
    for label, sentences in topic_sentences().items():
        sentences = list(sentences)
        rng.shuffle(sentences)
        passages, used = _passages(sentences, per_class_train + per_class_dev)
        if used > len(sentences):  # too few: dev from the end, training passages regrouped from the rest
            dev, used = _passages(sentences[::-1], per_class_dev)
            pool, passages = sentences[:len(sentences) - used], []
            if used > len(sentences) or not pool:
                raise ValueError(f"topic {label!r}: {len(sentences)} sentences, {used} needed for dev alone")
            while len(passages) < per_class_train:
                rng.shuffle(pool)
                grouped, _ = _passages(pool, per_class_train - len(passages), whole=True)
                passages += grouped
            passages += dev
        splits["train"] += [(text, label) for text in passages[:per_class_train]]
        splits["dev"] += [(text, label) for text in passages[per_class_train:]]
    paths = []
    for split, rows in splits.items():
        rng.shuffle(rows)
        path = os.path.join(directory, f"{split}.csv")
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
        paths.append(path)
    return paths


def _passages(sentences, count, whole=False):
    """(`count` passages of 1-6 consecutive `sentences` from the first, sized by PASSAGE_SENTENCES; how many
    sentences they take); `whole`: only the passages the sentences fill."""
    passages, used = [], 0
    for i in range(count):
        size = PASSAGE_SENTENCES[i % len(PASSAGE_SENTENCES)]
        if whole and used + size > len(sentences):
            break
        passages.append(" ".join(sentences[used:used + size]))
        used += size
    return passages, used


def read_task(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [row["text"] for row in rows], [row["label"] for row in rows]


def run_recipe(args, peer):
    """Runs the recipe as a user would (its own process, its own thread setup) and returns its accuracy."""
    import subprocess

    output_dir = tempfile.mkdtemp(prefix="recipe_", dir=args.work_dir)
    command = [sys.executable, "-m", "recipes.run_classifier", "--task_name=custom",
               f"--train_file={args.train_file}", f"--eval_file={args.dev_file}",
               f"--init_checkpoint={inputs.minilm_dir()}", f"--output_dir={output_dir}", "--overwrite",
               f"--train_batch_size={args.batch_size}", f"--num_train_epochs={args.epochs}",
               f"--learning_rate={args.learning_rate}", f"--max_seq_length={args.max_seq_length}"]
    command += RECIPE_FLAGS[peer] + ([] if args.seed is None else [f"--seed={args.seed}"])
    proc = subprocess.run(command, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if proc.returncode:
        raise RuntimeError("\n".join((proc.stdout + proc.stderr).splitlines()[-20:]))
    compiled = [line for line in proc.stderr.splitlines() if "batch lengths" in line]
    # Keras' one line per epoch (verbose=2): "8/8 - 25s - 3s/step - loss: ...", whole seconds.
    lines = proc.stdout.splitlines()
    epochs = [float(m.group(1)) for m in (re.match(r"\s*\d+/\d+ - (\d+)s - ", line) for line in lines) if m]
    with open(os.path.join(output_dir, "eval_results.json"), encoding="utf-8") as f:
        return {"accuracy": json.load(f)["accuracy"], "epoch_s": epochs,
                "compiled": compiled[-1].split("train step", 1)[-1] if compiled else None}


def run_fit(args):
    common.configure_tensorflow()
    import keras

    import keras_bert as kb

    keras.utils.set_random_seed(args.seed or 0)
    texts, labels = read_task(args.train_file)
    dev_texts, dev_labels = read_task(args.dev_file)
    clf = kb.BertClassifier.from_pretrained(inputs.minilm_dir(), labels=sorted(set(labels)),
                                            seq_length=args.max_seq_length)
    clf.compile()  # the library's AdamW, 5e-5 peak, 10% warmup + linear decay over the fit
    epochs, traces, train_step = [], [], clf.train_step
    clf.train_step = lambda data: traces.append(1) or train_step(data)  # runs once a trace
    started = [time.perf_counter()]

    def epoch_end(epoch, logs):
        epochs.append(round(time.perf_counter() - started[0], 1))
        started[0] = time.perf_counter()

    clf.fit(texts, labels, batch_size=args.batch_size, epochs=args.epochs, verbose=0,
            callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=epoch_end)])
    _, accuracy = clf.evaluate(dev_texts, dev_labels, batch_size=args.batch_size, verbose=0)
    return {"accuracy": float(accuracy), "epoch_s": epochs, "train_step_traces": len(traces),
            "execution": clf.execution}


def run_torch(args):
    torch = common.configure_torch()
    import transformers

    torch.manual_seed(args.seed or 0)
    texts, labels = read_task(args.train_file)
    dev_texts, dev_labels = read_task(args.dev_file)
    names = sorted(set(labels))
    tokenizer = transformers.BertTokenizerFast(os.path.join(inputs.minilm_dir(), "vocab.txt"))
    model = transformers.BertForSequenceClassification.from_pretrained(inputs.minilm_dir(),
                                                                       num_labels=len(names))
    steps = -(-len(texts) // args.batch_size) * args.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.01)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)

    def batch(source, rows):  # padded to the batch's longest text
        return tokenizer([source[i] for i in rows], padding=True, truncation=True,
                         max_length=args.max_seq_length, return_tensors="pt")

    ids = torch.tensor([names.index(label) for label in labels])
    order = list(range(len(texts)))
    rng = random.Random(args.seed or 0)
    model.train()
    for _ in range(args.epochs):
        rng.shuffle(order)
        for start in range(0, len(order), args.batch_size):
            rows = order[start:start + args.batch_size]
            loss = model(**batch(texts, rows), labels=ids[rows]).loss
            loss.backward()
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(dev_texts), args.batch_size):
            rows = list(range(start, min(start + args.batch_size, len(dev_texts))))
            predicted = model(**batch(dev_texts, rows)).logits.argmax(-1).tolist()
            correct += sum(names[p] == dev_labels[i] for p, i in zip(predicted, rows, strict=True))
    return {"accuracy": correct / len(dev_texts)}


def run_kerashub(args):
    common.configure_tensorflow()
    import keras
    import keras_hub
    import numpy as np

    keras.utils.set_random_seed(args.seed or 0)
    texts, labels = read_task(args.train_file)
    dev_texts, dev_labels = read_task(args.dev_file)
    names = sorted(set(labels))
    classifier = keras_hub.models.BertTextClassifier.from_preset(args.kerashub_preset,
                                                                 num_classes=len(names))
    classifier.fit(x=texts, y=np.array([names.index(label) for label in labels]),
                   batch_size=args.batch_size, epochs=args.epochs, verbose=0)
    _, accuracy = classifier.evaluate(x=dev_texts, y=np.array([names.index(label) for label in dev_labels]),
                                      batch_size=args.batch_size, verbose=0)
    return {"accuracy": float(accuracy)}


def write_kerashub_preset(directory, max_seq_length):
    """The MiniLM checkpoint as a KerasHub preset (backbone, tokenizer, classifier with a preprocessor of
    `max_seq_length`), written in a process of its own so no peer's timing includes it."""
    from keras_bert import BertClassifier
    from keras_bert.checkpoints.keras_hub import save_keras_hub

    clf = BertClassifier.from_pretrained(inputs.minilm_dir(), num_classes=4, seq_length=max_seq_length)
    return save_keras_hub(clf, directory)


def command_line():
    parser = common.argument_parser(__doc__)
    parser.add_argument("--peers", type=common.comma_separated(), default=",".join(PEERS))
    parser.add_argument("--rounds", type=int, default=1, help="each peer this many times, interleaved")
    parser.add_argument("--per_class_train", type=int, default=64)
    parser.add_argument("--per_class_dev", type=int, default=32)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning_rate", type=float, default=5e-5, help="the peak rate of every peer "
                        "(BertClassifier.compile()'s and KerasHub's default)")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--seeds", type=common.comma_separated(int), default=None,
                        help="run each peer once per seed (weights of the new head, dropout, data order; "
                        "the data split stays the same); default: each peer's own seed (the recipe's --seed "
                        "default, 0 elsewhere)")
    parser.add_argument("--seed", type=int, help=common.HIDDEN)
    # Set by the parent for the peers' processes.
    parser.add_argument("--peer", choices=PEERS, help=common.HIDDEN)
    parser.add_argument("--work_dir", help=common.HIDDEN)
    parser.add_argument("--train_file", help=common.HIDDEN)
    parser.add_argument("--dev_file", help=common.HIDDEN)
    parser.add_argument("--kerashub_preset", help=common.HIDDEN)
    return parser


RUNNERS = {"fit": run_fit, "torch": run_torch, "kerashub": run_kerashub,
           **{peer: (lambda args, peer=peer: run_recipe(args, peer)) for peer in RECIPE_FLAGS}}


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.peer:  # a peer's process: run it, print its result line
        common.emit(dict(peer=args.peer, **RUNNERS[args.peer](args)))
        return
    work_dir = tempfile.mkdtemp(prefix="finetune_e2e_")
    train_file, dev_file = write_task(work_dir, args.per_class_train, args.per_class_dev)
    shared = [f"--work_dir={work_dir}", f"--train_file={train_file}", f"--dev_file={dev_file}",
              f"--batch_size={args.batch_size}", f"--epochs={args.epochs}",
              f"--learning_rate={args.learning_rate}", f"--max_seq_length={args.max_seq_length}"]
    if "kerashub" in args.peers:
        preset = write_kerashub_preset(os.path.join(work_dir, "hub"), args.max_seq_length)
        shared.append(f"--kerashub_preset={preset}")
    print(f"{common.machine_description()}; train {len(read_task(train_file)[0])}, dev "
          f"{len(read_task(dev_file)[0])} texts", flush=True)
    for round_ in range(args.rounds):
        for seed in args.seeds or [None]:
            for peer in args.peers:
                seeded = [] if seed is None else [f"--seed={seed}"]
                start = time.perf_counter()
                result = common.run_subprocess("finetune_end_to_end", [f"--peer={peer}", *shared, *seeded],
                                               timeout=1800)
                result["wall_s"] = round(time.perf_counter() - start, 1)
                print(json.dumps(dict(round=round_, seed=seed, **result)), flush=True)


if __name__ == "__main__":
    main()
