"""Activation variants and dtype policies on load."""

import numpy as np
import transformers

from keras_bert import load_encoder, save_pretrained
from tests.checkpoints.conftest import TINY, hf_inputs, randomize

ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def test_tanh_gelu_checkpoint_matches_transformers(tiny_batch, tmp_path):
    hf_model = randomize(transformers.BertModel(
        transformers.BertConfig(**{**TINY, "hidden_act": "gelu_new"})))
    hf_model.save_pretrained(tmp_path / "gelu_new")
    encoder = load_encoder(str(tmp_path / "gelu_new"))
    assert encoder.config.hidden_act == "gelu_tanh"
    inputs = {name: tiny_batch[name] for name in ENCODER_INPUTS}
    reference = hf_model(**hf_inputs(tiny_batch)).last_hidden_state.detach().numpy()
    ours = np.asarray(encoder(inputs)["sequence_output"])
    mask = tiny_batch["input_mask"][..., None]
    # Parity is ~2e-7 here; loading it as erf gelu instead would be off by ~5e-5, so 1e-5 tells them apart.
    np.testing.assert_allclose(ours * mask, reference * mask, atol=1e-5, rtol=0)


def test_dtype_policy_on_load(tiny_hf_pretraining, tiny_batch, tmp_path):
    inputs = {name: tiny_batch[name] for name in ENCODER_INPUTS}
    full = load_encoder(tiny_hf_pretraining[0])
    save_pretrained(full, str(tmp_path / "ours"))
    for path in (tiny_hf_pretraining[0], str(tmp_path / "ours")):
        mixed = load_encoder(path, dtype="mixed_bfloat16")
        assert mixed.pooler.kernel.dtype == "float32" and mixed.pooler.compute_dtype == "bfloat16"
        np.testing.assert_array_equal(mixed.pooler.kernel.numpy(), full.pooler.kernel.numpy())
        pooled = np.asarray(mixed(inputs)["pooled_output"], dtype="float32")
        np.testing.assert_allclose(pooled, np.asarray(full(inputs)["pooled_output"]), atol=0.1, rtol=0)


def test_every_format_round_trips_the_activation_and_layer_norm_eps(tiny_batch, tmp_path):
    from keras_bert import BertEncoder, save_google_checkpoint, save_huggingface
    from keras_bert.config import BertConfig

    # Small weights and a large eps: with Google's default 1e-12 or erf gelu the outputs differ by > 1e-4.
    config = BertConfig(**{**TINY, "hidden_act": "gelu_tanh", "layer_norm_eps": 0.5})
    encoder = BertEncoder(config)
    inputs = {name: tiny_batch[name] for name in ENCODER_INPUTS}
    expected = np.asarray(encoder(inputs)["sequence_output"])
    save_google_checkpoint(encoder, str(tmp_path / "google" / "bert_model.ckpt"))
    save_huggingface(encoder, str(tmp_path / "hf"))
    save_pretrained(encoder, str(tmp_path / "ours"))
    for path in ("google", "hf", "ours"):
        loaded = load_encoder(str(tmp_path / path), dtype="float32")
        assert loaded.config == config, path
        np.testing.assert_array_equal(np.asarray(loaded(inputs)["sequence_output"]), expected, err_msg=path)
