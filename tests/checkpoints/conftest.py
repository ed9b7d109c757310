"""Fixtures for checkpoint tests: tiny random Hugging Face BERTs written to disk by transformers itself."""

import numpy as np
import pytest
import torch
import transformers

TINY = dict(vocab_size=50, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
            max_position_embeddings=40, type_vocab_size=2, hidden_act="gelu")


def randomize(model, seed=0):
    """Every parameter random (LayerNorm and biases too), so a weight loaded into the wrong place shows."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.2)
    return model.eval()


def hf_inputs(batch):
    return {"input_ids": torch.tensor(batch["input_word_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(batch["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(batch["input_type_ids"], dtype=torch.long)}


@pytest.fixture
def tiny_batch():
    """Three sequences of 12 over the tiny vocab: padding, two segments, masked positions."""
    rng = np.random.default_rng(7)
    ids = rng.integers(5, 50, size=(3, 12)).astype("int32")
    mask = np.array([[1] * 12, [1] * 9 + [0] * 3, [1] * 5 + [0] * 7], dtype="int32")
    types = np.array([[0] * 6 + [1] * 6, [0] * 4 + [1] * 5 + [0] * 3, [0] * 12], dtype="int32")
    positions = np.array([[1, 7, 11], [0, 3, 8], [2, 4, 4]], dtype="int32")
    return {"input_word_ids": ids * mask, "input_mask": mask, "input_type_ids": types,
            "masked_lm_positions": positions}


@pytest.fixture
def tiny_hf_pretraining(tmp_path):
    """(directory, model): a random transformers.BertForPreTraining saved as config.json +
    model.safetensors."""
    model = randomize(transformers.BertForPreTraining(transformers.BertConfig(**TINY)))
    directory = tmp_path / "hf_pretraining"
    model.save_pretrained(directory)
    return str(directory), model


def hf_pretraining_logits(model, batch):
    """(MLM logits at the masked positions [b, p, vocab], NSP logits [b, 2]) from transformers."""
    with torch.no_grad():
        out = model(**hf_inputs(batch))
    positions = torch.tensor(batch["masked_lm_positions"], dtype=torch.long)
    mlm = torch.take_along_dim(out.prediction_logits, positions[..., None], dim=1)
    return mlm.numpy(), out.seq_relationship_logits.numpy()


def ours_pretraining_logits(pretrainer, batch):
    out = pretrainer(batch)
    return np.asarray(out["masked_lm_logits"]), np.asarray(out["next_sentence_logits"])
