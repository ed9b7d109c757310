"""Extends a checkpoint's WordPiece vocab with the pieces that shorten a domain's text most.

    keras-bert extend_vocab --init_checkpoint=DIR --input_files='domain/*.txt' \\
        --num_new_tokens=1000 --output_dir=OUT

New tokens fill the vocab's [unusedK] slots first, then are appended; their word-embedding and MLM-bias
rows start as the mean of the rows of the pieces the old vocab split them into. OUT holds vocab.txt and the
weights + config in the input's format (heads kept), ready for `recipes.pretrain --init_checkpoint=OUT`.
"""

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

shared_flags.define_one("init_checkpoint", help="The checkpoint to extend (any format), vocab.txt beside it.")
shared_flags.define_one("input_files", help="Comma-separated domain text files or globs.")
flags.DEFINE_integer("num_new_tokens", 1000, "How many WordPieces to add.")
shared_flags.check("num_new_tokens", shared_flags.at_least(1))
shared_flags.define_one("output_dir", help="Where to write the extended checkpoint.")
shared_flags.required("init_checkpoint", "input_files", "output_dir")
shared_flags.define("do_lower_case", "max_lines", "min_frequency", "overwrite")
FLAGS = flags.FLAGS


def main(argv):
    del argv
    from keras_bert.tasks.extend_vocab import extend_checkpoint_vocab

    with common.claim_output("output_dir", "dir", globs=["input_files"], paths=["init_checkpoint"]), \
            common.flag_errors("init_checkpoint", "input_files",
                               *(["do_lower_case"] if FLAGS["do_lower_case"].present else [])):
        result = extend_checkpoint_vocab(
            FLAGS.init_checkpoint, FLAGS.input_files, FLAGS.num_new_tokens, FLAGS.output_dir,
            lower_case=FLAGS.do_lower_case, max_lines=FLAGS.max_lines, min_frequency=FLAGS.min_frequency,
            overwrite=FLAGS.overwrite)
    extension = result.extension
    print(f"Added {len(extension.new_ids)} tokens ({extension.num_unused_filled} in [unusedK] slots), "
          f"vocab {extension.old_size} -> {len(extension.vocab)}; domain tokens per word "
          f"{result.tokens_per_word_before:.4f} -> {result.tokens_per_word_after:.4f}")
    print(f"Extended checkpoint: {result.path} "
          f"(continue with recipes.pretrain --init_checkpoint={result.path})")


if __name__ == "__main__":
    logs.run(main)
