"""A fine-tuning run killed in training resumes from its last checkpoint (through the one driver, so every
run_* recipe; run_classifier here). The guarantee tested: killed by SIGKILL in its third epoch, the same
command resumes from the second epoch's end and ends with the weights and metrics of the uninterrupted run
(to float rounding), so the weights, optimizer state, step and learning-rate position are restored and the
epochs left are trained once each. The epochs left are shuffled with --seed + step (new orders, as
pre-training), so the test trains on one batch per epoch, without dropout, where the order is irrelevant. A
resume with another training file or learning rate is refused in one line naming what changed; a finished
run leaves no checkpoints and its rerun is refused as before."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_bert.models.encoder import load_pretrained_model
from tests.recipes.conftest import REPO
from tests.recipes.test_run_classifier import _write_csv

WORDS = "good bad fine awful great poor nice grim day film plot cast".split()
ROWS = [(f"{WORDS[i % 12]} {WORDS[(3 * i + 1) % 12]} {WORDS[(5 * i + 2) % 12]}", "pos" if i % 3 else "neg")
        for i in range(24)]
EPOCHS, KILL_AT = 4, 3  # one step an epoch (a batch of the 24 rows); killed after step 3: resumed from 2

# The recipe as a user runs it, with a real SIGKILL of its own process once the optimizer passes KILL_AT
# steps (after the batch's step, before any later checkpoint).
KILLED = """
import os, signal, sys
from keras_bert.training import callbacks
from recipes import logs, run_classifier

def kill(self, batch, logs=None):
    if int(self.model.optimizer.iterations.numpy()) >= {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)

callbacks.StopAtStep.on_train_batch_end = kill
sys.argv = ["recipes/run_classifier.py", *{argv!r}]
logs.run(run_classifier.main)
"""


def _latest_step(out):
    index = os.path.join(out, "checkpoints", "checkpoint")
    if not os.path.exists(index):
        return 0
    with open(index) as f:
        return int(f.readline().rsplit("-", 1)[1].strip().strip('"'))


def _weights(out):
    return {w.path: w.numpy() for w in load_pretrained_model(os.path.join(out, "model.keras")).weights}


def _results(out):
    with open(os.path.join(out, "eval_results.json")) as f:
        return json.load(f)


@pytest.mark.slow
def test_killed_classifier_resumes_to_the_uninterrupted_result(tmp_path, tiny_model, run_in_process):
    train = _write_csv(tmp_path / "train.csv", ROWS)
    dev = _write_csv(tmp_path / "dev.csv", ROWS[::3])
    flags = [f"--train_file={train}", f"--eval_file={dev}", f"--train_batch_size={len(ROWS)}",
             "--eval_batch_size=8", f"--num_train_epochs={EPOCHS}", "--learning_rate=1e-2",
             "--warmup_proportion=0.25", *tiny_model(WORDS, max_seq_length=16)]
    config = tmp_path / "bert_config.json"
    config.write_text(json.dumps(dict(json.loads(config.read_text()), hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0)))
    whole, resumed = str(tmp_path / "whole"), str(tmp_path / "resumed")

    status, stderr = run_in_process("run_classifier", *flags, f"--output_dir={whole}")
    assert status is None, stderr
    assert not os.path.exists(os.path.join(whole, "checkpoints"))  # a finished run has nothing to resume

    argv = [*flags, f"--output_dir={resumed}"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    killed = subprocess.run([sys.executable, "-c", KILLED.format(kill_at=KILL_AT, argv=argv)], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert _latest_step(resumed) == KILL_AT - 1  # the last epoch's end before the kill
    assert not os.path.exists(os.path.join(resumed, "model.keras"))

    # Other inputs: refused before any step, the checkpoint left as it was.
    other = _write_csv(tmp_path / "other.csv", [*ROWS[:-1], ("good good day", "pos")])
    refused = (f"error: {resumed}/checkpoints holds a run of other inputs ({{}} changed); resume with the "
               "same ones, or pass --overwrite to start afresh")
    changes = {"training data": f"--train_file={other}", "--learning_rate": "--learning_rate=1"}
    for changed, flag in changes.items():
        status, stderr = run_in_process("run_classifier", *argv, flag)
        assert status == 1 and stderr.splitlines()[-1] == refused.format(changed), stderr
        assert _latest_step(resumed) == KILL_AT - 1

    status, stderr = run_in_process("run_classifier", *argv)
    assert status is None, stderr
    assert f"Resuming from step {KILL_AT - 1} " in run_in_process.stdout
    assert f"Epoch {KILL_AT}/{EPOCHS}" in run_in_process.stdout and "Epoch 1/" not in run_in_process.stdout
    assert not os.path.exists(os.path.join(resumed, "checkpoints"))
    a, b = _weights(whole), _weights(resumed)
    assert a.keys() == b.keys()
    diff = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
    print(f"resumed vs uninterrupted: max weight difference {diff:.1e}; {_results(resumed)}")
    assert diff < 1e-5
    assert _results(resumed) == pytest.approx(_results(whole), abs=1e-5)
    # Trained: not two copies of one initialisation (the classifier bias starts at zero).
    assert max(np.abs(v).max() for k, v in b.items() if "bias" in k and "classifier" in k) > 1e-4

    # A finished run's rerun without --overwrite is refused, as before resuming existed.
    status, stderr = run_in_process("run_classifier", *argv)
    assert status == 1 and "holds no run of run_classifier to resume" in stderr.splitlines()[-1], stderr
