"""Learns a WordPiece vocab.txt from text files, split exactly as keras_bert's BertTokenizer splits words.

    keras-bert build_vocab --input_files='corpus/*.txt' --output_file=vocab.txt \
        --vocab_size=30522 --do_lower_case=true

The vocab starts with [PAD] [UNK] [CLS] [SEP] [MASK] (ids 0-4), then single characters (word-initial and
"##" forms, most frequent first), then learned pieces in the order they were learned.
"""

from absl import flags, logging

from keras_bert.text import vocab as vocab_lib
from keras_bert.text import vocab_learner
from recipes import common, logs
from recipes import flags as shared_flags

shared_flags.define("input_files")
shared_flags.define_one("output_file", help="Where to write vocab.txt.")
shared_flags.required("input_files", "output_file")
shared_flags.define("vocab_size")
shared_flags.define("do_lower_case", "max_lines", "min_frequency", "overwrite")
flags.DEFINE_integer("max_unique_chars", 1000, "Keep only the most frequent characters.")
shared_flags.check("max_unique_chars", shared_flags.at_least(1))
FLAGS = flags.FLAGS


def main(argv):
    del argv
    with common.output_file("output_file", globs=["input_files"]) as tmp:
        vocab = vocab_learner.learn_wordpiece_vocab(
            FLAGS.input_files,
            vocab_size=FLAGS.vocab_size,
            lower_case=common.lower_case(),
            max_lines=FLAGS.max_lines,
            min_frequency=FLAGS.min_frequency,
            max_unique_chars=FLAGS.max_unique_chars,
        )
        vocab_lib.save_vocab(vocab, tmp)
    logging.info("wrote %d tokens to %s", len(vocab), FLAGS.output_file)


if __name__ == "__main__":
    logs.run(main)
