"""Bit-exact parity of BertTokenizer with Google's original FullTokenizer on 1.5 MB of mixed text.

Reference: transformers' Python BERT tokenizer adjusted to the original
(tests/text/tokenization_reference.py).
"""

import pytest
import tensorflow as tf

from keras_bert.text import BertTokenizer
from keras_bert.text.vocab import load_vocab, save_vocab
from keras_bert.text.vocab_learner import learn_wordpiece_vocab
from tests.text.tokenization_reference import OriginalFullTokenizer


def _assert_same_ids(tokenizer, reference, lines):
    ids = tokenizer(tf.constant(lines)).to_list()
    mismatched = [i for i, line in enumerate(lines) if ids[i] != reference.tokenize(line)]
    examples = [(lines[i][:120], ids[i][:20], reference.tokenize(lines[i])[:20]) for i in mismatched[:3]]
    assert not mismatched, f"{len(mismatched)}/{len(lines)} lines differ, e.g. {examples}"


def test_corpus_is_large_and_mixed(corpus_lines):
    text = "\n".join(corpus_lines)
    assert len(text.encode("utf-8")) >= 1_000_000

    def count(low, high):
        return sum(low <= ord(c) <= high for c in text)

    # Greek, Cyrillic, CJK, Hangul, full-width, emoji, control characters, accented Latin.
    for low, high, least in [(0x370, 0x3FF, 5000), (0x400, 0x4FF, 20000), (0x4E00, 0x9FFF, 10000),
                             (0xAC00, 0xD7AF, 5000), (0xFF01, 0xFF5E, 100), (0x1F300, 0x1FAFF, 100),
                             (0x0, 0x1F, 1000), (0xC0, 0x24F, 20000)]:  # fmt: skip
        assert count(low, high) >= least, (hex(low), hex(high))
    assert max(len(word) for word in text.split()) > 100


def test_uncased_parity_with_original(corpus_lines, uncased_vocab_file, uncased_tokenizer):
    reference = OriginalFullTokenizer(load_vocab(uncased_vocab_file), lower_case=True)
    _assert_same_ids(uncased_tokenizer, reference, corpus_lines)


def test_cased_parity_with_learned_vocab(corpus_lines, tmp_path):
    # The vocab is learned from a fifth of the corpus (speed) and used on all of it.
    vocab = learn_wordpiece_vocab(corpus_lines[::5], vocab_size=6000, lower_case=False)
    assert len(vocab) == 6000 and vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    path = tmp_path / "cased_vocab.txt"
    save_vocab(vocab, path)
    tokenizer = BertTokenizer(str(path), lower_case=False)
    reference = OriginalFullTokenizer(load_vocab(path), lower_case=False)
    ids = tokenizer(tf.constant(corpus_lines[:2000])).to_list()
    pieces = sum(len(row) for row in ids)
    assert sum(1 for row in ids for i in row if i != tokenizer.unk_id) > 0.9 * pieces  # a real vocab
    _assert_same_ids(tokenizer, reference, corpus_lines)


@pytest.mark.parametrize("lower_case", [True, False])
def test_invalid_utf8_matches_decode_ignore(uncased_vocab_file, lower_case):
    reference = OriginalFullTokenizer(load_vocab(uncased_vocab_file), lower_case=lower_case)
    tokenizer = BertTokenizer(uncased_vocab_file, lower_case=lower_case)
    lines = [b"bad\xff\xfebytes here", b"trunc\xe2\x82 ok", b"\xed\xa0\x80surrogate", b"over\xc0\xaflong",
             b"\xf0\x9f\x98", b"caf\xc3\xa9\x80 x", b"\x80\x80\x80"]  # fmt: skip
    ids = tokenizer(tf.constant(lines)).to_list()
    assert ids == [reference.tokenize(line) for line in lines]
    assert ids[-1] == [] and ids[0][:1] == [tokenizer.token_to_id("bad")]
