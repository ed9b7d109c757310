"""Vocab loading errors, the WordPiece learner and the build_vocab recipe."""

import pytest
import tensorflow as tf

from keras_bert.text import BertTokenizer
from keras_bert.text.vocab import load_vocab
from keras_bert.text.vocab_learner import learn_wordpiece_vocab


def test_load_vocab_strips_and_checks(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK] \n[CLS]\n[SEP]\n[MASK]\nhello\n", encoding="utf-8")
    assert load_vocab(path) == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello"]
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nhello\n", encoding="utf-8")
    with pytest.raises(ValueError, match="lines 6 and 7"):
        load_vocab(path)
    path.write_bytes(b"[PAD]\n[UNK]\n\xff\n")
    with pytest.raises(ValueError, match=f"{path}: line 3 is not valid UTF-8"):
        load_vocab(path)


def test_load_vocab_removes_byte_order_mark(tmp_path, caplog):
    # With the BOM kept, [PAD] would be missing ("\ufeff[PAD]") or the first word would never match.
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n", encoding="utf-8-sig")
    with caplog.at_level("WARNING", logger="keras_bert"):
        assert load_vocab(path)[:2] == ["[PAD]", "[UNK]"]
    assert f"{path}: removed the UTF-8 byte order mark" in caplog.text
    path.write_text("hello\n[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n", encoding="utf-8-sig")
    assert BertTokenizer(str(path))(tf.constant(["hello x"])).to_list() == [[0, 2]]


def test_learned_vocab_tokenizes_its_corpus(tmp_path):
    lines = ["The cat sat on the mat.", "Cats and dogs, the dogs sat.", "Ünïcödé words: Straße, café!"] * 20
    vocab = learn_wordpiece_vocab(lines, vocab_size=80, lower_case=True)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(set(vocab)) == len(vocab)
    assert "the" in vocab and "cafe" in vocab and "é" not in vocab  # accents stripped before learning
    tokenizer = BertTokenizer(vocabulary=vocab, lower_case=True)
    ids = tokenizer(tf.constant(lines[:3])).flat_values.numpy()
    assert tokenizer.unk_id not in ids
    with pytest.raises(ValueError, match="vocab_size=5"):
        learn_wordpiece_vocab(lines, vocab_size=5)
    with pytest.raises(ValueError, match="no words"):
        learn_wordpiece_vocab(["", "  "], vocab_size=50)


def test_build_vocab_recipe(tmp_path, run_in_process):
    # In this process: tests/test_commands.py runs build_vocab as a user's command, in a fresh process.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hello World, HELLO tokenizer!\nA cased vocab keeps Case.\n" * 30, encoding="utf-8")
    output = tmp_path / "vocab.txt"
    status, stderr = run_in_process("build_vocab", f"--input_files={tmp_path}/*.txt",
                                    f"--output_file={output}", "--vocab_size=200", "--nodo_lower_case")
    assert status is None, stderr  # main returned
    vocab = load_vocab(output)
    assert 60 < len(vocab) <= 200 and "Hello" in vocab and "HELLO" in vocab and "hello" not in vocab
