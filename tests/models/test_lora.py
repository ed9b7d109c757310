"""LoRA: a frozen encoder with rank-R updates trains; the merged plain model computes what the LoRA model
does."""

import keras
import numpy as np
import pytest

import keras_bert as kb
from keras_bert.models.lora import count_parameters
from tests.models.test_models import _inputs


def _trained_lora_classifier(tiny_config):
    model = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=3, dropout=0.0)
    encoder_before = {v.path: v.numpy() for v in model.encoder.weights}
    trainable = model.enable_lora(2)
    # Per block: qkv 32x2 + 2x96, attention_output 32x2 + 2x32, intermediate 32x2 + 2x64, output 64x2 + 2x32;
    # plus the head 32x3 + 3.
    assert trainable == 2 * (64 + 192 + 64 + 64 + 64 + 128 + 128 + 64) + 99
    assert count_parameters(model.trainable_weights) == trainable
    x = _inputs(batch=6, seed=1)
    y = np.array([0, 1, 2, 0, 1, 2])
    model.compile(optimizer=keras.optimizers.Adam(3e-2), loss="auto", metrics=None, jit_compile=False)
    history = model.fit(x, y, epochs=30, batch_size=6, verbose=0)
    return model, encoder_before, history.history["loss"], x


def test_lora_trains_only_adapters_and_head(tiny_config):
    model, encoder_before, losses, _ = _trained_lora_classifier(tiny_config)
    assert losses[-1] < 0.5 * losses[0]
    for variable in model.encoder.weights:
        if "lora_kernel" not in variable.path:  # the frozen encoder did not move
            np.testing.assert_array_equal(variable.numpy(), encoder_before[variable.path])
    assert any(np.abs(v.numpy()).max() > 0 for v in model.encoder.weights if "lora_kernel_b" in v.path)


def test_merged_and_saved_models_are_plain_and_equal_the_lora_model(tiny_config, tmp_path):
    model, _, _, x = _trained_lora_classifier(tiny_config)
    expected = model.predict(x, verbose=0)
    merged = model.merged_lora()
    assert not any("lora" in v.path for v in merged.weights)
    assert len(merged.weights) == len(model.weights) - 2 * 4 * tiny_config.num_hidden_layers
    np.testing.assert_allclose(merged.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)
    model.save(tmp_path / "model.keras")
    restored = keras.saving.load_model(tmp_path / "model.keras", compile=False)
    assert restored.lora_rank is None and not any("lora" in v.path for v in restored.weights)
    np.testing.assert_allclose(restored.predict(x, verbose=0), expected, rtol=1e-5, atol=1e-5)


def test_rejects_a_bad_rank_and_a_second_call(tiny_config):
    model = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=2)
    with pytest.raises(ValueError, match="LoRA rank must be an integer >= 1, got 0"):
        model.enable_lora(0)
    model.enable_lora(4)
    with pytest.raises(ValueError, match="already enabled"):
        model.enable_lora(4)


def test_serve_after_enable_lora_or_quantize_runs_the_changed_layers(tiny_config):
    """`serve` keeps its traced graph per model; enabling LoRA or quantizing changes what the layers compute,
    so the next `serve` runs the changed layers (answers equal `predict`'s), not the graph traced before."""
    model = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=3, dropout=0.0)
    x = _inputs(batch=2, seed=3)
    before = model.serve(x, signature="token_ids")["logits"]
    model.enable_lora(2)
    for variable in model.encoder.weights:
        if "lora_kernel_b" in variable.path:
            variable.assign(np.full(variable.shape, 0.5, variable.dtype))
    adapted = model.serve(x, signature="token_ids")["logits"]
    assert np.abs(adapted - before).max() > 1e-3  # logits ~1e-2: the adapters move them by half
    np.testing.assert_allclose(adapted, model.predict(x, verbose=0), atol=1e-5)
    plain = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=3, dropout=0.0)
    plain.serve(x, signature="token_ids")
    plain.quantize("int8")
    np.testing.assert_allclose(plain.serve(x, signature="token_ids")["logits"], plain.predict(x, verbose=0),
                               atol=1e-5)
