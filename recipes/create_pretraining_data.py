"""Builds pre-training TFRecords (NSP pairs + static masks) from a text corpus, the original's flags.

    python -m recipes.create_pretraining_data --input_file='corpus/*.txt' --output_file=out/a.tfrecord,out/b.tfrecord \\
        --vocab_file=vocab.txt --max_seq_length=128 --max_predictions_per_seq=20 --dupe_factor=10

Corpus: UTF-8 text, one sentence per line, a blank line between documents. Each output file is built from
its own share of the documents (every n-th) in its own process: tokenized with tf-text, paired and masked
as the original `create_pretraining_data.py`, and written under a temporary name then renamed.
Without --input_file it uses the default corpus (docstrings of the installed packages).
"""

import json
import multiprocessing
import os
import time

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Comma-separated input text files/globs (default: the default corpus).")
flags.DEFINE_string("output_file", "runs/pretraining_data/train.tfrecord",
                    "Comma-separated output TFRecord files; each is one shard.")
flags.DEFINE_integer("num_output_shards", 1, "With one --output_file: write this many shards NAME-0000i-of-N.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt (default: the default corpus's learned vocab).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents.")
flags.DEFINE_bool("do_whole_word_mask", False, "Mask all the WordPieces of a word together.")
flags.DEFINE_integer("max_seq_length", 128, "Packed sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Masked positions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed.")
flags.DEFINE_integer("dupe_factor", 10, "Passes over the documents, each with different pairs and masks.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens masked.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of a shorter target length.")
flags.DEFINE_integer("num_workers", 0, "Processes (0: min(shards, CPUs)).")


def output_files(output_file, num_output_shards):
    outputs = [p.strip() for p in output_file.split(",") if p.strip()]
    if len(outputs) == 1 and num_output_shards > 1:
        outputs = [f"{outputs[0]}-{i:05d}-of-{num_output_shards:05d}" for i in range(num_output_shards)]
    return outputs


def build_shard(args):
    """Reads every `num_shards`-th document (from `shard`), writes one TFRecord file. Returns its statistics."""
    (files, output, shard, num_shards, vocab_file, lower_case, whole_word, max_seq_length, max_predictions,
     masked_lm_prob, short_seq_prob, dupe_factor, seed) = args
    from keras_bert.data import pretraining
    from keras_bert.text import BertTokenizer

    tokenizer = BertTokenizer(vocab_file, lower_case=lower_case)
    stats = {}
    documents = [d for i, d in enumerate(pretraining.read_documents(files, stats)) if i % num_shards == shard]
    documents = pretraining.tokenize_documents(documents, tokenizer)
    examples = pretraining.create_pretraining_examples(
        documents, max_seq_length, max_predictions, masked_lm_prob, short_seq_prob, dupe_factor,
        tokenizer.vocab_size, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id, tokenizer.special_ids,
        seed=seed * 1000 + shard, source=f"{','.join(files)} (shard {shard} of {num_shards})",
        word_start=pretraining.word_start_table(tokenizer.vocab) if whole_word else None)
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    count = pretraining.write_examples(examples, output)
    return dict(pretraining.example_statistics(examples), output=output, examples=count, documents=len(documents),
                empty_files=stats.get("empty_files", 0))


def run(files, outputs, vocab_file, num_workers=0, **options):
    """Builds all shards (in parallel processes when more than one). Returns per-shard statistics."""
    jobs = [(files, output, i, len(outputs), vocab_file, options["lower_case"], options["whole_word"],
             options["max_seq_length"], options["max_predictions"], options["masked_lm_prob"],
             options["short_seq_prob"], options["dupe_factor"], options["seed"]) for i, output in enumerate(outputs)]
    workers = min(len(jobs), num_workers or os.cpu_count() or 1)
    if workers == 1:
        return [build_shard(job) for job in jobs]
    # Fresh interpreters: TensorFlow's runtime does not survive fork.
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        return pool.map(build_shard, jobs)


def main(argv):
    del argv
    from keras_bert.data import default_corpus, pretraining

    files = (pretraining.expand_patterns(FLAGS.input_file, "input_file") if FLAGS.input_file
             else [default_corpus.default_corpus_path()])
    vocab_file = FLAGS.vocab_file or default_corpus.default_vocab_file(lower_case=FLAGS.do_lower_case)
    outputs = output_files(FLAGS.output_file, FLAGS.num_output_shards)
    start = time.time()
    stats = run(files, outputs, vocab_file, FLAGS.num_workers, lower_case=FLAGS.do_lower_case,
                whole_word=FLAGS.do_whole_word_mask, max_seq_length=FLAGS.max_seq_length,
                max_predictions=FLAGS.max_predictions_per_seq, masked_lm_prob=FLAGS.masked_lm_prob,
                short_seq_prob=FLAGS.short_seq_prob, dupe_factor=FLAGS.dupe_factor, seed=FLAGS.random_seed)
    megabytes = sum(os.path.getsize(f) for f in files) / 1e6
    seconds = time.time() - start
    for shard in stats:
        print(json.dumps(shard, sort_keys=True))
    print(f"Wrote {sum(s['examples'] for s in stats)} examples to {len(outputs)} file(s) from {megabytes:.1f} MB "
          f"of text in {seconds:.1f} s ({megabytes / seconds:.2f} MB/s)")


if __name__ == "__main__":
    app.run(main)
