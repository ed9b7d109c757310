"""recipes/distill end to end on a tiny custom classification task, in this process: a teacher saved here,
distilled into a 1-layer student with unlabelled text (and augmented texts); the run resumes (on cached
teacher outputs); bad students are one line."""

import csv
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import write_vocab

ROWS = [("the cat sat on the mat", "pets"), ("a dog ran in the park", "pets"), ("stocks fell today", "money"),
        ("the bank raised rates", "money"), ("my cat likes fish", "pets"), ("prices rose again", "money")]


@pytest.fixture
def files(tmp_path):
    """{name: path}: train.csv, dev.csv, unlabeled.txt and teacher.keras (a random 2-layer classifier)."""
    names = ("train.csv", "dev.csv", "unlabeled.txt", "teacher.keras")
    paths = {name: str(tmp_path / name) for name in names}
    for name, rows in (("train.csv", ROWS), ("dev.csv", ROWS[:4])):
        with open(paths[name], "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("text", "label"), *rows])
    with open(paths["unlabeled.txt"], "w", encoding="utf-8") as f:
        f.write("the dog sat\nrates fell\n\nmy fish ran\n")
    vocab, size = write_vocab(tmp_path / "vocab.txt", [text for text, _ in ROWS])
    config = BertConfig(vocab_size=size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    teacher = BertClassifier(BertEncoder(config), labels=["money", "pets"],
                             preprocessor=BertPreprocessor(BertTokenizer(vocab), 16))
    teacher.save(paths["teacher.keras"])
    return paths


def _flags(files, out, *extra):
    return [f"--teacher={files['teacher.keras']}", f"--train_file={files['train.csv']}",
            f"--eval_file={files['dev.csv']}", f"--output_dir={out}", "--train_batch_size=4",
            "--eval_batch_size=4", "--nojit_compile", "--save_checkpoints_steps=2", "--augment=0", *extra]


def test_distill_writes_a_serving_student_resumes_and_augments(run_in_process, files, tmp_path):
    """A serving student; the run resumes on cached teacher outputs; a changed teacher is refused, and
    --overwrite starts afresh, here with --augment=1, which adds teacher-labelled texts (more steps)."""
    out = str(tmp_path / "out")
    unlabeled = f"--unlabeled_file={files['unlabeled.txt']}"
    status, stderr = run_in_process("distill", *_flags(files, out, "--student_layers=1", unlabeled,
                                                       "--num_train_epochs=1"))
    assert status is None, stderr  # main returned
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    assert results["global_step"] == 3  # 6 labelled + 3 unlabelled examples in batches of 4
    for name in ("teacher", "student"):
        assert 0 <= results[f"{name}/accuracy"] <= 1 and results[f"{name}/num_examples"] == 4
    assert results["student/parameters"] < results["teacher/parameters"]
    student = keras.saving.load_model(os.path.join(out, "model.keras"))
    assert type(student) is BertClassifier and student.encoder.config.num_hidden_layers == 1
    assert student.labels == ["money", "pets"] and student.preprocessor.seq_length == 16
    assert set(student.serve({"text": ["the cat sat"]})["label"]) <= {b"money", b"pets"}
    # The same command with more epochs continues from the last checkpoint (its teacher outputs cached once,
    # in a TFRecord that the resumed epochs read).
    status, stderr = run_in_process("distill", *_flags(files, out, "--student_layers=1", unlabeled,
                                                       "--num_train_epochs=2", "--cache_teacher"))
    assert status is None, stderr  # main returned
    assert os.path.getsize(os.path.join(out, "teacher_cache.tfrecord")) > 0
    # Resumed at step 3 (saved by the first run at its end), not started again (which would keep ckpt-2).
    assert os.path.exists(os.path.join(out, "checkpoints", "ckpt-3.index"))
    assert not os.path.exists(os.path.join(out, "checkpoints", "ckpt-2.index"))
    with open(os.path.join(out, "eval_results.json")) as f:
        assert json.load(f)["global_step"] == 6
    # The checkpoints hold what training changes, never the teacher: a resume cannot restore over it.
    names = [name for name, _ in tf.train.list_variables(os.path.join(out, "checkpoints", "ckpt-6"))]
    assert any("/_trainable_variables/" in name for name in names)  # the student's, as its optimizer's
    assert not any("teacher" in name for name in names)  # was: model/teacher/..., restored over --teacher
    # The teacher file replaced: the run is refused naming what changed (was: the old teacher's weights
    # restored, its old eval_loss reported); --overwrite starts afresh (was: "Resuming from step 6 of 3"),
    # here with one augmented text per example (--augment=1).
    teacher = keras.saving.load_model(files["teacher.keras"])
    teacher.encoder.weights[0].assign(teacher.encoder.weights[0] * 2.0)
    teacher.save(files["teacher.keras"])
    again = _flags(files, out, "--student_layers=1", unlabeled, "--num_train_epochs=1", "--cache_teacher")
    status, stderr = run_in_process("distill", *again)
    assert (status, stderr) == (1, f"error: {out}/checkpoints holds a run of other inputs (teacher changed); "
                                   "resume with the same ones, or pass --overwrite to start afresh\n")
    status, stderr = run_in_process("distill", *again, "--overwrite", "--augment=1")
    assert status is None, stderr
    assert not os.path.exists(os.path.join(out, "checkpoints", "ckpt-6.index"))  # the old run set aside
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    # 6 labelled + 3 unlabelled + one augmented text of each (9): 18 examples in batches of 4, 1 epoch
    # (without the augmented texts: 3 steps, as the first run)
    assert results["global_step"] == 5
    assert results["teacher/eval_loss"] == pytest.approx(_eval_loss(teacher, files), rel=1e-4)


def _eval_loss(model, files):
    """The mean task loss of `model` over dev.csv (what eval_results.json's */eval_loss reports)."""
    texts, labels = zip(*ROWS[:4], strict=True)
    logits = model.predict(list(texts), verbose=0)
    ids = np.array([model.labels.index(label) for label in labels])
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return float(-log_probs[np.arange(len(ids)), ids].mean())


def test_a_student_deeper_than_the_teacher_is_one_line(run_in_process, files, tmp_path):
    status, stderr = run_in_process("distill", *_flags(files, tmp_path / "out", "--student_layers=3"))
    assert status == 1 and stderr.count("\n") == 1, stderr
    assert stderr.startswith("error: student_layers=3; expected 1 <= student_layers <= the teacher's 2 "
                             "layers")
    assert "--student_layers=3" in stderr and not (tmp_path / "out").exists()
