"""A new user's first jobs on the real MiniLM-L6 checkpoint and real English text, written only from the
README and `--help`: fine-tune with the library's and the CLI's defaults, embed a long text, first errors.

  python -m benchmarks.new_user_jobs                              # every part, seeds 42 and 0
  python -m benchmarks.new_user_jobs --parts=embed,errors         # the cheap parts

Parts, each job in a process of its own; a markdown table at the end:
  finetune  the default classification task (keras_bert.tasks.classification.default_data: docstring
            sentences labeled by topic) cut to --per_class_train x 4 training and --per_class_dev x 4 dev
            texts, the CSV files `default_classification_files` writes. Library: keras.utils.set_random_seed,
            `BertClassifier.from_pretrained(dir, labels=...)`, `compile()`, `fit(texts, labels, epochs=3)`,
            `evaluate` on the dev texts. CLI: `keras-bert run_classifier --train_file --eval_file
            --init_checkpoint --seed` in an empty directory (output in its default runs/classifier), its
            eval_results.json. Same seeds for both: the library's default learning rate against the CLI's.
  embed     a ~400-word text (the first standard-library module whose docstring prose runs past 400 words):
            `BertEncoder.from_pretrained(dir).serve` against transformers' AutoModel + mean pooling over the
            mask + L2 normalization at the length the checkpoint states (sentence_bert_config.json
            max_seq_length), and sentence-transformers' `encode` where installed: cosine and max abs diff.
  errors    the first error of each: `keras.saving.load_model` of a keras_bert `.keras` without
            `import keras_bert`; `keras-bert client --protocol=grpc` without tensorflow-serving-api and
            without a server; `keras-bert export_litert` and `keras_bert.export.export_litert` without
            ai-edge-litert. A missing package is hidden from the process (its imports raise what
            Python says for a package that is not installed); stderr lines counted, TF/absl log lines apart.
"""

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchmarks import common, inputs

PARTS = ("finetune", "embed", "errors")
CLI_SEED = 42  # run_classifier's --seed default
EPOCHS = 3
LONG_TEXT_WORDS = 400
# TF's C++ logging, absl's and Python warnings: lines a user learns to skip, counted apart from the error.
LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING:|INFO:|I0000|W0000|E0000|.*(Warning|oneDNN|cpu_feature_guard|"
                      r"rebuild TensorFlow|To enable the following instructions))")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def task_files(per_class_train, per_class_dev):
    from keras_bert.tasks.classification.default_data import default_classification_files

    return default_classification_files(per_class_train=per_class_train, per_class_dev=per_class_dev)


def run_fit(args):
    """The library's defaults: from_pretrained, compile(), fit(epochs=3); dev accuracy from evaluate."""
    common.configure_tensorflow()
    import keras

    import keras_bert as kb

    keras.utils.set_random_seed(args.seed)
    train_x, train_y = read_csv(args.train_file)
    dev_x, dev_y = read_csv(args.dev_file)
    start = time.perf_counter()
    clf = kb.BertClassifier.from_pretrained(inputs.minilm_dir(), labels=sorted(set(train_y)))
    clf.compile()
    clf.fit(train_x, train_y, epochs=EPOCHS, verbose=0)
    results = clf.evaluate(dev_x, dev_y, return_dict=True, verbose=0)
    from keras_bert.models.task_compile import DEFAULT_LEARNING_RATE  # what compile() without arguments uses

    return {"accuracy": float(results["accuracy"]), "seq_length": int(clf.preprocessor.seq_length),
            "learning_rate": DEFAULT_LEARNING_RATE, "train_s": round(time.perf_counter() - start, 1)}


def read_csv(path):
    import csv

    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return [row["text"] for row in rows], [row["label"] for row in rows]


def keras_bert_command():
    """The `keras-bert` console script of this Python (as a user runs it), else `python -m keras_bert`."""
    script = os.path.join(os.path.dirname(sys.executable), "keras-bert")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "keras_bert"]


def cli_default(command, flag):
    """The default `keras-bert COMMAND --help` states for --flag (a str), or None."""
    proc = subprocess.run([*keras_bert_command(), command, "--help"], capture_output=True, text=True,
                          timeout=300)
    match = re.search(rf"--{flag}:.*?\(default: '([^']*)'\)", proc.stdout + proc.stderr, re.DOTALL)
    return match.group(1) if match else None


def run_cli(train_file, dev_file, seed, work_dir):
    """`keras-bert run_classifier` with the required flags only (and --seed) in an empty directory."""
    run_dir = tempfile.mkdtemp(prefix=f"cli_seed{seed}_", dir=work_dir)
    command = [*keras_bert_command(), "run_classifier", f"--train_file={train_file}",
               f"--eval_file={dev_file}", f"--init_checkpoint={inputs.minilm_dir()}", f"--seed={seed}"]
    load_before = common.load_average()
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=run_dir, capture_output=True, text=True, timeout=1800)
    wall = round(time.perf_counter() - start, 1)
    out_dir = os.path.join(run_dir, "runs", "classifier")
    results = os.path.join(out_dir, "eval_results.json")
    if proc.returncode or not os.path.exists(results):
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        return {"error": f"run_classifier seed {seed} failed (rc={proc.returncode}):\n{tail}", "wall_s": wall}
    with open(results, encoding="utf-8") as f:
        accuracy = json.load(f)["accuracy"]
    model = os.path.join(out_dir, "model.keras")
    return {"accuracy": float(accuracy), "wall_s": wall, "load_before": load_before,
            "load_after": common.load_average(), "model": model if os.path.exists(model) else None}


def long_text(words=LONG_TEXT_WORDS):
    """(module path, text): the first standard-library module (sorted walk) whose docstrings' prose runs to
    `words` words, cut at the first sentence end past it."""
    import sysconfig

    from keras_bert.data.default_corpus import iter_documents

    for sentences in iter_documents(roots=[sysconfig.get_paths()["stdlib"]]):
        taken = []
        for sentence in sentences:
            taken.append(sentence)
            if sum(len(s.split()) for s in taken) >= words:
                return " ".join(taken)
    raise ValueError(f"no standard-library module has {words} words of docstring prose")


def run_embed(args):
    """Cosine and max abs diff of the served sentence embedding of a long text against transformers (mean
    pooling + normalize at the stated max_seq_length) and sentence-transformers' encode."""
    common.configure_tensorflow()
    import numpy as np

    from keras_bert import BertEncoder

    directory = inputs.minilm_dir()
    text = long_text()
    encoder = BertEncoder.from_pretrained(directory)
    ours = np.asarray(encoder.serve({"text": [text]})["sentence_embedding"])[0]

    torch = common.configure_torch()
    import transformers

    stated = inputs.max_seq_length(directory)
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    pieces = len(tokenizer(text)["input_ids"])
    batch = tokenizer([text], truncation=True, max_length=stated, return_tensors="pt")
    with torch.no_grad():
        hidden = transformers.AutoModel.from_pretrained(directory).eval()(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    peers = {"transformers": torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1),
                                                           dim=-1)[0].numpy()}
    try:
        import sentence_transformers
    except ImportError:
        pass
    else:
        model = sentence_transformers.SentenceTransformer(directory, device="cpu")
        peers["sentence-transformers"] = np.asarray(model.encode([text]))[0]
    result = {"words": len(text.split()), "pieces": pieces, "stated_max_seq_length": stated,
              "served_seq_length": int(encoder.preprocessor.seq_length)}
    for name, want in peers.items():
        result[name] = {"cosine": float(np.dot(ours, want) / np.linalg.norm(ours) / np.linalg.norm(want)),
                        "max_abs_diff": float(np.max(np.abs(ours - want)))}
    return result


def run_save_model(args):
    """A keras_bert classifier `.keras` of the checkpoint (the errors part's file when no fine-tune ran)."""
    common.configure_tensorflow()
    import keras_bert as kb

    kb.BertClassifier.from_pretrained(inputs.minilm_dir(), labels=["a", "b"]).save(args.model_path)
    return {"model": args.model_path}


# Python run as `python -c` in the error cases: {hidden} packages made absent (an import of one or of its
# modules raises what Python raises for a package that is not installed), then the user's code.
HIDE = """import sys
class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name.partition('.')[0]!r}}", name=name)
sys.meta_path.insert(0, Absent())
"""
# A library call's error: its type and message measured (stdout, JSON), then raised as the user sees it.
MEASURE = """try:
{body}
except Exception as e:
    import json
    message = f"{{type(e).__name__}}: {{e}}"
    print("MESSAGE " + json.dumps({{"lines": len(message.splitlines()), "chars": len(message)}}), flush=True)
    raise
"""
CLI = "import keras_bert_commands\nsys.exit(keras_bert_commands.main(['keras-bert', *sys.argv[1:]]))\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def error_cases(model_path, work_dir):
    """(name, shown command, python code, argv) of each first error."""
    port = free_port()
    client = ["client", "--protocol=grpc", "--model=clf", "--host=127.0.0.1", f"--port={port}",
              "--text=What a wonderful day!"]
    tflite = os.path.join(work_dir, "clf.tflite")
    litert = ["export_litert", f"--model_path={model_path}", f"--output_file={tflite}"]
    load = f"    import keras\n    keras.saving.load_model({model_path!r})"
    export = (f"    import keras_bert as kb\n    from keras_bert.export import export_litert\n"
              f"    clf = kb.BertClassifier.from_pretrained({inputs.minilm_dir()!r}, labels=['a', 'b'])\n"
              f"    export_litert(clf, {tflite!r})")
    return [
        ("keras.saving.load_model(clf.keras), no `import keras_bert`", "python: import keras; "
         "keras.saving.load_model('clf.keras')", MEASURE.format(body=load), []),
        ("client --protocol=grpc, no tensorflow-serving-api", "keras-bert " + " ".join(client[:2]) + " ...",
         HIDE.format(hidden=["tensorflow_serving"]) + CLI, client),
        ("client --protocol=grpc, no server", "keras-bert " + " ".join(client[:2]) + " ...",
         "import sys\n" + CLI, client),
        ("export_litert, no ai-edge-litert (CLI)", "keras-bert export_litert --model_path --output_file",
         HIDE.format(hidden=["ai_edge_litert"]) + CLI, litert),
        ("export_litert, no ai-edge-litert (library)", "python: export_litert(clf, 'clf.tflite')",
         HIDE.format(hidden=["ai_edge_litert"]) + MEASURE.format(body=export), []),
    ]


def run_error(code, argv, work_dir):
    proc = subprocess.run([sys.executable, "-c", code, *argv], cwd=work_dir, capture_output=True,
                          text=True, timeout=600)
    lines = proc.stderr.splitlines()
    logs = [line for line in lines if LOG_LINE.match(line)]
    rest = [line for line in lines if not LOG_LINE.match(line) and line.strip()]
    result = {"rc": proc.returncode, "stderr_lines": len(lines), "log_lines": len(logs),
              "error_lines": len(rest), "stderr_chars": len(proc.stderr),
              "last_line": (rest[-1] if rest else "")[:400],
              "first_log_line": (logs[0] if logs else "")[:200]}
    for line in proc.stdout.splitlines():
        if line.startswith("MESSAGE "):
            result["message"] = json.loads(line[len("MESSAGE "):])
    return result


def short(text, width=110):
    text = text.replace("|", "\\|")
    return text if len(text) <= width else text[:width - 3] + "..."


def markdown(machine, finetune, embed, errors, started, loads):
    out = [f"Machine: {machine['cpu']}, {machine['cores']} cores, flags {machine['simd'] or 'none listed'}; "
           f"TF {machine['versions']['tensorflow']}, Keras {machine['versions']['keras']}, torch "
           f"{machine['versions']['torch']}, transformers {machine['versions']['transformers']}. "
           f"Load (1 min) {min(loads):.1f}-{max(loads):.1f}; {time.perf_counter() - started:.0f} s in all.",
           "",
           "| job | how | result |", "|---|---|---|"]
    if finetune:
        train, dev = finetune["texts"]
        for impl in ("library", "cli"):
            runs = finetune[impl]
            accs = [r["accuracy"] for r in runs.values() if "accuracy" in r]
            per_seed = ", ".join(f"seed {seed} {r['accuracy']:.3f} ({r['wall_s']:.0f} s)" if "accuracy" in r
                                 else f"seed {seed} failed" for seed, r in runs.items())
            rates = {r.get("learning_rate") for r in finetune["library"].values()} - {None}
            how = (f"`from_pretrained(dir, labels=...)`, `compile()` (peak rate "
                   f"{', '.join(map(str, sorted(rates))) or '?'}), `fit(epochs=3)`" if impl == "library"
                   else "`keras-bert run_classifier --train_file --eval_file --init_checkpoint --seed` "
                   f"(--learning_rate default {finetune['cli_learning_rate']})")
            mean = f"mean {statistics.mean(accs):.3f}; " if accs else ""
            out.append(f"| fine-tune MiniLM-L6, {train} train / {dev} dev texts | {how} | dev accuracy "
                       f"{mean}{per_seed} |")
    if embed:
        if "error" in embed:
            out.append(f"| embed a long text | | failed: {short(embed['error'].splitlines()[-1])} |")
        else:
            for peer in ("transformers", "sentence-transformers"):
                if peer in embed:
                    how = ("AutoModel + mean pooling + normalize" if peer == "transformers"
                           else "SentenceTransformer(dir).encode")
                    out.append(f"| embed a {embed['words']}-word text ({embed['pieces']} pieces) | "
                               f"`BertEncoder.from_pretrained(dir).serve` (seq {embed['served_seq_length']}, "
                               f"stated {embed['stated_max_seq_length']}) vs {how} | cosine "
                               f"{embed[peer]['cosine']:.6f}, max abs diff "
                               f"{embed[peer]['max_abs_diff']:.1e} |")
    for name, shown, result in errors:
        if "rc" not in result:
            out.append(f"| first error: {name} | {shown} | not run: {short(result['error'])} |")
            continue
        message = (f"; message {result['message']['lines']} line(s), {result['message']['chars']:,} chars"
                   if "message" in result else "")
        out.append(f"| first error: {name} | `{shown}` | exit {result['rc']}; stderr {result['error_lines']} "
                   f"line(s) ({result['log_lines']} log lines besides){message}: "
                   f"`{short(result['last_line'])}` |")
    return "\n".join(out)


def command_line():
    parser = common.argument_parser(__doc__)
    parser.add_argument("--parts", type=common.comma_separated(), default=",".join(PARTS),
                        help=f"comma-separated subset of {PARTS}")
    parser.add_argument("--seeds", type=common.comma_separated(int), default=[CLI_SEED, 0],
                        help="fine-tune once per seed, library and CLI (weights of the new head, dropout, "
                        "data order)")
    parser.add_argument("--per_class_train", type=int, default=75, help="training texts per topic (4 topics)")
    parser.add_argument("--per_class_dev", type=int, default=50, help="dev texts per topic")
    # Set by the parent for its jobs' processes.
    parser.add_argument("--job", choices=("fit", "embed", "save_model"), help=common.HIDDEN)
    parser.add_argument("--seed", type=int, help=common.HIDDEN)
    parser.add_argument("--train_file", help=common.HIDDEN)
    parser.add_argument("--dev_file", help=common.HIDDEN)
    parser.add_argument("--model_path", help=common.HIDDEN)
    return parser


JOBS = {"fit": run_fit, "embed": run_embed, "save_model": run_save_model}


def main(argv=None):
    args = command_line().parse_args(argv)
    if args.job:  # a job's own process: run it, print its result line
        common.emit(JOBS[args.job](args))
        return 0
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        raise SystemExit(f"--parts: unknown {sorted(unknown)}; expected some of {PARTS}")
    started = time.perf_counter()
    machine = common.machine_description()
    work_dir = tempfile.mkdtemp(prefix="new_user_jobs_")
    loads, failures = [common.load_average()], []
    finetune = embed = None
    model_path = None
    print(f"{machine['cpu']}, flags {machine['simd']}; load {loads[0]}", flush=True)
    if "finetune" in args.parts:
        train_file, dev_file = task_files(args.per_class_train, args.per_class_dev)
        finetune = {"texts": (len(read_csv(train_file)[0]), len(read_csv(dev_file)[0])), "library": {},
                    "cli": {}, "cli_learning_rate": cli_default("run_classifier", "learning_rate")}
        for seed in args.seeds:
            fit = common.run_subprocess("new_user_jobs", ["--job=fit", f"--seed={seed}",
                                                          f"--train_file={train_file}",
                                                          f"--dev_file={dev_file}"], timeout=1800)
            cli = run_cli(train_file, dev_file, seed, work_dir)
            for impl, result in (("library", fit), ("cli", cli)):
                print(f"{impl} seed {seed}: {json.dumps(result)}", flush=True)
                finetune[impl][seed] = result
                loads += [result[key] for key in ("load_before", "load_after") if key in result]
                if "error" in result:
                    failures.append(result["error"])
            model_path = model_path or cli.get("model")
    if "embed" in args.parts:
        embed = common.run_subprocess("new_user_jobs", ["--job=embed"], timeout=1200)
        print(f"embed: {json.dumps(embed)}", flush=True)
        loads += [embed[key] for key in ("load_before", "load_after") if key in embed]
        if "error" in embed:
            failures.append(embed["error"])
    errors = []
    if "errors" in args.parts:
        if model_path is None:
            model_path = os.path.join(work_dir, "clf.keras")
            saved = common.run_subprocess("new_user_jobs", ["--job=save_model", f"--model_path={model_path}"])
            if "error" in saved:
                failures.append(saved["error"])
        for name, shown, code, case_argv in error_cases(model_path, work_dir):
            result = run_error(code, case_argv, work_dir) if os.path.exists(model_path) else {
                "error": "no .keras file to load"}
            print(f"{name}: {json.dumps(result)}", flush=True)
            errors.append((name, shown, result))
        loads.append(common.load_average())
    print()
    print(markdown(machine, finetune, embed, errors, started, loads))
    for failure in failures:
        print(f"\n{failure}")
    shutil.rmtree(work_dir, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
