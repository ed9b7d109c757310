"""unicode_rules: the plain-Python BasicTokenizer and the per-code-point table against the original."""

import numpy as np

from keras_bert.text import unicode_rules
from tests.text.tokenization_reference import OriginalBasicTokenizer


def test_basic_tokenize_matches_original(corpus_lines):
    lines = [line for line in corpus_lines[::4] if line]
    lines += ["ΟΔΟΣ ΟΔΟΣ, ΑΣ'Β aΣ\u00adb Σ", "İstanbul \u0130I", "ﬁne （full）", "a\u2028b\u2029c\x85d\x0be",
              "\U000f0000\ue000x \u0378", "\u1fefa", "\x00\x01\ufffd", "x" * 101]  # fmt: skip
    for lower_case in (True, False):
        reference = OriginalBasicTokenizer(do_lower_case=lower_case)
        differ = [line for line in lines
                  if unicode_rules.basic_tokenize(line, lower_case) != reference.tokenize(line)]
        assert not differ, (len(differ), differ[:2])
    assert len("".join(lines)) > 250_000  # characters: a quarter of the corpus


def test_basic_tokenize_hand_cases():
    assert unicode_rules.basic_tokenize("Héllo, WORLD!\u00a0a$b 中文", True) == [
        "hello", ",", "world", "!", "a", "$", "b", "中", "文"]  # fmt: skip
    assert unicode_rules.basic_tokenize("Héllo\x00 World", False) == ["Héllo", "World"]
    # \x0b is whitespace to str.split but Cc, so dropped (no boundary); U+2028 splits.
    assert unicode_rules.basic_tokenize("x\u2028y\x0bz", False) == ["x", "yz"]


def test_code_point_table_entries():
    table = unicode_rules.code_point_table(lower_case=True)
    kinds = {cp: int(table.kind[cp]) for cp in (0x41, 0x0B, 0xAD, 0xFFFD, 0x2028, 0xA0, 0x4E2D, 0xE000)}
    assert kinds == {0x41: unicode_rules.KEEP, 0x0B: unicode_rules.DROP, 0xAD: unicode_rules.DROP,
                     0xFFFD: unicode_rules.DROP, 0x2028: unicode_rules.SPACE, 0xA0: unicode_rules.SPACE,
                     0x4E2D: unicode_rules.CJK, 0xE000: unicode_rules.KEEP}  # fmt: skip

    def output(char):
        cp = ord(char)
        return "".join(chr(c) for c in table.mapped[cp, : table.mapped_length[cp]])

    # "İ".lower() is "i" + U+0307, which accent stripping removes; a lone accent maps to nothing;
    # Hangul syllables decompose into up to three jamo.
    assert [output(c) for c in "Aİ\u0301ÉﬁXé각"] == ["a", "i", "", "e", "ﬁ", "x", "e", "\u1100\u1161\u11a8"]
    assert table.punctuation[[ord("$"), ord("`"), 0x1FEF, ord("a"), 0x3001]].tolist() == [True, True, True,
                                                                                         False, True]
    assert table.cased[ord("A")] and not table.cased[ord("'")] and table.case_ignorable[ord("'")]
    assert int(np.max(table.mapped_length)) == unicode_rules.MAX_MAPPED
    cased = unicode_rules.code_point_table(lower_case=False)
    assert cased.mapped[ord("É"), 0] == ord("É") and not cased.cased.any()


def test_character_tables_are_cached_per_machine_and_rebuilt_when_unreadable(tmp_path, monkeypatch):
    from keras_bert.text import splitter

    monkeypatch.setenv("KERAS_BERT_CACHE", str(tmp_path))
    built = splitter._character_tables.__wrapped__(False, None, "google")  # no cache yet: built and written
    cached, = tmp_path.glob("character_tables_*.npz")
    read = splitter._character_tables.__wrapped__(False, None, "google")
    for a, b in zip(built, read, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not list(tmp_path.glob("*.tmp*"))
    cached.write_bytes(b"a half-written file")
    rebuilt = splitter._character_tables.__wrapped__(False, None, "google")
    for a, b in zip(built, rebuilt, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.load(cached)["blocks"].shape == built[1].shape  # written again, whole
