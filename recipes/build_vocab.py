"""Learns a WordPiece vocab.txt from text files, split exactly as keras_bert's BertTokenizer splits words.

    python recipes/build_vocab.py --input_files='corpus/*.txt' --output_file=vocab.txt \
        --vocab_size=30522 --do_lower_case=true

The vocab starts with [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4), then single characters (word-initial and
"##" forms, most frequent first), then learned pieces in the order they were learned.
"""

import os
import sys

if not __package__:  # `python recipes/x.py`: import from the repository root, as `python -m recipes.x` does
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from recipes import logs

logs.quiet(__name__)  # before TensorFlow loads

from absl import app, flags, logging

from keras_bert.text import vocab as vocab_lib
from keras_bert.text import vocab_learner
from recipes import common

flags.DEFINE_list("input_files", None, "Comma-separated text files or globs, one example per line.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt.")
flags.DEFINE_integer("vocab_size", 30522, "Number of tokens in the vocab (reserved tokens included).")
flags.DEFINE_bool("do_lower_case", None, "Learn an uncased vocab (lower-case + strip accents first); default: "
                  "true.")
flags.DEFINE_integer("max_lines", None, "Read at most this many lines (default: all).")
flags.DEFINE_integer("min_frequency", 2, "A learned piece must occur at least this many times.")
flags.DEFINE_integer("max_unique_chars", 1000, "Keep only the most frequent characters.")
common.define_overwrite_flag()
FLAGS = flags.FLAGS


def main(argv):
    del argv
    if not FLAGS.input_files or not FLAGS.output_file:
        raise app.UsageError("--input_files and --output_file are required.")
    with common.output_file("output_file", globs=["input_files"]) as tmp:
        vocab = vocab_learner.learn_wordpiece_vocab(
            FLAGS.input_files,
            vocab_size=FLAGS.vocab_size,
            lower_case=FLAGS.do_lower_case is not False,
            max_lines=FLAGS.max_lines,
            min_frequency=FLAGS.min_frequency,
            max_unique_chars=FLAGS.max_unique_chars,
        )
        vocab_lib.save_vocab(vocab, tmp)
    logging.info("wrote %d tokens to %s", len(vocab), FLAGS.output_file)


if __name__ == "__main__":
    logs.run(main)
