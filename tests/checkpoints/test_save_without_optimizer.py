"""A model saved to serve or share (save_pretrained, the recipes' model.keras) carries no optimizer state."""

import os
import zipfile

import h5py
import keras
import numpy as np

import keras_bert as kb
from keras_bert.checkpoints import save_pretrained


def _weight_groups(path):
    with (zipfile.ZipFile(path) as archive, archive.open("model.weights.h5") as f,
          h5py.File(f, "r") as weights):
        return list(weights.keys())


def test_saved_model_has_no_optimizer_state_and_training_goes_on(tiny_config, tmp_path):
    model = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    x = {"input_word_ids": np.ones((4, 6), "int32"), "input_mask": np.ones((4, 6), "int32"),
         "input_type_ids": np.zeros((4, 6), "int32")}
    model.fit(x, np.array([0, 1, 0, 1]), verbose=0)
    model.save(tmp_path / "with.keras")
    assert "optimizer" in _weight_groups(tmp_path / "with.keras")
    save_pretrained(model, str(tmp_path / "shared"))
    path = tmp_path / "shared" / "model.keras"
    assert "optimizer" not in _weight_groups(path)
    assert os.path.getsize(path) < 0.5 * os.path.getsize(tmp_path / "with.keras")  # Adam: 2 slots per weight
    restored = keras.saving.load_model(path)
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    model.fit(x, np.array([0, 1, 0, 1]), verbose=0)  # the optimizer is back in place
    assert int(model.optimizer.iterations.numpy()) == 2
