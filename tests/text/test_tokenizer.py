"""BertTokenizer: offsets, word ids, special cases, bad input, serialization, tf.data and SavedModel use."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text import BertTokenizer
from keras_bert.text import tokenizer as tokenizer_lib
from keras_bert.text.vocab import load_vocab
from tests.text.tokenization_reference import OriginalFullTokenizer


def _sample(lines, n=1500):
    return [line for line in lines[::7] if line][:n]


def test_word_offsets_point_into_original(corpus_lines, uncased_vocab_file, uncased_tokenizer):
    reference = OriginalFullTokenizer(load_vocab(uncased_vocab_file), lower_case=True)
    lines = _sample(corpus_lines)
    words, starts, ends = uncased_tokenizer.split_words_with_offsets(tf.constant(lines))
    checked = 0
    for line, row_words, row_starts, row_ends in zip(
        lines, words.to_list(), starts.to_list(), ends.to_list(), strict=True
    ):
        data = line.encode("utf-8")
        decoded = [w.decode("utf-8") for w in row_words]
        assert decoded == reference.words(line)
        assert row_starts == sorted(row_starts) and all(
            s < e for s, e in zip(row_starts, row_ends, strict=True)
        )
        for word, start, end in zip(decoded, row_starts, row_ends, strict=True):
            if "σ" in word or "ς" in word:
                continue  # final sigma depends on the neighbours of the span
            # The original bytes of the span tokenize, alone, to exactly this word.
            assert reference.words(data[start:end].decode("utf-8")) == [word], (line, word, start, end)
            checked += 1
    assert checked > 10000


def test_piece_offsets_and_word_ids(corpus_lines, uncased_tokenizer, uncased_vocab_file):
    reference = OriginalFullTokenizer(load_vocab(uncased_vocab_file), lower_case=True)
    lines = _sample(corpus_lines, 600)
    ids, starts, ends = uncased_tokenizer.tokenize_with_offsets(tf.constant(lines))
    ids2, word_ids = uncased_tokenizer.tokenize_with_word_ids(tf.constant(lines))
    _, word_starts, word_ends = uncased_tokenizer.split_words_with_offsets(tf.constant(lines))
    assert ids.to_list() == ids2.to_list() == uncased_tokenizer(tf.constant(lines)).to_list()
    starts, ends, word_ids = (np.array(t.to_list(), dtype=object) for t in (starts, ends, word_ids))
    word_starts, word_ends = word_starts.to_list(), word_ends.to_list()
    for i, line in enumerate(lines):
        expected_word_ids = [
            k for k, w in enumerate(reference.words(line)) for _ in reference.wordpiece.tokenize(w)
        ]
        assert word_ids[i] == expected_word_ids
        for k in set(expected_word_ids):
            positions = [j for j, w in enumerate(expected_word_ids) if w == k]
            piece_starts = np.array(starts[i])[positions]
            piece_ends = np.array(ends[i])[positions]
            # Pieces of a word tile its span in order (several pieces may share one source character).
            assert piece_starts[0] == word_starts[i][k] and piece_ends[-1] == word_ends[i][k]
            assert np.all(np.diff(piece_starts) >= 0) and np.all(np.diff(piece_ends) >= 0)
            assert np.all(piece_ends > piece_starts)
            data = line.encode("utf-8")
            for gap_start, gap_end in zip(piece_ends[:-1], piece_starts[1:], strict=True):
                # Between pieces lie only characters the original drops (e.g. U+200B, U+00AD).
                assert gap_end <= gap_start or reference.words(data[gap_start:gap_end].decode("utf-8")) == []


def test_offsets_hand_computed(tiny_vocab_file):
    tokenizer = BertTokenizer(tiny_vocab_file, lower_case=True)
    text = "Unaffable, CAFE\u0301\u00a0cats\x00!"
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant([text]))
    data = text.encode("utf-8")
    spans = [data[s:e].decode("utf-8") for s, e in zip(starts[0].numpy(), ends[0].numpy(), strict=True)]
    assert [tokenizer.id_to_token(i) for i in ids[0].numpy()] == [
        "un", "##aff", "##able", ",", "caf", "##e", "cat", "##s", "[UNK]"
    ]  # fmt: skip
    # "CAFE\u0301": the stripped accent has no piece, so "##e" spans just the "E" (bytes 14-15).
    assert spans[:6] == ["Un", "aff", "able", ",", "CAF", "E"]
    assert (starts[0][5].numpy(), ends[0][5].numpy()) == (14, 15)
    assert spans[6:] == ["cat", "s", "!"]  # "!" (not in the vocab) starts after the dropped U+0000


def test_special_cases_match_original(tiny_vocab_file, uncased_vocab_file):
    cases = ["ΟΔΟΣ ΟΔΟΣ, ΑΣ'Β aΣ\u00adb Σ", "İstanbul \u0130I", "中文字abc", "ﬁne （full） ｗｉｄｅ",
             "x" * 100 + " " + "y" * 101 + " " + "é" * 101, "a\u2028b\u2029c\x85d\x0be", "[CLS] ##ing [SEP]",
             "\U000f0000\ue000x \u0378", "\u1fefa", "", "   \t\n ", "\x00\x01\ufffd"]  # fmt: skip
    for lower_case in (True, False):
        tokenizer = BertTokenizer(uncased_vocab_file, lower_case=lower_case)
        reference = OriginalFullTokenizer(tokenizer.vocab, lower_case=lower_case)
        assert tokenizer(tf.constant(cases)).to_list() == [reference.tokenize(c) for c in cases]
    assert tokenizer(tf.constant(["", "  \t"])).to_list() == [[], []]


def test_shapes_and_scalar(tiny_vocab_file):
    tokenizer = BertTokenizer(tiny_vocab_file)
    scalar = tokenizer(tf.constant("the cat"))
    assert scalar.numpy().tolist() == [8, 9] and scalar.dtype == tf.int32
    nested = tokenizer(tf.constant([["the cat", "sat"], ["on", "a mat"]]))
    assert nested.to_list() == [[[8, 9], [10]], [[11], [16, 12]]]
    ragged = tokenizer(tf.ragged.constant([["the"], ["cat", "sat"]]))
    assert ragged.to_list() == [[[8]], [[9], [10]]]


def test_properties_and_detokenize(uncased_tokenizer):
    tok = uncased_tokenizer
    assert (tok.vocab_size, tok.pad_id, tok.unk_id, tok.cls_id, tok.sep_id, tok.mask_id) == (
        30522,
        0,
        100,
        101,
        102,
        103,
    )
    assert (tok.id_to_token(0), tok.id_to_token(30521)) == ("[PAD]", "##～")
    for out_of_range in (-1, 30522):
        with pytest.raises(IndexError, match=f"token id {out_of_range} is out of range .* < 30522"):
            tok.id_to_token(out_of_range)
    ids = tok(tf.constant(["Hello, unaffable World!", "naïve café"]))
    assert tok.detokenize(ids).numpy().tolist() == [
        b"hello, unaffable world!".replace(b",", b" ,").replace(b"!", b" !"),
        b"naive cafe",
    ]


def test_bad_vocab_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        BertTokenizer(str(tmp_path / "missing.txt"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="empty"):
        BertTokenizer(str(empty))
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(ValueError, match=r"\[MASK\]"):
        BertTokenizer(str(no_mask))
    blank = tmp_path / "blank.txt"
    blank.write_text("[PAD]\n[UNK]\n\n[CLS]\n[SEP]\n[MASK]\n")
    with pytest.raises(ValueError, match="line 3"):
        BertTokenizer(str(blank))
    with pytest.raises(ValueError, match="vocab_file"):
        BertTokenizer()


def test_config_round_trip_without_vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\n")
    tokenizer = BertTokenizer(str(path), lower_case=False)
    config = keras.saving.serialize_keras_object(tokenizer)
    path.unlink()  # the config carries the vocabulary itself
    restored = keras.saving.deserialize_keras_object(config)
    assert restored.vocab == tokenizer.vocab and restored.lower_case is False
    assert restored(tf.constant(["hellos Hello"])).to_list() == [[5, 6, 1]]


def test_tf_data_and_saved_model(tmp_path, uncased_tokenizer):
    lines = ["The quick brown fox.", "Ünïcödé ΣΟΦΙΑ 東京", ""]
    eager = uncased_tokenizer(tf.constant(lines)).to_list()
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(2).map(uncased_tokenizer)
    assert [row for batch in dataset for row in batch.to_list()] == eager

    module = tf.Module()
    module.tokenizer = uncased_tokenizer
    module.serve = tf.function(
        lambda text: uncased_tokenizer(text).to_tensor(-1), input_signature=[tf.TensorSpec([None], tf.string)]
    )
    tf.saved_model.save(module, str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    # A mixed batch, an all-ASCII one (fast path only) and a non-ASCII one (exact path only).
    for batch in (slice(None), slice(0, 1), slice(1, 2)):
        served = loaded.serve(tf.constant(lines[batch])).numpy()
        assert [[i for i in row if i >= 0] for row in served] == eager[batch]


_ASCII_EDGE_CASES = [
    "", " ", "   \t\n\r ", "Hello, World!", "a" * 100, "b" * 101 + " ok " + "C" * 250 + "!",
    "".join(chr(c) for c in range(0x20, 0x7F)), "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "x.y:z--w",
    "[CLS] ##ing [UNK] un##aff", "MiXeD CaSe\tTABS\nnew\rline", "  leading and trailing  ",
    "don't 3.14 e-mail",
]  # fmt: skip


@pytest.mark.parametrize("lower_case", [True, False])
def test_ascii_fast_path_agrees_with_exact_path(corpus_lines, uncased_vocab_file, lower_case):
    tokenizer = BertTokenizer(uncased_vocab_file, lower_case=lower_case)
    reference = OriginalFullTokenizer(tokenizer.vocab, lower_case=lower_case)
    ascii_lines = [line for line in corpus_lines[::3] if line.isascii() and line.isprintable()][:400]
    lines = tf.constant(_ASCII_EDGE_CASES + ascii_lines)
    fast_rows = tf.strings.regex_full_match(lines, tokenizer_lib.ASCII_ROW_PATTERN)
    assert bool(tf.reduce_all(fast_rows)) and len(ascii_lines) == 400
    for outputs in [("ids", "starts", "ends"), ("ids", "word_ids")]:
        fast = tokenizer._tokenize_ascii(lines, outputs)
        exact = tokenizer._tokenize_exact(lines, outputs)
        for a, b in zip(fast, exact, strict=True):
            assert a.dtype == b.dtype and a.to_list() == b.to_list()
    fast_words = tokenizer._split_ascii(lines)
    exact_words = tokenizer._splitter.split_with_offsets(lines)
    for a, b in zip(fast_words, exact_words, strict=True):
        assert a.to_list() == b.to_list()
    ids = tokenizer(lines).to_list()
    assert ids == [reference.tokenize(line) for line in _ASCII_EDGE_CASES + ascii_lines]
    assert ids[5] == [tokenizer.unk_id] + reference.tokenize("ok") + [tokenizer.unk_id, ids[5][-1]]


def test_rows_routed_by_kind_and_merged_in_order(uncased_tokenizer, uncased_vocab_file):
    # Control characters (dropped by the original, no word boundary) and DEL must take the exact path.
    lines = [
        "plain ascii",
        "a\x01b c\x7fd",
        "café",
        "",
        "x\x0by\x0cz\x1cw",
        "UPPER, case!",
        "\x00",
        "ok\ud7ff",
    ]
    rows = tf.strings.regex_full_match(tf.constant(lines), tokenizer_lib.ASCII_ROW_PATTERN).numpy().tolist()
    assert rows == [True, False, False, True, False, True, False, False]
    reference = OriginalFullTokenizer(load_vocab(uncased_vocab_file), lower_case=True)
    tok = uncased_tokenizer
    assert tok(tf.constant(lines)).to_list() == [reference.tokenize(line) for line in lines]
    assert tok(tf.constant(lines[1])).numpy().tolist() == reference.tokenize(lines[1])  # scalar
    for method in (tok.tokenize_with_offsets, tok.tokenize_with_word_ids, tok.split_words_with_offsets):
        merged = method(tf.constant(lines))
        one_by_one = [method(tf.constant([line])) for line in lines]
        for k, tensor in enumerate(merged):
            assert tensor.to_list() == [row for out in one_by_one for row in out[k].to_list()]
    for batch in (lines[:1], lines[1:3], []):  # only one kind of row, or none
        assert tok(tf.constant(batch, tf.string)).to_list() == [reference.tokenize(line) for line in batch]
