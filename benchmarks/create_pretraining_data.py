"""create_pretraining_data throughput (MB of text per second): keras_bert vs the original's pure-Python
algorithm, same settings, same machine, same run.

    python -m benchmarks.create_pretraining_data [--megabytes=56] [--reference_megabytes=2] [--dupe_factor=10]

Corpus: the default corpus (7.8 MB of docstring prose), repeated to --megabytes with each copy's documents
in a different seeded order, cut at a document boundary. Settings: the original's defaults (seq 128, 20
predictions, masked_lm_prob 0.15, short_seq_prob 0.1, --dupe_factor 10), uncased MiniLM/BERT vocab.

  * keras_bert: `keras_bert.data.pretraining.create_pretraining_files` (what
    recipes/create_pretraining_data.py runs) on the whole corpus, one output file, one thread per CPU: tf-text
    tokenization, numpy NSP pairs/masks, numpy-encoded tf.train.Examples.
  * reference: the original's per-line pipeline in Python: the pure-Python BERT tokenizer (transformers'
    legacy BasicTokenizer + WordpieceTokenizer, a port of Google's FullTokenizer), the original NSP pairing
    (`create_instances_from_document` of tests/data/pretraining_reference.py), per-instance masking
    (shuffled candidates, 80/10/10) and one `tf.train.Example` per instance. Its cost is per line and per
    instance, so it is timed on the first --reference_megabytes of the same corpus and its MB/s applies to any
    size (the output says so).

Both are timed from file names to closed TFRecord files, Python imports excluded, tokenizer setup included.
Prints one JSON line (MB/s of both, the speed-up, the load average before and after).
"""

import json
import os
import random
import tempfile
import time

from benchmarks import common, inputs


def build_corpus(path, megabytes):
    """Writes the default corpus repeated up to `megabytes` (copy i: documents shuffled with seed i)."""
    from keras_bert.data.default_corpus import default_corpus_path

    with open(default_corpus_path(), encoding="utf-8") as f:
        documents = [d for d in f.read().split("\n\n") if d.strip()]
    limit, size, copy = int(megabytes * 1e6), 0, 0
    with open(path, "w", encoding="utf-8") as f:
        while size < limit:
            order = list(documents)
            if copy:
                random.Random(copy).shuffle(order)
            for document in order:
                text = document + "\n\n"
                size += len(text.encode("utf-8"))
                f.write(text)
                if size >= limit:
                    break
            copy += 1
    return size / 1e6


def reference(corpus, vocab_file, output, dupe_factor, max_seq_length, max_predictions=20, seed=12345):
    """The original algorithm, one Python object at a time."""
    import tensorflow as tf
    from transformers.models.bert.tokenization_bert_legacy import (
        BasicTokenizer,
        WordpieceTokenizer,
        load_vocab,
    )

    from keras_bert.data.pretraining import read_documents
    from tests.data.pretraining_reference import create_instances_from_document

    vocab = load_vocab(vocab_file)
    basic, wordpiece = BasicTokenizer(do_lower_case=True), WordpieceTokenizer(vocab, "[UNK]")

    def tokenize(line):  # the original FullTokenizer.tokenize + convert_tokens_to_ids
        return [vocab[piece] for word in basic.tokenize(line) for piece in wordpiece.tokenize(word)]

    documents = [[tokenize(line) for line in document] for document in read_documents([corpus])]
    documents = [[s for s in d if s] for d in documents]
    documents = [d for d in documents if d]
    rng = random.Random(seed)
    rng.shuffle(documents)
    cls, sep, mask = vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"]
    vocab_size = len(vocab)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(create_instances_from_document(documents, index, max_seq_length, 0.1, rng))
    rng.shuffle(instances)

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    with tf.io.TFRecordWriter(output) as writer:
        for tokens_a, tokens_b, is_random in instances:
            tokens = [cls, *tokens_a, sep, *tokens_b, sep]
            segments = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
            candidates = [i for i, t in enumerate(tokens) if t not in (cls, sep)]
            rng.shuffle(candidates)
            count = min(max_predictions, max(1, int(round(len(tokens) * 0.15))))
            picked = sorted(candidates[:count])
            labels = [tokens[i] for i in picked]
            for i in picked:
                roll = rng.random()
                tokens[i] = (mask if roll < 0.8 else tokens[i] if roll < 0.9
                             else rng.randint(0, vocab_size - 1))
            pad = max_seq_length - len(tokens)
            padp = max_predictions - len(picked)
            feature = {
                "input_ids": ints(tokens + [0] * pad), "input_mask": ints([1] * len(tokens) + [0] * pad),
                "segment_ids": ints(segments + [0] * pad), "masked_lm_positions": ints(picked + [0] * padp),
                "masked_lm_ids": ints(labels + [0] * padp),
                "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
                    value=[1.0] * len(picked) + [0.0] * padp)),
                "next_sentence_labels": ints([int(is_random)]),
            }
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return len(instances)


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--megabytes", type=float, default=56.0,
                        help="Corpus size for keras_bert (the default corpus repeated, reshuffled).")
    parser.add_argument("--reference_megabytes", type=float, default=2.0,
                        help="The reference runs on this many MB from the corpus's start.")
    parser.add_argument("--shards", type=int, default=1, help="keras_bert output files.")
    parser.add_argument("--vocab_file",
                        help="WordPiece vocab.txt (default: the bundled MiniLM uncased vocab).")
    parser.add_argument("--dupe_factor", type=int, default=10, help="Passes over the documents.")
    parser.add_argument("--max_seq_length", type=int, default=128, help="Packed sequence length.")
    parser.add_argument("--num_workers", type=int, default=0, help="keras_bert threads (0: one per CPU).")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    import tensorflow as tf  # noqa: F401 - imported before the clocks start, for both
    import transformers.models.bert.tokenization_bert_legacy  # noqa: F401

    import keras_bert.data.pretraining  # noqa: F401
    import keras_bert.text  # noqa: F401

    vocab = args.vocab_file or inputs.vocab_file()
    with tempfile.TemporaryDirectory(prefix="bench_cpd_") as work:  # ~25 MB of records per MB of text
        results = measure(work, vocab, args)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}))


def measure(work, vocab, args):
    """Builds the corpora in `work`, runs both pipelines with the settings of `args` (the parsed flags),
    returns the results dict."""
    corpus, reference_corpus = os.path.join(work, "corpus.txt"), os.path.join(work, "reference_corpus.txt")
    megabytes = build_corpus(corpus, args.megabytes)
    reference_megabytes = build_corpus(reference_corpus, min(args.reference_megabytes, args.megabytes))
    results = {"corpus_mb": round(megabytes, 2), "reference_corpus_mb": round(reference_megabytes, 2),
               "dupe_factor": args.dupe_factor, "max_seq_length": args.max_seq_length, "cpus": os.cpu_count(),
               "load_before": round(os.getloadavg()[0], 2)}

    from keras_bert.data import pretraining
    from keras_bert.text import BertTokenizer

    start = time.perf_counter()
    config = pretraining.PretrainingDataConfig(max_seq_length=args.max_seq_length, max_predictions_per_seq=20,
                                               masked_lm_prob=0.15, short_seq_prob=0.1,
                                               dupe_factor=args.dupe_factor, seed=12345)
    outputs = [os.path.join(work, f"ours-{i}.tfrecord") for i in range(args.shards)]
    shards, _ = pretraining.create_pretraining_files([corpus], outputs, BertTokenizer(vocab, lower_case=True),
                                                     config, threads=args.num_workers or None)
    seconds = time.perf_counter() - start
    results.update(keras_bert_s=round(seconds, 1), keras_bert_mb_per_s=megabytes / seconds,
                   keras_bert_examples=sum(s["examples"] for s in shards),
                   load_after_keras_bert=round(os.getloadavg()[0], 2))

    start = time.perf_counter()
    results["reference_examples"] = reference(reference_corpus, vocab, os.path.join(work, "ref.tfrecord"),
                                              args.dupe_factor, args.max_seq_length)
    seconds = time.perf_counter() - start
    results.update(reference_s=round(seconds, 1), reference_mb_per_s=reference_megabytes / seconds,
                   load_after=round(os.getloadavg()[0], 2))
    results["speedup"] = results["keras_bert_mb_per_s"] / results["reference_mb_per_s"]
    results["note"] = (f"reference timed on the first {reference_megabytes:.1f} MB (its cost is per line and "
                       f"per instance); keras_bert on all {megabytes:.1f} MB")
    return results


if __name__ == "__main__":
    main()
