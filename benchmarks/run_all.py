"""`make bench`: every benchmark, one table, ratios against the peers measured in the same run.

    python -m benchmarks.run_all [--quick] [--only=pretrain,serving,...] [--output=benchmarks/results.md]

Each configuration runs in its own subprocess (benchmarks/common.py says why), one after another, so the
figures share the machine state of this run. The 1-minute load average before and after each run is in the
table: on a 2-core machine a load well above 2 means other processes took CPU time and the figures are low.
Writes the table, the machine description and the loss curves to `--output` (Markdown) and prints the table.
"""

import datetime
import json
import os
import re
import statistics
import subprocess
import sys

from benchmarks import common, serving_peers
from benchmarks.pretrain_throughput import train_flops_per_token

SECTIONS = ("peak", "pretrain", "bf16", "loss_curve", "steady", "serving", "serving_onnx", "first_answer",
            "finetune", "padding", "tokenize", "create_pretraining_data")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Peer benchmarks owned by the text and pre-training code (file, how it is run); their printed output is kept.
FOREIGN = {"tokenize": ("benchmarks/tokenization.py", ["-m", "benchmarks.tokenization"]),
           "create_pretraining_data": ("benchmarks/create_pretraining_data.py",
                                       ["-m", "benchmarks.create_pretraining_data"])}
# Smaller runs of those for --quick.
QUICK_ARGS = {"create_pretraining_data": ["--megabytes=3", "--reference_megabytes=0.5", "--dupe_factor=2"]}
NAMES = {"ours": "keras_bert", "kerashub": "KerasHub", "transformers": "transformers"}


class Table:
    """Rows of the one results table; `add` returns the row so ratios can be filled in later."""

    HEADER = ("benchmark", "config", "implementation", "result", "vs peers", "MFU", "load before/after")

    def __init__(self):
        self.rows = []

    def add(self, benchmark, config, impl, result, ratios="", mfu="", run=None):
        load = f"{run['load_before']:.1f} / {run['load_after']:.1f}" if run and "load_after" in run else ""
        self.rows.append([benchmark, config, impl, result, ratios, mfu, load])

    def markdown(self):
        lines = ["| " + " | ".join(self.HEADER) + " |", "|" + "---|" * len(self.HEADER)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        return "\n".join(lines)

    def text(self):
        widths = [max(len(str(r[i])) for r in [self.HEADER] + self.rows) for i in range(len(self.HEADER))]
        return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
                         for row in [self.HEADER] + self.rows)


def ratio(a, b, suffix=""):
    return f"{a / b:.2f}x {suffix}".strip() if a and b else ""


def _run(module, args, errors, timeout=900):
    print(f"... {module} {' '.join(args)}", flush=True)
    result = common.run_subprocess(module, args, timeout=timeout)
    if "error" in result:
        errors.append(result["error"])
        print(result["error"], flush=True)
        return None
    return result


def bench_peak(table, errors, quick):
    peaks = {}
    for dtype in ("float32", "bfloat16"):
        run = _run("pretrain_throughput", ["--impl=peak", f"--dtype={dtype}"], errors)
        if run:
            peaks[dtype] = run["gflops"]
            kernels = ", ".join(f"{k} {v}" for k, v in run["by_kernel"].items())
            table.add("matmul peak", f"2048^3 {dtype}", "TF (best of XLA, TF kernels)",
                      f"{run['gflops']} GFLOP/s ({kernels})",
                      ratio(peaks.get("bfloat16"), peaks.get("float32"),
                            "fp32") if dtype == "bfloat16" else "",
                      run=run)
    return peaks


def bench_pretrain(table, errors, quick, peaks):
    sizes = ("mini",) if quick else ("mini", "base4")
    for size in sizes:
        steps = {"mini": 4, "base4": 2, "base": 1}[size] if not quick else 1
        runs = {}
        # KerasHub in bf16 both with XLA and on TF's kernels: its fastest configuration is the peer figure.
        for impl, dtype, jit in (("ours", "float32", "auto"), ("ours", "mixed_bfloat16", "auto"),
                                 ("kerashub", "float32", "auto"), ("kerashub", "mixed_bfloat16", "auto"),
                                 ("kerashub", "mixed_bfloat16", "false"),
                                 ("transformers", "float32", "auto")):
            run = _run("pretrain_throughput", [f"--impl={impl}", f"--size={size}", f"--dtype={dtype}",
                                               f"--steps={steps}", f"--jit_compile={jit}"], errors)
            runs[impl, dtype if jit == "auto" else f"{dtype}, no XLA"] = run
        ours = runs["ours", "float32"]
        layers, hidden, heads, _ = common.SIZES[size]
        config = f"{size} L{layers} H{hidden} A{heads}, b32 s128"
        for (impl, dtype), run in runs.items():
            if run is None:
                continue
            tps = run["tokens_per_s"]
            if impl == "ours" and dtype == "float32":
                ratios = "; ".join(r for r in (
                    ratio(tps, (runs["kerashub", "float32"] or {}).get("tokens_per_s"), "KerasHub"),
                    ratio(tps, (runs["transformers", "float32"] or {}).get("tokens_per_s"), "transformers"))
                    if r)
            elif impl == "ours":  # bf16: vs our float32 and KerasHub's fastest configuration
                kerashub = max((r["tokens_per_s"] for (i, _), r in runs.items() if i == "kerashub" and r),
                               default=None)
                ratios = "; ".join(r for r in (ratio(tps, (ours or {}).get("tokens_per_s"), "ours fp32"),
                                               ratio(tps, kerashub, "KerasHub's best")) if r)
            else:
                ratios = ratio(tps, (ours or {}).get("tokens_per_s"), "ours fp32")
            peak = peaks.get("bfloat16" if "bfloat16" in dtype else "float32")
            mfu = f"{100 * run['model_gflops'] / peak:.0f}%" if peak else ""
            name = NAMES[impl] + (" (MLM only, no NSP)" if impl == "kerashub" else "")
            if impl == "ours":
                name += f" execution={run['execution']}"
            table.add("pre-train MLM+NSP", f"{config} {dtype}", name, f"{tps:,.0f} tokens/s, {_spread(run)}",
                      ratios, mfu, run)


def bench_steady(table, errors, quick):
    """Each epoch its own `fit` call, timed to the call's return, with tf.data's autotuning on (tf.data's
    default) and as keras_bert's fit leaves it (off): the once bimodal epoch (keras_bert/data/options.py)."""
    calls = 3 if quick else 6
    for autotune in ("on", "default"):
        run = _run("pretrain_throughput", ["--impl=ours", "--size=mini", "--dtype=float32", "--steps=8",
                                           f"--epochs={calls}", "--fit_per_epoch",
                                           f"--tf_data_autotune={autotune}"], errors)
        if run is None:
            continue
        seconds = ", ".join(f"{8 * t:.2f}" for t in run["epoch_step_s"])
        impl = ("dataset autotune on (tf.data's default)" if autotune == "on"
                else "keras_bert fit (autotune off)")
        table.add("fit() calls, 8 steps each", "mini L4 H256, b32 s128 float32", impl,
                  f"s per call: {seconds}; max/min {run['spread']:.2f}", "", "", run)


def _spread(run):
    """The run's timed epochs: 'spread max/min (min-median-max s/step)'."""
    times = run["epoch_step_s"]
    return f"spread {run['spread']:.2f} ({min(times):.2f}-{run['step_s']:.2f}-{max(times):.2f} s/step)"


# (dtype, --jit_compile) of `ours` in the execution comparison: the first is the reference (float32 as the
# library runs it), then bf16 every way (one of them is the library's choice).
EXECUTIONS = (("float32", "auto"), ("mixed_bfloat16", "fusions"), ("mixed_bfloat16", "false"),
              ("mixed_bfloat16", "true"))


def bench_bf16(table, errors, quick, rounds=2):
    """`ours` pre-training in each dtype x execution (auto = the library's choice on this machine), the
    configurations interleaved (A, B, C, A, B, C) for `rounds` rounds so that load from other processes
    falls on all of them alike; per configuration the best round's median epoch, and its ratio to float32
    with the library's default execution measured in the same round."""
    sizes = ("mini",) if quick else ("mini", "base4")
    for size in sizes:
        steps = {"mini": 3, "base4": 1}[size]
        runs = {execution: [] for execution in EXECUTIONS}
        for _ in range(1 if quick else rounds):
            for dtype, jit in EXECUTIONS:
                runs[dtype, jit].append(_run("pretrain_throughput", [
                    "--impl=ours", f"--size={size}", f"--dtype={dtype}", f"--jit_compile={jit}",
                    f"--steps={steps}", "--epochs=5"], errors))
        layers, hidden, heads, _ = common.SIZES[size]
        reference = runs[EXECUTIONS[0]]
        for (dtype, jit), results in runs.items():
            ratios = [r["tokens_per_s"] / ref["tokens_per_s"]
                      for r, ref in zip(results, reference, strict=True) if r and ref]
            done = [r for r in results if r]
            if not done:
                continue
            best = max(done, key=lambda r: r["tokens_per_s"])
            ratio_text = "" if (dtype, jit) == EXECUTIONS[0] else (
                f"{max(ratios):.2f}x fp32 default (rounds: {', '.join(f'{x:.2f}' for x in ratios)})" if ratios
                else "")
            table.add("pre-train, execution", f"{size} L{layers} H{hidden} A{heads}, b32 s128 {dtype}",
                      f"keras_bert execution={best['execution']}"
                      + (" (library's choice)" if best["library_choice"] else ""),
                      f"{best['tokens_per_s']:,.0f} tokens/s, {_spread(best)}, CPU "
                      f"{statistics.median(best['epoch_cpu_s']):.2f} s/step", ratio_text, run=best)


def bench_loss_curve(table, errors, quick):
    curves = {}
    steps = 8 if quick else 20
    for dtype in ("float32", "mixed_bfloat16"):
        run = _run("pretrain_throughput", ["--impl=loss_curve", f"--dtype={dtype}", f"--steps={steps}"],
                   errors)
        if run:
            curves[dtype] = (run, run["losses"])
    if len(curves) == 2:
        fp32, bf16 = curves["float32"][1], curves["mixed_bfloat16"][1]
        gap = max(abs(a - b) / abs(a) for a, b in zip(fp32, bf16, strict=True))
        table.add("bf16 loss curve", f"mini, {steps} steps, b16", "keras_bert mixed_bfloat16 vs float32",
                  f"loss {fp32[0]:.3f}->{fp32[-1]:.3f} (fp32), {bf16[0]:.3f}->{bf16[-1]:.3f} (bf16)",
                  f"max rel. gap {100 * gap:.1f}%", run=curves["mixed_bfloat16"][0])
    return {dtype: losses for dtype, (_, losses) in curves.items()}


def bench_serving(table, errors, quick):
    size = "mini" if quick else "base"
    ours = _run("serving", ["--impl=ours", f"--size={size}"], errors)
    peer = _run("serving", ["--impl=transformers", f"--size={size}"], errors)
    layers, hidden, _, _ = common.SIZES[size]
    for batch in (1, 8):
        config = f"{size} L{layers} H{hidden}, s128, batch {batch}"
        if ours:
            text, ids, bare = (ours[f"text_b{batch}_ms"], ours[f"token_ids_b{batch}_ms"],
                               ours[f"keras_b{batch}_ms"])
            hf_text = (peer or {}).get(f"text_b{batch}_ms")
            table.add("serving latency", config, "keras_bert SavedModel, raw text", f"{text:.1f} ms",
                      "; ".join(r for r in (ratio(text, bare, "bare encoder (time)"),
                                            ratio(hf_text, text, "faster than transformers")) if r), run=ours)
            table.add("serving latency", config, "keras_bert SavedModel, token ids", f"{ids:.1f} ms",
                      ratio(ids, bare, "bare encoder (time)"), run=ours)
            table.add("serving latency", config, "keras_bert encoder forward (tf.function)", f"{bare:.1f} ms",
                      run=ours)
            table.add("serving latency", config, "keras_bert BertPreprocessor alone",
                      f"{ours[f'tokenize_b{batch}_ms']:.1f} ms", run=ours)
        if peer:
            table.add("serving latency", config, "transformers BertModel + BertTokenizerFast",
                      f"{peer[f'text_b{batch}_ms']:.1f} ms", "", run=peer)
            table.add("serving latency", config, "transformers BertModel forward",
                      f"{peer[f'token_ids_b{batch}_ms']:.1f} ms", run=peer)


def bench_serving_onnx(table, errors, quick):
    """MiniLM-L6 sentence embeddings from raw text vs ONNX Runtime and transformers (serving_peers.py)."""
    run = _run("serving_peers", ["--impl=all", f"--repeats={3 if quick else 20}",
                                 f"--rounds={1 if quick else 2}", f"--client_texts={32 if quick else 160}"],
               errors, timeout=3600)
    for config, impl, result, vs, impl_run in serving_peers.table_rows(run or {}, errors):
        table.add("sentence embedding, raw text", config, impl, result, vs, run=impl_run or run)


def bench_first_answer(table, errors, quick):
    """A MiniLM-L6 classifier's first answer in fresh processes: import, load, first and steady serve, the
    SavedModel's first request with and without its warm-up, export_litert (first_answer.py)."""
    run = _run("first_answer", [f"--rounds={1 if quick else 3}"], errors, timeout=1800)
    for label, low, median, rounds in (run or {}).get("rows", []):
        result = f"{median} (min {low}, {rounds} processes)" if rounds else low
        table.add("first answer", "MiniLM-L6 classifier, 2 labels", label, result, run=run)


def bench_finetune(table, errors, quick):
    sizes = ("mini",) if quick else ("mini", "base4")
    for size in sizes:
        steps = 1 if quick else {"mini": 3, "base4": 2}[size]
        runs = {impl: _run("finetune", [f"--impl={impl}", f"--size={size}", f"--steps={steps}"], errors)
                for impl in ("ours", "kerashub", "transformers")}
        layers, hidden, _, _ = common.SIZES[size]
        for impl, run in runs.items():
            if run is None:
                continue
            ours = runs["ours"]
            if impl == "ours":
                ratios = "; ".join(r for r in (
                    ratio((runs[p] or {}).get("step_s"), run["step_s"], f"faster than {NAMES[p]}")
                    for p in ("kerashub", "transformers")) if r)
            else:
                ratios = ratio(run["peak_rss_mb"], (ours or {}).get("peak_rss_mb"), "ours' memory")
            table.add("fine-tune classifier", f"{size} L{layers} H{hidden}, b32 s128 fp32", NAMES[impl],
                      f"{run['step_s']:.3f} s/step, peak RSS {run['peak_rss_mb']:,.0f} MiB", ratios, run=run)


def bench_padding(table, errors, quick):
    """Real batches (default corpus / default classification task, seq 128), mini fp32: ours with and without
    --pad_to_multiple_of vs KerasHub on the same padded batches. Pre-training counts real tokens/s."""
    pretrain_steps, finetune_steps = (4, 3) if quick else (24, 12)
    runs = {}
    for impl, multiple in (("ours", 0), ("ours", 32), ("kerashub", 0)):
        runs[impl, multiple] = _run("pretrain_throughput", [
            f"--impl={impl}", "--size=mini", "--data=corpus", f"--steps={pretrain_steps}",
            f"--pad_to_multiple_of={multiple}"], errors)
    for (impl, multiple), run in runs.items():
        if run is None:
            continue
        tps = run["tokens_per_s"]
        ratios = "" if impl == "kerashub" else "; ".join(r for r in (
            ratio(tps, (runs["kerashub", 0] or {}).get("tokens_per_s"), "KerasHub"),
            ratio(tps, (runs["ours", 0] or {}).get("tokens_per_s"), "ours padded") if multiple else "") if r)
        table.add("pre-train, real data",
                  f"mini, default corpus b32 s128 ({100 * run['real_fraction']:.0f}% real "
                  f"tokens), computed {100 * run['computed_fraction']:.0f}%",
                  NAMES[impl] + (f" --pad_to_multiple_of={multiple}" if multiple else ""),
                  f"{tps:,.0f} real tokens/s ({run['step_s']:.2f} s/step)", ratios, run=run)
    runs = {}
    for impl, multiple in (("ours", 0), ("ours", 16), ("kerashub", 0)):
        runs[impl, multiple] = _run("finetune", [f"--impl={impl}", "--size=mini", "--data=task",
                                                 f"--steps={finetune_steps}",
                                                 f"--pad_to_multiple_of={multiple}"],
                                    errors)
    for (impl, multiple), run in runs.items():
        if run is None:
            continue
        ratios = "" if impl == "kerashub" else "; ".join(r for r in (
            ratio((runs["kerashub", 0] or {}).get("step_s"), run["step_s"], "faster than KerasHub"),
            ratio((runs["ours", 0] or {}).get("step_s"), run["step_s"],
                  "faster than padded") if multiple else "")
            if r)
        table.add("fine-tune, real data",
                  f"mini, default task b32 s128 ({100 * run['real_fraction']:.0f}% real "
                  f"tokens), computed {100 * run['computed_fraction']:.0f}%",
                  NAMES[impl] + (f" --pad_to_multiple_of={multiple}" if multiple else ""),
                  f"{run['step_s']:.3f} s/step", ratios, run=run)


def bench_foreign(name, table, errors, quick):
    """Runs a peer's benchmark script and keeps its printed output (and load) for the results file."""
    script, command = FOREIGN[name]
    if not os.path.exists(os.path.join(ROOT, script)):
        table.add(name, "", "", f"not run: {script} does not exist yet")
        return None
    print(f"... {script}", flush=True)
    before = common.load_average()
    command = [*command, *(QUICK_ARGS.get(name, []) if quick else [])]
    proc = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True, timeout=900)
    after = common.load_average()
    # Keep the script's own report, not TF's log lines.
    noise = re.compile(r"^(I0000|E0000|W0000|WARNING|INFO|\s*$)")
    lines = [line for line in proc.stdout.splitlines() if not noise.match(line)]
    run = {"load_before": before, "load_after": after}
    if proc.returncode:
        errors.append(f"{script} failed (rc={proc.returncode}):\n"
                      + "\n".join(proc.stderr.splitlines()[-10:]))
        table.add(name, "", script, "failed (see errors)", run=run)
        return None
    for line in lines:
        if line.startswith("{"):
            _add_json_rates(table, name, json.loads(line), run)
            continue
        # Rows like "<name>  <seconds>  <MB/s>  <ratio>x": one table row each.
        match = re.match(r"^(.*?\S)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+x)\s*$", line)
        if match:
            table.add(name, "", match.group(1), f"{float(match.group(3)):.2f} MB/s", match.group(4), run=run)
    return "\n".join(lines)


def _add_json_rates(table, name, values, run):
    """Rows for a JSON report with `<impl>_mb_per_s` keys: each rate, and its ratio to the others."""
    rates = {key[:-len("_mb_per_s")]: value for key, value in values.items() if key.endswith("_mb_per_s")}
    setting = ", ".join(f"{k} {v}" for k, v in values.items()
                        if k in ("corpus_mb", "reference_corpus_mb", "dupe_factor"))
    for impl, rate in rates.items():
        ratios = "; ".join(ratio(rate, other, peer) for peer, other in rates.items() if peer != impl)
        table.add(name, setting, impl, f"{rate:.3f} MB/s", ratios, run=run)


def write_results(path, table, machine, curves, foreign, errors, quick, started, peaks):
    loads = [float(cell.split(" / ")[i]) for row in table.rows if row[-1] for cell in [row[-1]]
             for i in (0, 1)]
    worst = max(loads, default=0.0)
    quiet = worst <= machine["cores"] + 0.5
    versions = ", ".join(f"{k} {v}" for k, v in machine["versions"].items())
    out = [
        "# keras_bert benchmarks",
        "",
        f"Measured {started:%Y-%m-%d %H:%M} UTC with `make bench` (`python -m benchmarks.run_all"
        f"{' --quick' if quick else ''}`).",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores (benchmarks use {machine['threads_used']} "
        f"threads), {machine['memory_gib']} GiB RAM, SIMD: {machine['simd'] or 'none listed'}; "
        f"Python {machine['python']}, {versions}.",
        "",
        f"Machine state: {'quiet' if quiet else 'SHARED'} — the highest 1-minute load average seen around "
        f"a run was {worst:.1f} on {machine['cores']} cores"
        + ("." if quiet
           else "; other processes took CPU time, so absolute figures are low and ratios noisy."),
        "",
        table.markdown(),
        "",
        "Notes:",
        "- tokens/s counts all batch x 128 positions per step; pre-training steps are the real `model.fit` "
        "(AdamW; the train step XLA-compiled or not as the library chooses for the dtype on this machine, "
        "see keras_bert/execution.py) on a repeated in-memory batch: a warm-up epoch, then 5 timed epochs; "
        "tokens/s is the median epoch's, spread = slowest / fastest epoch.",
        "- MFU = model FLOPs/s over the matmul peak measured in the same run (fp32 peak for fp32 runs, bf16 "
        "peak for mixed_bfloat16). Training FLOPs per token = 6 x N (N = L(4h^2 + 2hi) non-embedding matmul "
        "weights) + 12 L s h (QK^T and attention x V, forward + backward) + (20/128) x 6 (h^2 + hV) (MLM "
        "transform and tied output matmul on the 20 masked positions only); the same count for every "
        "implementation (transformers computes its MLM head on all 128 positions, which MFU does not "
        "credit).",
    ]
    for size in ("mini", "base4"):
        out.append(f"  {size}: {train_flops_per_token(size) / 1e6:.1f} MFLOP per token.")
    out += [
        "- KerasHub `BertMaskedLM` has no next-sentence head: its figure is MLM only (slightly less work).",
        "- Serving: the raw-text SavedModel is the `keras_bert.export.export_saved_model` output loaded with "
        "`tf.saved_model.load`; 'token ids' is the same SavedModel's `serve_token_ids` on the packed ids.",
        "- Fine-tuning peak RSS is the VmHWM of the process that ran only that configuration (framework "
        "baseline included).",
        "- Real-data rows: the first batches (24 pre-training, 12 fine-tuning) of the library's own "
        "pipelines over the default corpus / default classification task (standard uncased vocab, seq "
        "128); pre-training tokens/s there counts real tokens only. With --pad_to_multiple_of the pipeline "
        "groups rows by length, so its batches are other rows of the same data (hence a slightly different "
        "real-token share).",
    ]
    if peaks:
        out.append(f"- Matmul peaks this run: {peaks}.")
    if curves:
        out += ["", "## mixed_bfloat16 vs float32 loss curve (mini, same seed and batches)", "",
                "| step | " + " | ".join(curves) + " |", "|---|" + "---|" * len(curves)]
        for step, values in enumerate(zip(*curves.values(), strict=True)):
            out.append(f"| {step + 1} | " + " | ".join(f"{v:.4f}" for v in values) + " |")
    for name, text in foreign.items():
        if text:
            out += ["", f"## {name} (output of {FOREIGN[name][0]})", "", "```", text, "```"]
    if errors:
        out += ["", "## Errors", ""] + [f"```\n{e}\n```" for e in errors]
    out += ["", "Reproduce: `make bench` (installs the `bench` extra: keras-hub), or "
            "`.venv/bin/python -m benchmarks.run_all`; one configuration: e.g. "
            "`python -m benchmarks.pretrain_throughput --impl=ours --size=mini --dtype=float32`."]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="mini configs, one step: a smoke test")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated subset of {SECTIONS}")
    parser.add_argument("--output", default=os.path.join(ROOT, "benchmarks", "results.md"))
    parser.add_argument("--rounds", type=int, default=2,
                        help="bf16: interleaved rounds of its configurations")
    return parser


def main(argv=None):
    parser = command_line()
    args = parser.parse_args(argv)
    sections = args.only.split(",")
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"--only: unknown sections {sorted(unknown)}; expected some of {SECTIONS}")
    started = datetime.datetime.now(datetime.timezone.utc)
    machine = common.machine_description()
    table, errors, curves, foreign, peaks = Table(), [], {}, {}, {}
    if "peak" in sections or "pretrain" in sections:
        peaks = bench_peak(table, errors, args.quick)
    if "pretrain" in sections:
        bench_pretrain(table, errors, args.quick, peaks)
    if "bf16" in sections:
        bench_bf16(table, errors, args.quick, args.rounds)
    if "loss_curve" in sections:
        curves = bench_loss_curve(table, errors, args.quick)
    if "steady" in sections:
        bench_steady(table, errors, args.quick)
    if "serving" in sections:
        bench_serving(table, errors, args.quick)
    if "serving_onnx" in sections:
        bench_serving_onnx(table, errors, args.quick)
    if "first_answer" in sections:
        bench_first_answer(table, errors, args.quick)
    if "finetune" in sections:
        bench_finetune(table, errors, args.quick)
    if "padding" in sections:
        bench_padding(table, errors, args.quick)
    for name in ("tokenize", "create_pretraining_data"):
        if name in sections:
            foreign[name] = bench_foreign(name, table, errors, args.quick)
    write_results(args.output, table, machine, curves, foreign, errors, args.quick, started, peaks)
    print()
    print(table.text())
    print(f"\nwrote {args.output}; {len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
