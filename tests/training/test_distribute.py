"""`fix_keras_multi_worker` patches private Keras internals: these tests fail when a new Keras moves or fixes
them, so that the patch is re-checked rather than silently applied (or skipped) there. The multi-worker
run itself is tests/recipes/test_pretrain.py::test_multi_worker_equals_single_process (slow)."""

import inspect

import keras
import pytest
from keras.src.backend.tensorflow import trainer as tf_trainer

from keras_bert.training import distribute


def _unpatched():
    return (inspect.unwrap(tf_trainer.reduce_per_replica),
            inspect.unwrap(tf_trainer.TensorFlowTrainer._maybe_symbolic_build))


def test_installed_keras_is_one_the_fix_was_written_for():
    minor = ".".join(keras.__version__.split(".")[:2])
    assert minor in distribute.PATCHED_KERAS_MINORS, (
        f"Keras {keras.__version__}: re-read keras/src/backend/tensorflow/trainer.py against "
        "fix_keras_multi_worker, then add this minor to PATCHED_KERAS_MINORS or drop the fix")


def test_patched_internals_exist_and_still_have_the_bugs():
    reduce_per_replica, symbolic_build = _unpatched()
    assert list(inspect.signature(reduce_per_replica).parameters) == ["values", "strategy", "reduction"]
    assert list(inspect.signature(symbolic_build).parameters) == ["self", "iterator", "data_batch"]
    # Scalar logs are averaged over workers along axis 0, which they lack.
    assert 'strategy.reduce("MEAN", v, axis=0)' in inspect.getsource(reduce_per_replica)
    # The first batch, a structure of per-replica values, is passed to strategy.reduce whole.
    source = inspect.getsource(symbolic_build)
    assert "self.distribute_strategy.reduce(" in source and "maybe_distributed_data_batch," in source


@pytest.fixture
def restore_keras(monkeypatch):
    # Re-set to themselves so that monkeypatch puts the originals back after the test.
    monkeypatch.setattr(tf_trainer, "reduce_per_replica", tf_trainer.reduce_per_replica)
    monkeypatch.setattr(tf_trainer.TensorFlowTrainer, "_maybe_symbolic_build",
                        tf_trainer.TensorFlowTrainer._maybe_symbolic_build)
    return monkeypatch


def test_applied_once_on_its_keras_and_not_on_another(restore_keras):
    originals = _unpatched()
    restore_keras.setattr(keras, "__version__", "3.99.0")
    assert distribute.fix_keras_multi_worker() is False
    assert (tf_trainer.reduce_per_replica, tf_trainer.TensorFlowTrainer._maybe_symbolic_build) == originals

    restore_keras.setattr(keras, "__version__", f"{distribute.PATCHED_KERAS_MINORS[-1]}.0")
    assert distribute.fix_keras_multi_worker() is True
    patched = (tf_trainer.reduce_per_replica, tf_trainer.TensorFlowTrainer._maybe_symbolic_build)
    assert all(fn._keras_bert_fixed for fn in patched) and patched != originals
    assert _unpatched() == originals
    assert distribute.fix_keras_multi_worker() is True  # idempotent: nothing wrapped twice
    assert (tf_trainer.reduce_per_replica, tf_trainer.TensorFlowTrainer._maybe_symbolic_build) == patched
