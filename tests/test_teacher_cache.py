"""keras_bert/distillation/teacher_cache.py on tiny models: an epoch on cached teacher outputs is the epoch
that runs the teacher in the step (same losses and student weights) with the teacher broken after the cache
is written; a cache of the same fingerprint is reused, one of another is written again."""

import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.distillation import TaskDistiller, distillation_dataset, make_student
from keras_bert.distillation.teacher_cache import file_fingerprint, read_header, teacher_cache
from tests.test_distillation import LABELS, TEXTS, _teacher


def _rows(teacher):
    inputs = dict(teacher.preprocessor(tf.constant(TEXTS)))
    labels = np.array([["neg", "pos"].index(label) for label in LABELS], "int32")
    labeled = tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(4)
    more = dict(teacher.preprocessor(tf.constant(TEXTS[:4])))
    unlabeled = tf.data.Dataset.from_tensor_slices(more).batch(4)
    return distillation_dataset(teacher, labeled, unlabeled=unlabeled, shuffle=False)  # 3 batches of 4


def _distiller(teacher):
    keras.utils.set_random_seed(1)  # the same student (and dropout seeds) each time
    distiller = TaskDistiller(teacher, make_student(teacher, layers=2), alpha=0.5, hidden_weight=1.0)
    distiller.compile(optimizer=keras.optimizers.SGD(0.5), run_eagerly=True)  # steps track the gradients
    return distiller


def test_an_epoch_on_the_cache_is_the_epoch_that_runs_the_teacher(tmp_path):
    teacher = _teacher(tmp_path)
    rows = _rows(teacher)
    plain = _distiller(teacher)
    expected = plain.fit(rows, epochs=1, verbose=0).history
    cached = _distiller(teacher)
    data = teacher_cache(cached, rows, str(tmp_path / "cache.tfrecord"), batch_size=4, shuffle=False)
    reference = teacher.get_weights()
    for weight in teacher.weights:  # a step that still ran the teacher would now give NaN
        weight.assign(tf.fill(weight.shape, float("nan")))
    history = cached.fit(data, epochs=1, verbose=0).history
    for name in ("student_loss", "distillation_loss", "total_loss"):
        assert np.isfinite(history[name][0])
        assert history[name][0] == pytest.approx(expected[name][0], rel=1e-5)
    for ours, theirs in zip(cached.student.get_weights(), plain.student.get_weights(), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-6)
    # Shuffled, rows keep their cached outputs: a batch's cached logits are the teacher's on its inputs.
    batch = next(iter(teacher_cache(cached, rows, str(tmp_path / "cache.tfrecord"), batch_size=5, seed=3)))
    stored = dict(batch[0])
    logits = stored.pop("teacher_outputs")
    assert sorted(stored.pop("teacher_hidden")) == ["0", "3"] and logits.shape == (5, 2)
    teacher.set_weights(reference)
    np.testing.assert_allclose(teacher(stored, training=False), logits, rtol=1e-5, atol=1e-5)


def test_a_cache_of_the_same_fingerprint_is_reused_another_is_written_again(tmp_path, caplog):
    teacher = _teacher(tmp_path)
    rows, path = _rows(teacher), str(tmp_path / "cache.tfrecord")
    distiller = TaskDistiller(teacher, make_student(teacher, layers=1))
    weights_file = tmp_path / "teacher.bin"
    weights_file.write_bytes(b"1234")
    fingerprint = {"teacher": file_fingerprint([str(weights_file), None])}
    caplog.set_level(logging.INFO, logger="keras_bert")
    teacher_cache(distiller, rows, path, fingerprint, batch_size=4)
    assert "Computing the teacher outputs once" in caplog.text and not os.path.exists(
        os.path.join(tmp_path, ".tmp-cache.tfrecord"))
    assert read_header(path)["fingerprint"]["hidden_layers"] == []  # no hidden-state term: logits alone
    written = os.stat(path).st_ino
    caplog.clear()
    data = teacher_cache(distiller, rows, path, fingerprint, batch_size=4)
    assert "Reusing the teacher outputs cached in" in caplog.text and os.stat(path).st_ino == written
    assert sum(int(b[1].shape[0]) for b in data) == 12 and "teacher_hidden" not in next(iter(data))[0]
    caplog.clear()
    weights_file.write_bytes(b"12345")  # another teacher file
    teacher_cache(distiller, rows, path, {"teacher": file_fingerprint([str(weights_file)])}, batch_size=4)
    assert "was cached for another teacher or other data (teacher differ): computing it again" in caplog.text
    assert os.stat(path).st_ino != written
