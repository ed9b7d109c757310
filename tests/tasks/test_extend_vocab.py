"""Extending a checkpoint's vocab: old texts keep ids and outputs, new rows are the mean of their old pieces,
heads survive, and pre-training continues from the result."""

import os
import string

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.checkpoints import (
    find_vocab_file,
    read_checkpoint,
    save_google_checkpoint,
    save_huggingface,
    save_pretrained,
)
from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder, load_encoder
from keras_bert.tasks.extend_vocab import extend_checkpoint_vocab
from keras_bert.tasks.pretraining.model import BertPretrainer, load_pretrainer
from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.text.vocab import load_vocab

DOMAIN = [
    "The tokenizer splits pretraining text into wordpieces.",
    "A tokenizer and a detokenizer share the wordpiece vocabulary.",
    "",
    "Pretraining with masked tokens needs a tokenizer.",
    "Each wordpiece of the tokenizer has an embedding.",
]
OLD_TEXTS = ["The cat sat on the mat.", "Dogs run fast, 42 times!", "Hello world"]


def write_tiny_checkpoint(tmp_path, fmt):
    """A random 2-layer pretrainer with random MLM bias over letters + [unused0..1], saved as `fmt`."""
    chars = string.ascii_lowercase + string.digits
    vocab = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused1]", *string.punctuation,
             *chars, *(f"##{c}" for c in chars), "the", "token", "##s"]
    vocab = list(dict.fromkeys(vocab))
    vocab_file = tmp_path / "old_vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n")
    keras.utils.set_random_seed(3)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    pretrainer = BertPretrainer(BertEncoder(config))
    pretrainer.masked_lm.output_bias.assign(np.random.default_rng(0).normal(size=len(vocab)).astype("float32"))
    path = str(tmp_path / f"old_{fmt}")
    {"google": lambda: save_google_checkpoint(pretrainer, os.path.join(path, "bert_model.ckpt"), vocab_file),
     "huggingface": lambda: save_huggingface(pretrainer, path, vocab_file),
     "keras": lambda: save_pretrained(pretrainer, path, vocab_file)}[fmt]()
    return path, vocab


def _encode(encoder, tokenizer, texts):
    inputs = BertPreprocessor(tokenizer, seq_length=16)(tf.constant(texts))
    return inputs["input_word_ids"].numpy(), encoder(inputs)["sequence_output"].numpy()


@pytest.mark.parametrize("fmt", ["google", "huggingface", "keras"])
def test_extension_keeps_old_texts_and_initialises_new_rows(tmp_path, fmt):
    old_path, old_vocab = write_tiny_checkpoint(tmp_path, fmt)
    domain = tmp_path / "domain.txt"
    domain.write_text("\n".join(DOMAIN * 3) + "\n")
    result = extend_checkpoint_vocab(old_path, str(domain), num_new_tokens=4, output_dir=tmp_path / "new")
    extension = result.extension

    new_vocab = load_vocab(os.path.join(tmp_path / "new", "vocab.txt"))
    assert new_vocab == extension.vocab
    # Two [unusedK] slots (ids 1 and 6) filled first, two tokens appended.
    ids = sorted(extension.new_ids.values())
    assert ids == [1, 6, len(old_vocab), len(old_vocab) + 1]
    assert extension.num_unused_filled == 2 and len(new_vocab) == len(old_vocab) + 2
    assert "tokenizer" in extension.new_ids
    assert result.tokens_per_word_after < result.tokens_per_word_before

    # Old texts: the same ids and the same encoder outputs.
    old_tokenizer, new_tokenizer = BertTokenizer(vocabulary=old_vocab), BertTokenizer(vocabulary=new_vocab)
    old_ids, old_out = _encode(load_encoder(old_path), old_tokenizer, OLD_TEXTS)
    new_ids, new_out = _encode(load_encoder(result.path), new_tokenizer, OLD_TEXTS)
    np.testing.assert_array_equal(new_ids, old_ids)
    assert np.abs(new_out - old_out).max() <= 1e-6
    # Domain text now uses the new tokens.
    domain_ids = new_tokenizer(tf.constant(DOMAIN[:1])).flat_values.numpy()
    assert extension.new_ids["tokenizer"] in domain_ids

    # New rows: the mean of the old pieces' rows (embeddings and MLM bias); heads kept.
    _, old_weights = read_checkpoint(old_path)
    config, new_weights = read_checkpoint(result.path)
    assert config.vocab_size == len(new_vocab)
    for name in ("bert/embeddings/word_embeddings", "cls/predictions/output_bias"):
        old, new = old_weights.arrays[name], new_weights.arrays[name]
        np.testing.assert_array_equal(np.delete(new[: len(old)], [1, 6], axis=0),
                                      np.delete(old, [1, 6], axis=0))
        for new_id, pieces in extension.pieces.items():
            np.testing.assert_allclose(new[new_id], old[pieces].mean(axis=0), rtol=0, atol=1e-6)
    tokenizer_pieces = extension.pieces[extension.new_ids["tokenizer"]]
    assert [old_vocab[i] for i in tokenizer_pieces] == ["token", "##i", "##z", "##e", "##r"]
    np.testing.assert_array_equal(new_weights.arrays["cls/predictions/transform/dense/kernel"],
                                  old_weights.arrays["cls/predictions/transform/dense/kernel"])


def test_pretraining_continues_from_extended_checkpoint(tmp_path):
    old_path, _ = write_tiny_checkpoint(tmp_path, "google")
    domain = tmp_path / "domain.txt"
    domain.write_text("\n".join(DOMAIN * 3) + "\n")
    result = extend_checkpoint_vocab(old_path, str(domain), num_new_tokens=4, output_dir=tmp_path / "new")
    # What recipes.pretrain --init_checkpoint does: the pretrainer with its heads, the vocab beside it.
    model = load_pretrainer(result.path)
    tokenizer = BertTokenizer(find_vocab_file(result.path))
    assert model.encoder.config.vocab_size == tokenizer.vocab_size == len(result.extension.vocab)
    np.testing.assert_array_equal(model.next_sentence.kernel.numpy(),
                                  load_pretrainer(old_path).next_sentence.kernel.numpy())
    texts = tf.constant([text for text in DOMAIN if text])
    features = {name: value.numpy()
                for name, value in BertPreprocessor(tokenizer, seq_length=16)(texts).items()}
    features["masked_lm_positions"] = np.tile(np.array([[1, 2, 3]], "int32"), (len(texts), 1))
    features["masked_lm_ids"] = np.take_along_axis(features["input_word_ids"],
                                                   features["masked_lm_positions"], 1)
    features["masked_lm_weights"] = np.ones((len(texts), 3), "float32")
    features["next_sentence_labels"] = np.zeros((len(texts), 1), "int32")
    assert np.isin(list(result.extension.new_ids.values()), features["masked_lm_ids"]).any()
    bias_before = model.masked_lm.output_bias.numpy().copy()
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False, run_eagerly=True)
    history = model.fit(tf.data.Dataset.from_tensors(features).repeat(), steps_per_epoch=3, epochs=1,
                        verbose=0)
    assert np.isfinite(history.history["loss"]).all() and history.history["masked_lm_loss"][0] > 0
    # The resized MLM bias trains, the appended rows included.
    assert np.abs(model.masked_lm.output_bias.numpy() - bias_before)[len(result.extension.vocab) - 1] > 0
