"""Builds pre-training TFRecords (NSP pairs + static masks) from a text corpus, the original's flags.

    keras-bert create_pretraining_data --input_file='corpus/*.txt' \\
        --output_file=out/a.tfrecord,out/b.tfrecord --vocab_file=vocab.txt --max_seq_length=128 \\
        --max_predictions_per_seq=20 --dupe_factor=10

Corpus: UTF-8 text, one sentence per line, a blank line between documents. One process: every sentence is
tokenized once with tf-text (batches in a parallel tf.data map); the NSP pairs of all documents and all
--dupe_factor passes are cut at once in numpy, with the original's rules, random B segments drawn from the
whole corpus; the shuffled examples are split into one consecutive run per output file, and chunks of them
are packed, masked and encoded to tf.train.Example bytes by --num_workers threads while the main thread
writes the files (each under a temporary name, renamed when complete). Same flags and seed, same files,
whatever --num_workers. Without --input_file it uses the default corpus (docstrings of the installed
packages).
"""

import contextlib
import json
import os
import time

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
shared_flags.define_one("input_file", help="Comma-separated input text files/globs (default: the default "
                        "corpus).")
shared_flags.define_one("output_file", "runs/pretraining_data/train.tfrecord",
                        help="Comma-separated output TFRecord files; each is one shard.")
flags.DEFINE_integer("num_output_shards", 1,
                     "With one --output_file: write this many shards NAME-0000i-of-N.")
shared_flags.check("num_output_shards", shared_flags.at_least(1))
shared_flags.define("vocab_file", "do_lower_case", "do_whole_word_mask", "max_seq_length",
                    "max_predictions_per_seq", "masked_lm_prob", "short_seq_prob")
flags.DEFINE_integer("random_seed", 12345, "Random seed.")
flags.DEFINE_integer("dupe_factor", 10, "Passes over the documents, each with different pairs and masks.")
shared_flags.check("dupe_factor", shared_flags.at_least(1))
flags.DEFINE_integer("num_workers", 0, "Threads that build and encode examples (0: one per CPU).")
shared_flags.check("num_workers", shared_flags.at_least(0))
shared_flags.define("overwrite")


def output_files(output_file, num_output_shards):
    outputs = [p.strip() for p in output_file.split(",") if p.strip()]
    if len(outputs) == 1 and num_output_shards > 1:
        outputs = [f"{outputs[0]}-{i:05d}-of-{num_output_shards:05d}" for i in range(num_output_shards)]
    return outputs


def run(files, outputs, vocab_file, config, lower_case=True, num_workers=0):
    """Reads and tokenizes `files`, writes the `outputs` shards. Returns (per-shard statistics, corpus
    summary)."""
    from keras_bert.data import pretraining
    from keras_bert.text import BertTokenizer

    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    return pretraining.create_pretraining_files(files, outputs, tokenizer, config,
                                                source=f"--input_file={','.join(files)}",
                                                threads=num_workers or None)


def main(argv):
    del argv
    from keras_bert import outputs as claims

    outputs = output_files(FLAGS.output_file, FLAGS.num_output_shards)
    inputs = common.output_inputs(globs=["input_file"], paths=["vocab_file"])
    with contextlib.ExitStack() as held:  # every shard claimed before any work; each is renamed in when whole
        for path in outputs:
            held.enter_context(claims.claim(path, inputs, FLAGS.overwrite, "file", f"--output_file={path}",
                                            "output_file"))
        _create(outputs)


def _create(outputs):
    """Writes the pre-training examples of the flags to the `outputs` shards and prints their statistics."""
    from keras_bert.data import default_corpus
    from keras_bert.data.pretraining import PretrainingDataConfig

    files = common.flag_files("input_file") if FLAGS.input_file else [default_corpus.default_corpus_path()]
    lower_case = common.lower_case()
    vocab_file = FLAGS.vocab_file or default_corpus.default_vocab_file(lower_case=lower_case)
    start = time.time()
    config = PretrainingDataConfig(
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        dupe_factor=FLAGS.dupe_factor, whole_word_mask=FLAGS.do_whole_word_mask, seed=FLAGS.random_seed)
    shards, summary = run(files, outputs, vocab_file, config, lower_case, FLAGS.num_workers)
    megabytes = sum(os.path.getsize(f) for f in files) / 1e6
    seconds = time.time() - start
    print(json.dumps(summary, sort_keys=True))
    for shard in shards:
        print(json.dumps(shard, sort_keys=True))
    print(f"Wrote {sum(s['examples'] for s in shards)} examples to {len(outputs)} file(s) from "
          f"{megabytes:.1f} MB of text in {seconds:.1f} s ({megabytes / seconds:.2f} MB/s)")


if __name__ == "__main__":
    logs.run(main)
