"""The main job end to end on the embedded default corpus, with no network and no user data.

    keras-bert quickstart --run_dir=runs/quickstart      (in a checkout: python -m recipes.quickstart ...)

Runs the recipes a user would run, each as its own process with its own flags (so every command printed
here can be copied and rerun):
  1. build_vocab      a WordPiece vocab learned on the default corpus (docstrings of installed packages);
  2. pretrain         a tiny BERT, masked LM + next-sentence prediction, streaming the corpus;
  3. run_classifier   fine-tunes it on the default task (stdlib docstring topics);
  4. export           the classifier as a raw-text SavedModel, checked with TF Serving's C++ loader
                      (its model.keras carries vocab, casing, sequence length and labels: no flag repeated);
  5. serve            a few raw sentences through that SavedModel in TF Serving's C++ loader, each printed
                      with the topic name it predicts.
Then prints where everything went and what the loss did. Rerunning resumes/reuses finished steps.
"""

import glob
import json
import os
import shlex
import subprocess
import sys
import time

from absl import flags

from recipes import flags as shared_flags
from recipes import logs

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", "runs/quickstart", "Where every output goes.")
shared_flags.define(vocab_size=8192)
shared_flags.define_one("preset", choices=("tiny", "mini", "small"), help="Architecture to pre-train.")
shared_flags.define_one("num_train_steps", 600, help="Pre-training steps.")
shared_flags.define_one("max_seq_length", help="Pre-training sequence length.")
shared_flags.define_one("train_batch_size", help="Pre-training global batch size.")
shared_flags.define_one("dtype", choices=("float32", "mixed_bfloat16"), help="Pre-training precision (Keras "
                        "dtype policy).")

# One sentence per topic of the default task, written for this demo (not in its training data).
DEMO_SENTENCES = (
    "Parse the message headers and return the address of the sender.",
    "Schedule the coroutine on the event loop and wait until the task is done.",
    "Create a scrollbar widget and pack it into the frame of the window.",
    "Send a GET request to the server and read the body of the response.",
)


def _run(step, name, args):
    # `python -m keras_bert NAME`: the same command in a source checkout and after `pip install`.
    command = [sys.executable, "-m", "keras_bert", name, *args]
    print(f"\n=== {step}\n$ {shlex.join(command)}", flush=True)
    start = time.time()
    subprocess.run(command, check=True)
    return time.time() - start


def _serve(version_dir, sentences, arrays):
    """Runs `sentences` through serving_default of the export in TF Serving's C++ loader (a fresh process,
    as export/check_servable.py; the inputs travel in the .npz `arrays`); returns the served label names."""
    import numpy as np

    from keras_bert.export import servability

    servability.save_check_arrays(arrays, {"text": np.array([s.encode() for s in sentences], dtype=object)},
                                  None)
    (report,) = servability.check_servable_subprocess([{"export_dir": version_dir,
                                                        "runs": [{"arrays": arrays}]}])
    if "error" in report:
        raise RuntimeError(report["error"])
    return report["runs"][0]["outputs"]["label"]


def _loss_curve(log_dir):
    """(step, train/loss) pairs from the pre-training TensorBoard logs."""
    import tensorflow as tf

    points = []
    for path in sorted(glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))):
        for record in tf.data.TFRecordDataset(path):  # event files are TFRecords of Event protos
            event = tf.compat.v1.Event.FromString(record.numpy())
            for value in event.summary.value:
                if value.tag == "train/loss":
                    points.append((event.step, float(tf.make_ndarray(value.tensor))))
    return sorted(points)


def main(argv):
    del argv
    run_dir = os.path.abspath(FLAGS.run_dir)
    os.makedirs(run_dir, exist_ok=True)
    from keras_bert.data.default_corpus import default_corpus_path

    corpus = default_corpus_path()
    vocab = os.path.join(run_dir, "vocab.txt")
    pretrain_dir = os.path.join(run_dir, "pretrain")
    classifier_dir = os.path.join(run_dir, "classifier")
    export_dir = os.path.join(run_dir, "export", "classifier")
    seconds = {}

    if not os.path.exists(vocab):
        seconds["build_vocab"] = _run("1/5 learn a WordPiece vocab", "build_vocab", [
            f"--input_files={corpus}", f"--output_file={vocab}", f"--vocab_size={FLAGS.vocab_size}"])
    seconds["pretrain"] = _run("2/5 pre-train (MLM + NSP)", "pretrain", [
        f"--input_files={corpus}", f"--vocab_file={vocab}", f"--preset={FLAGS.preset}",
        f"--max_seq_length={FLAGS.max_seq_length}", f"--train_batch_size={FLAGS.train_batch_size}",
        f"--num_train_steps={FLAGS.num_train_steps}", f"--num_warmup_steps={FLAGS.num_train_steps // 10}",
        "--learning_rate=1e-3", f"--save_checkpoints_steps={max(FLAGS.num_train_steps // 4, 1)}",
        "--log_steps=25", f"--dtype={FLAGS.dtype}", f"--model_dir={pretrain_dir}"])
    seconds["run_classifier"] = _run("3/5 fine-tune a classifier", "run_classifier", [
        f"--init_checkpoint={os.path.join(pretrain_dir, 'pretrained')}", f"--output_dir={classifier_dir}",
        "--max_seq_length=64", "--num_train_epochs=5", "--learning_rate=5e-4",
        "--do_train", "--do_eval", "--do_predict", "--overwrite"])  # a rerun replaces its own classifier
    seconds["export"] = _run("4/5 export for TF Serving (+ C++ loader check)", "export_saved_model", [
        f"--model_path={os.path.join(classifier_dir, 'model.keras')}", f"--export_dir={export_dir}"])

    curve = _loss_curve(os.path.join(pretrain_dir, "logs"))
    with open(os.path.join(pretrain_dir, "eval_results.json"), encoding="utf-8") as f:
        pretrain_eval = json.load(f)
    with open(os.path.join(classifier_dir, "eval_results.json"), encoding="utf-8") as f:
        classifier_eval = json.load(f)
    versions = sorted(os.listdir(export_dir), key=lambda v: int(v) if v.isdigit() else -1)
    print("\n=== 5/5 serve raw sentences (TF Serving's C++ loader, serving_default)", flush=True)
    served = _serve(os.path.join(export_dir, versions[-1]), DEMO_SENTENCES,
                    os.path.join(run_dir, "serve_inputs.npz"))
    for label, sentence in zip(served, DEMO_SENTENCES, strict=True):
        print(f"  {label:<8} <- {sentence}")

    print("\n=== Summary")
    print(f"corpus            {corpus} ({os.path.getsize(corpus) / 1e6:.1f} MB)")
    print(f"vocab             {vocab}")
    print(f"pre-training      {pretrain_dir}  (TensorBoard: tensorboard --logdir {pretrain_dir}/logs)")
    if curve:
        marks = [curve[0], curve[len(curve) // 2], curve[-1]]
        print("  train loss      " + "  ->  ".join(f"{loss:.3f} @ step {step}" for step, loss in marks))
    print("  held-out eval   " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(pretrain_eval.items())
                                          if k != "global_step"))
    print(f"  model           {pretrain_dir}/pretrained (keras_bert.BertEncoder.from_pretrained)")
    print(f"fine-tuning       {classifier_dir}")
    print("  eval            " + ", ".join(f"{k} {v:.4f}" for k, v in sorted(classifier_eval.items())
                                          if isinstance(v, float)))
    print(f"export            {export_dir}/{versions[-1]}  (TF Serving model base path: {export_dir})")
    print("seconds           " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()))


if __name__ == "__main__":
    logs.run(main)
