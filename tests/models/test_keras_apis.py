"""Keras' own APIs on every model from `from_pretrained`, as a Keras user calls them: `summary()`,
`quantize("int8")`, `save` + `keras.saving.load_model` (compiled, without Keras' "compile() was not called"
warning; quantized too) and `export(format="tf_saved_model")`."""

import contextlib
import gc
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert as kb
from keras_bert import compat

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jumps", "over",
         "lazy", "dog"]
SEQ = 8
# class, from_pretrained arguments, the inputs' leading shape (multiple choice: [batch, choices])
CASES = [
    (kb.BertEncoder, {}, (2,)),
    (kb.BertClassifier, {"labels": ["neg", "pos"]}, (2,)),
    (kb.BertSpanLabeler, {}, (2,)),
    (kb.BertTokenClassifier, {"num_classes": 3}, (2,)),
    (kb.BertMultipleChoice, {"num_choices": 2}, (2, 2)),
    (kb.BertPretrainer, {}, (2,)),
]


def tiny_checkpoint(directory):
    """A random 1-layer, 8-wide encoder saved in `directory` with its vocab.txt; returns its path."""
    (directory / "vocab-src.txt").write_text("\n".join(WORDS) + "\n")
    config = kb.BertConfig(vocab_size=len(WORDS), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                           intermediate_size=16, max_position_embeddings=16)
    return kb.save_pretrained(kb.BertEncoder(config), str(directory / "bert"),
                              str(directory / "vocab-src.txt"))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return tiny_checkpoint(tmp_path_factory.mktemp("ckpt"))


def token_inputs(model, leading):
    rng = np.random.default_rng(3)
    ids = rng.integers(5, len(WORDS), size=(*leading, SEQ)).astype("int32")
    inputs = {"input_word_ids": ids, "input_mask": np.ones_like(ids), "input_type_ids": np.zeros_like(ids)}
    if isinstance(model, kb.BertPretrainer):
        inputs["masked_lm_positions"] = np.array([[1, 3], [2, 6]], "int32")
    return inputs


def outputs(model, inputs):
    return [np.asarray(x) for x in keras.tree.flatten(model(inputs, training=False))]


def assert_close(got, want, atol):
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, atol=atol, rtol=0)


@contextlib.contextmanager
def frozen_heap():
    """Keras' quantize runs gc.collect() per layer: a second each over this process's heap, frozen here."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def save_and_load(model, path):
    """keras.saving.load_model of model.save(path), and the warnings Keras gave (numpy's __array__ aside)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.save(path)
        with frozen_heap():
            loaded = keras.saving.load_model(path)
    return loaded, [str(w.message) for w in caught if "__array__" not in str(w.message)]


@pytest.mark.parametrize("cls, kwargs, leading", CASES, ids=[case[0].__name__ for case in CASES])
def test_keras_apis_on_every_model(checkpoint, tmp_path, cls, kwargs, leading):
    model = cls.from_pretrained(checkpoint, seq_length=SEQ, **kwargs)
    inputs = token_inputs(model, leading)
    float_outputs = outputs(model, inputs)

    lines = []
    model.summary(print_fn=lambda line, **_: lines.append(line))
    assert f"{model.count_params():,}" in "\n".join(lines)

    exported = tmp_path / "exported"
    model.export(str(exported), format="tf_saved_model", verbose=False)
    loaded = tf.saved_model.load(str(exported))  # kept: its functions reference its variables
    served = loaded.serve({k: tf.constant(v) for k, v in inputs.items()})
    assert_close([np.asarray(x) for x in keras.tree.flatten(served)], float_outputs, atol=1e-5)

    if cls is not kb.BertEncoder:  # the encoder has no loss: nothing to compile
        model.compile()
    loaded, caught = save_and_load(model, str(tmp_path / "float.keras"))
    assert caught == [] and loaded.compiled == model.compiled
    assert_close(outputs(loaded, inputs), float_outputs, atol=0)

    with frozen_heap():
        model.quantize("int8")
    encoder = model if cls is kb.BertEncoder else model.encoder
    assert compat.dense_kernel_variable(encoder.transformer_layers[0].qkv).dtype == "int8"
    quantized_outputs = outputs(model, inputs)
    assert_close(quantized_outputs, float_outputs, atol=0.05)  # int8 weights and per-row int8 inputs
    assert any(np.abs(q - f).max() > 0 for q, f in zip(quantized_outputs, float_outputs, strict=True))

    loaded, caught = save_and_load(model, str(tmp_path / "int8.keras"))
    assert caught == []
    assert_close(outputs(loaded, inputs), quantized_outputs, atol=0)
