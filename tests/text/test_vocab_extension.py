"""Choosing domain WordPieces and laying them into a vocab (pure Python over word counts)."""

import pytest

from keras_bert.text.vocab import RESERVED_TOKENS
from keras_bert.text.vocab_extension import (
    choose_new_tokens,
    extend_vocab,
    greedy_pieces,
    tokens_per_word,
)

CHARS = "abcdefghijklmnopqrstuvwxyz"
VOCAB = [*RESERVED_TOKENS, "[unused0]", *CHARS, "[unused1]", *(f"##{c}" for c in CHARS), "token"]


def test_greedy_pieces_longest_match_first():
    vocab = set(VOCAB) | {"tok", "##en", "##ens"}
    assert greedy_pieces("tokens", vocab) == ["token", "##s"]
    assert greedy_pieces("tokens", vocab - {"token"}) == ["tok", "##ens"]
    assert greedy_pieces("ens", vocab, continuation=True) == ["##ens"]
    assert greedy_pieces("tokens", vocab - {"token"}, extra="token") == ["token", "##s"]
    assert greedy_pieces("é", vocab) is None  # no piece for é: [UNK]


def test_choose_new_tokens_by_tokens_saved():
    # "tokenizer" x10 costs 1 + 4 = 5 pieces (token ##i ##z ##e ##r); "bert" x3 costs 4.
    counts = {"tokenizer": 10, "tokenizers": 2, "bert": 3, "token": 50}
    chosen = choose_new_tokens(counts, VOCAB, num_new_tokens=2, min_frequency=2)
    assert [token for token, _ in chosen][0] == "tokenizer"
    # 10 words x 4 saved + "tokenizers" (6 -> 2 pieces) x 2.
    assert chosen[0][1] == 10 * 4 + 2 * 4
    assert len(chosen) == 2 and chosen[1][1] > 0
    before = tokens_per_word(counts, VOCAB)
    after = tokens_per_word(counts, VOCAB + [token for token, _ in chosen])
    assert before == pytest.approx((10 * 5 + 2 * 6 + 3 * 4 + 50) / 65)
    assert after < before


def test_choose_never_turns_a_word_unk():
    # "##x" is missing: adding "ab" would make "abx" (old: a ##bx) a dead end, so "ab" must not be chosen.
    vocab = [t for t in VOCAB if t != "##x"] + ["##bx"]
    counts = {"abx": 20, "ab": 20}
    chosen = [token for token, _ in choose_new_tokens(counts, vocab, num_new_tokens=3, min_frequency=2)]
    assert "ab" not in chosen
    assert "abx" in chosen


def test_extend_vocab_fills_unused_then_appends():
    extension = extend_vocab(VOCAB, ["tokenizer", "##izer", "bert"], tokens_saved={"bert": 3})
    unused0, unused1 = VOCAB.index("[unused0]"), VOCAB.index("[unused1]")
    assert extension.new_ids == {"tokenizer": unused0, "##izer": unused1, "bert": len(VOCAB)}
    assert extension.vocab[unused0] == "tokenizer" and extension.vocab[-1] == "bert"
    assert len(extension.vocab) == len(VOCAB) + 1 and extension.num_unused_filled == 2
    assert extension.old_size == len(VOCAB) and extension.tokens_saved == {"bert": 3}
    # Every other token keeps its id.
    assert all(extension.vocab[i] == t for i, t in enumerate(VOCAB) if not t.startswith("[unused"))
    ids = {t: i for i, t in enumerate(VOCAB)}
    assert extension.pieces[unused0] == [ids["token"], ids["##i"], ids["##z"], ids["##e"], ids["##r"]]
    assert extension.pieces[unused1] == [ids["##i"], ids["##z"], ids["##e"], ids["##r"]]
    assert extension.pieces[len(VOCAB)] == [ids["b"], ids["##e"], ids["##r"], ids["##t"]]
    with pytest.raises(ValueError, match="'token' is already in the vocabulary"):
        extend_vocab(VOCAB, ["token"])
