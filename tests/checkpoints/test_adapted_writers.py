"""Every writer on a model quantized by Keras (`model.quantize("int8")`) or adapted by LoRA writes the float
weights the model computes with: read back, the logits / pooled outputs equal the model's float form's
(`float_model`: LoRA merged, int8 dequantized) to 1e-5; `save_pretrained` keeps Keras' int8 as `save` does."""

import numpy as np
import pytest
import tensorflow as tf

import keras_bert as kb
from keras_bert.checkpoints import save_google_checkpoint, save_huggingface, save_keras_hub
from keras_bert.export.serving_form import serving_form
from keras_bert.models.float_form import float_model
from tests.models.test_keras_apis import SEQ, frozen_heap, tiny_checkpoint

TEXTS = np.array(["the quick brown fox", "lazy dog jumps over"])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("ckpt"))


def adapted(path, how):
    model = kb.BertClassifier.from_pretrained(path, seq_length=SEQ, num_classes=3)
    if how == "int8":
        with frozen_heap():
            model.quantize("int8")
        return model
    model.enable_lora(2)
    rng = np.random.default_rng(0)
    for variable in model.trainable_weights:
        if "lora_kernel_b" in variable.path:  # B starts at 0: give the update a value to merge
            variable.assign(rng.normal(size=variable.shape).astype("float32"))
    return model


def pooled(encoder, inputs):
    return np.asarray(encoder(inputs, training=False)["pooled_output"])


@pytest.mark.parametrize("how", ["int8", "lora"])
def test_every_writer_writes_the_float_weights_a_quantized_or_lora_model_computes_with(checkpoint, tmp_path,
                                                                                       how):
    model = adapted(checkpoint, how)
    reference = float_model(model)
    assert reference is not model and not any(
        "lora" in v.path or "scale" in v.path for v in reference.weights)
    inputs = model.preprocessor(tf.constant(TEXTS))
    logits = np.asarray(reference(inputs, training=False))
    assert (np.abs(np.asarray(model(inputs, training=False)) - logits).max()
            < (0.05 if how == "int8" else 1e-5))

    reread = kb.BertClassifier.from_pretrained(save_keras_hub(model, tmp_path / "keras_hub"))
    np.testing.assert_allclose(np.asarray(reread(inputs, training=False)), logits, atol=1e-5, rtol=0)

    want = pooled(reference.encoder, inputs)
    huggingface = kb.BertEncoder.from_pretrained(save_huggingface(model, str(tmp_path / "hf")))
    np.testing.assert_allclose(pooled(huggingface, inputs), want, atol=1e-5, rtol=0)
    google = kb.BertEncoder.from_pretrained(
        save_google_checkpoint(model, str(tmp_path / "google" / "bert_model.ckpt")))
    np.testing.assert_allclose(pooled(google, inputs), want, atol=1e-5, rtol=0)

    with frozen_heap():  # the int8 save is quantized again as it loads
        saved = kb.BertClassifier.from_pretrained(kb.save_pretrained(model, str(tmp_path / "ours")))
    assert saved.encoder.transformer_layers[0].qkv.quantization_mode == ("int8" if how == "int8" else None)
    computed = np.asarray(model(inputs, training=False))
    np.testing.assert_allclose(np.asarray(saved(inputs, training=False)), computed, atol=1e-6, rtol=0)

    exported = serving_form(model)  # what export_saved_model writes (tests/export run it through SavedModel)
    np.testing.assert_allclose(np.asarray(exported(inputs, training=False)), logits, atol=1e-5, rtol=0)


def test_a_layer_quantized_in_another_mode_is_refused_by_name(checkpoint, tmp_path):
    model = kb.BertClassifier.from_pretrained(checkpoint, seq_length=SEQ, num_classes=2)
    with frozen_heap():
        model.quantize("int4", filters="classifier")
    with pytest.raises(ValueError, match=r"layer '.*classifier' is quantized as 'int4'; only int8 weights "
                                         "can be written as float weights"):
        save_keras_hub(model, tmp_path / "keras_hub")
    assert not (tmp_path / "keras_hub").exists()
