"""Serving latency of the span labeler's decoded answers vs its logits, in the same exported SavedModel.

  python -m benchmarks.squad_serving [--size=base] [--batch_sizes=1,8] [--repeats=5]

A BertSpanLabeler (random weights, BERT's uncased vocab, seq 128, run_squad's doc_stride 128 and
max_query_length 64) is exported with `keras_bert.export` and loaded with `tf.saved_model.load`. Each context
is ~200 words, so it needs two windows. Per batch size:
  answers    serving_default: question + context strings -> tokenization, doc-stride windows, the encoder
             on all windows at once, n-best decoding, answer strings and character offsets;
  logits     serve_token_ids of the same SavedModel on the same windows (packed beforehand): the encoder
             and span head alone, what a client decoding the logits itself would call;
  overhead   answers - logits: everything the answer signature adds (tokenize, window, decode).
Latency is the median of `--repeats` calls after two warm-up calls; the two signatures' calls alternate, so
a load change on a shared machine hits both alike.
"""

import statistics
import tempfile
import time

from benchmarks import common
from benchmarks.inputs import WORDS, random_encoder


def questions_and_contexts(batch_size):
    """`batch_size` distinct questions and ~200-word contexts (two 128-piece windows each)."""
    questions, contexts = [], []
    for i in range(batch_size):
        words = WORDS[i % len(WORDS):] + WORDS[: i % len(WORDS)]
        questions.append(f"what does the {words[0]} graph read before it answers?")
        contexts.append(" ".join(words + words[:120]))
    return questions, contexts


def alternating_latency(fns, repeats):
    """Median seconds of each of `fns` over `repeats` rounds calling each once per round (two warm-up
    rounds)."""
    times = [[] for _ in fns]
    for round_index in range(repeats + 2):
        for fn, spent in zip(fns, times, strict=True):
            start = time.perf_counter()
            fn()
            if round_index >= 2:
                spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]


def run(size, batch_sizes, repeats):
    tf = common.configure_tensorflow()
    from keras_bert.export import export_saved_model
    from keras_bert.tasks.squad.answers import AnswerRules, question_context_windows
    from keras_bert.tasks.squad.model import BertSpanLabeler

    encoder, preprocessor = random_encoder(size)
    model = BertSpanLabeler(encoder, preprocessor=preprocessor)
    rules = AnswerRules()
    results = {}
    with tempfile.TemporaryDirectory() as export_dir:
        start = time.perf_counter()
        version_dir = export_saved_model(model, export_dir, preprocessor, warmup=False, answer_rules=rules)
        results["export_s"] = time.perf_counter() - start
        loaded = tf.saved_model.load(version_dir)
        answers = loaded.signatures["serving_default"]
        logits = loaded.signatures["serve_token_ids"]
        for batch_size in batch_sizes:
            questions, contexts = (tf.constant(x) for x in questions_and_contexts(batch_size))
            windows, _ = question_context_windows(preprocessor, questions, contexts, rules)
            answer_s, logits_s = alternating_latency(
                [lambda q=questions, c=contexts: answers(question=q, context=c),
                 lambda w=windows: logits(**w)],
                repeats)
            answer_ms, logits_ms = answer_s * 1e3, logits_s * 1e3
            results.update({f"windows_b{batch_size}": int(windows["input_word_ids"].shape[0]),
                            f"answers_b{batch_size}_ms": answer_ms, f"logits_b{batch_size}_ms": logits_ms,
                            f"overhead_b{batch_size}_ms": answer_ms - logits_ms})
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in results.items()}


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--size", choices=sorted(common.SIZES), default="base")
    parser.add_argument("--batch_sizes", type=common.comma_separated(int), default=[1, 8])
    parser.add_argument("--repeats", type=int, default=5)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    common.emit(dict(kind="squad_serving", size=args.size, machine=common.machine_description(),
                     **run(args.size, args.batch_sizes, args.repeats)))


if __name__ == "__main__":
    main()
