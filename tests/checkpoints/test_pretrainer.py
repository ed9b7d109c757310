"""Pre-training heads through every format, checked against transformers.BertForPreTraining."""

import logging
import os
import shutil

import numpy as np
import tensorflow as tf
import torch
import transformers

from keras_bert import BertPretrainer, find_vocab_file, load_encoder, load_pretrainer, save_huggingface
from keras_bert.checkpoints import save_google_checkpoint, save_pretrained
from tests.checkpoints.conftest import (
    TINY,
    hf_inputs,
    hf_pretraining_logits,
    ours_pretraining_logits,
    randomize,
)

TOL = 1e-4


def assert_logits_match(pretrainer, reference, batch):
    mlm, nsp = ours_pretraining_logits(pretrainer, batch)
    ref_mlm, ref_nsp = reference
    assert mlm.shape == ref_mlm.shape == (3, 3, TINY["vocab_size"])
    np.testing.assert_allclose(mlm, ref_mlm, atol=TOL, rtol=0)
    np.testing.assert_allclose(nsp, ref_nsp, atol=TOL, rtol=0)


def test_huggingface_pretraining_heads_match_transformers(tiny_hf_pretraining, tiny_batch, caplog):
    directory, hf_model = tiny_hf_pretraining
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        pretrainer = BertPretrainer.from_pretrained(directory)
    assert not [r for r in caplog.records if "initialised" in r.getMessage()]
    assert_logits_match(pretrainer, hf_pretraining_logits(hf_model, tiny_batch), tiny_batch)


def test_pytorch_bin_loads_like_safetensors(tiny_hf_pretraining, tiny_batch, tmp_path):
    directory, hf_model = tiny_hf_pretraining
    # transformers 5 writes only safetensors; a .bin is what torch.save of the state dict gives.
    (tmp_path / "bin").mkdir()
    shutil.copy(os.path.join(directory, "config.json"), tmp_path / "bin")
    torch.save(hf_model.state_dict(), tmp_path / "bin" / "pytorch_model.bin")
    pretrainer = load_pretrainer(str(tmp_path / "bin"))
    assert_logits_match(pretrainer, hf_pretraining_logits(hf_model, tiny_batch), tiny_batch)


def test_google_checkpoint_with_cls_heads(tiny_hf_pretraining, tiny_batch, tmp_path):
    directory, hf_model = tiny_hf_pretraining
    reference = hf_pretraining_logits(hf_model, tiny_batch)
    prefix = str(tmp_path / "google" / "bert_model.ckpt")
    save_google_checkpoint(load_pretrainer(directory), prefix)

    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    h = TINY["hidden_size"]
    assert shapes["cls/seq_relationship/output_weights"] == [2, h]
    assert shapes["cls/predictions/output_bias"] == [TINY["vocab_size"]]
    assert shapes["bert/encoder/layer_1/attention/self/query/kernel"] == [h, h]
    # 5 embedding + 16 per layer + 2 pooler + 5 masked-LM + 2 next-sentence variables.
    assert len(shapes) == 5 + 16 * TINY["num_hidden_layers"] + 2 + 5 + 2
    assert_logits_match(load_pretrainer(prefix), reference, tiny_batch)


def test_save_huggingface_pretrainer_loads_in_transformers(tiny_hf_pretraining, tiny_batch, tmp_path):
    directory, hf_model = tiny_hf_pretraining
    reference = hf_pretraining_logits(hf_model, tiny_batch)
    save_huggingface(load_pretrainer(directory), str(tmp_path / "export"))
    reloaded = transformers.BertForPreTraining.from_pretrained(str(tmp_path / "export")).eval()
    for ours, ref in zip(hf_pretraining_logits(reloaded, tiny_batch), reference, strict=True):
        np.testing.assert_allclose(ours, ref, atol=1e-6, rtol=0)


def test_save_pretrained_round_trip_is_identical(tiny_hf_pretraining, tiny_batch, tmp_path):
    pretrainer = load_pretrainer(tiny_hf_pretraining[0])
    vocab = tmp_path / "vocab.txt"
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # the vocab beside a checkpoint is read too
    tokens = special + [f"tok{i}" for i in range(len(special), TINY["vocab_size"])]
    vocab.write_text("".join(f"{token}\n" for token in tokens))
    save_pretrained(pretrainer, str(tmp_path / "ours"), vocab_file=str(vocab))
    # and the writer's own record of what it wrote (keras_bert.outputs.MANIFEST)
    assert sorted(p.name for p in (tmp_path / "ours").iterdir()) == [".keras_bert_output", "bert_config.json",
                                                                     "model.keras", "vocab.txt"]
    assert find_vocab_file(str(tmp_path / "ours" / "model.keras")) == str(tmp_path / "ours" / "vocab.txt")
    for ours, ref in zip(ours_pretraining_logits(load_pretrainer(str(tmp_path / "ours")), tiny_batch),
                         ours_pretraining_logits(pretrainer, tiny_batch), strict=True):
        np.testing.assert_array_equal(ours, ref)
    encoder = load_encoder(str(tmp_path / "ours" / "model.keras"))
    np.testing.assert_array_equal(encoder.pooler.kernel.numpy(), pretrainer.encoder.pooler.kernel.numpy())


def test_encoder_only_checkpoint_initialises_heads_in_one_line(tiny_batch, tmp_path, caplog):
    hf_model = randomize(transformers.BertModel(transformers.BertConfig(**TINY)))
    hf_model.save_pretrained(tmp_path / "encoder_only")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        pretrainer = load_pretrainer(str(tmp_path / "encoder_only"))
    warnings = [r.getMessage() for r in caplog.records if r.name == "keras_bert"]
    assert len(warnings) == 1 and "masked_lm or next_sentence" in warnings[0], warnings
    # The encoder is loaded all the same: its pooled output matches transformers.
    ours = pretrainer.encoder({k: tiny_batch[k] for k in ("input_word_ids", "input_mask", "input_type_ids")})
    reference = hf_model(**hf_inputs(tiny_batch)).pooler_output.detach().numpy()
    np.testing.assert_allclose(np.asarray(ours["pooled_output"]), reference, atol=TOL, rtol=0)
