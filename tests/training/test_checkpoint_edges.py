"""What a resume finds in its directory: partial saves of a killed run are removed, a run of another
architecture is named with both configurations, a run of other inputs with what changed, and a full disk
ends with one error naming the directory."""

import dataclasses
import os
import subprocess

import keras
import pytest

import keras_bert as kb
from keras_bert.errors import DiskFullError, UserInputError
from keras_bert.training import TrainingCheckpoint


def _model(config):
    model = kb.BertClassifier(kb.BertEncoder(config), num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    return model


def test_partial_saves_are_removed_on_start(tiny_config, tmp_path):
    partial = tmp_path / "ckpt-3_temp"
    partial.mkdir()
    (partial / "part-00000-of-00001.data-00000-of-00001").write_bytes(b"x" * 100)
    (tmp_path / "ckpt-notes").mkdir()  # not a name the checkpoint manager writes: kept
    checkpoint = TrainingCheckpoint(_model(tiny_config), str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["ckpt-notes"]
    checkpoint.save()
    assert ("ckpt-0.index" in os.listdir(tmp_path)
            and not any(n.endswith("_temp") for n in os.listdir(tmp_path)))


def test_a_run_of_another_configuration_is_named(tiny_config, tmp_path):
    TrainingCheckpoint(_model(tiny_config), str(tmp_path)).save()
    other = _model(dataclasses.replace(tiny_config, hidden_size=16, intermediate_size=32))
    with pytest.raises(UserInputError,
                       match=rf"{tmp_path} holds a run of another configuration \(hidden_size: 32 "
                             r"there, 16 in this run; intermediate_size: 64 there, 32 in this run\)"):
        TrainingCheckpoint(other, str(tmp_path)).restore()
    os.remove(tmp_path / "bert_config.json")  # a directory of an older version: the restore itself is refused
    with pytest.raises(UserInputError,
                       match=r"ckpt-0 holds a run of another configuration, which does not fit"):
        TrainingCheckpoint(other, str(tmp_path)).restore()
    assert TrainingCheckpoint(_model(tiny_config), str(tmp_path)).restore() == 0  # the same one resumes


def test_a_run_of_other_inputs_is_refused_naming_them(tiny_config, tmp_path, caplog):
    model = _model(tiny_config)
    TrainingCheckpoint(model, str(tmp_path)).save()  # a run saved before its inputs were kept
    identity = {"vocab": "a1", "init_checkpoint": ["b2"], "training data": ["c3"]}
    assert TrainingCheckpoint(model, str(tmp_path), identity=identity).restore() == 0  # resumed, and kept
    assert "no record of the inputs of the run it resumes" in caplog.text
    for key, value in (("vocab", "a2"), ("init_checkpoint", [])):
        with pytest.raises(UserInputError, match=rf"^{tmp_path} holds a run of other inputs "
                                                 rf"\({key} changed\); resume with the same ones$"):
            TrainingCheckpoint(model, str(tmp_path), identity={**identity, key: value}).restore()
    assert TrainingCheckpoint(model, str(tmp_path), identity=dict(identity)).restore() == 0


def test_a_full_disk_ends_with_one_error_naming_the_directory(tiny_config, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)],
                      capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        checkpoint = TrainingCheckpoint(_model(tiny_config), str(disk))
        with pytest.raises(DiskFullError,
                           match=rf"^{disk}: the disk is full; checkpoint ckpt-0 was not written"):
            checkpoint.save()
        assert not [n for n in os.listdir(disk) if n.endswith("_temp")]
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_the_default_optimizer_checkpoints_after_fit_schedules_it(tiny_config, tmp_path):
    """compile()'s default optimizer gets its warmup + decay schedule when fit knows its steps; its float
    rate's variable stays tracked, so a TrainingCheckpoint saves it (Keras' setter untracked it: TF then
    refused to save the optimizer) and a model compiled alike restores it."""
    import numpy as np

    def fitted():
        model = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=2)
        model.compile(jit_compile=False)
        ids = np.ones((4, 8), "int32")
        inputs = {"input_word_ids": ids, "input_mask": ids, "input_type_ids": 0 * ids}
        model.fit(inputs, np.array([0, 1, 0, 1]), batch_size=2, epochs=1, verbose=0)
        return model

    model = fitted()
    assert model.optimizer.get_config()["learning_rate"]["class_name"] == "WarmupLinearDecay"
    TrainingCheckpoint(model, str(tmp_path)).save()
    restored = fitted()
    assert TrainingCheckpoint(restored, str(tmp_path)).restore() == 2
    for saved, loaded in zip(model.optimizer.variables, restored.optimizer.variables, strict=True):
        np.testing.assert_array_equal(saved.numpy(), loaded.numpy())
