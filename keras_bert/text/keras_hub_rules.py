"""KerasHub's WordPiece pre-tokenization as a per-code-point table, for `BertTokenizer(rules="keras_hub")`.

A KerasHub preset's tokenizer (keras_hub's WordPieceTokenizer) does, per string: spaces around CJK
ideographs; with `strip_accents`, NFD and drop Mn; split on ASCII whitespace [\\t\\n\\f\\r ], Cc and Cf (gone)
and on punctuation (ASCII non-alphanumerics and P*, kept as words); with `lowercase`, tf-text's
`case_fold_utf8` (ICU NFKC_Casefold: "ß" -> "ss", "ﬁ" -> "fi", U+3000 -> " ", soft hyphen -> nothing) on each
word; then WordPiece with [UNK] for words over 100 bytes. It differs from Google's rules (`unicode_rules`):
controls split words instead of vanishing, Unicode spaces (NBSP, U+3000) do not split, casing is NFKC case
folding rather than str.lower, and accents are stripped only when asked.

The table is those same ops (tf-text's normalize_utf8 and case_fold_utf8, RE2's classes) evaluated once on
every code point, so it agrees with KerasHub's ICU and RE2 versions by construction. Per-character
evaluation equals KerasHub's per-word one but for NFKC composition across characters (already-decomposed
input with lowercase and no strip_accents), which is not reproduced.
"""

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.text import unicode_rules

MAX_BYTES_PER_WORD = 100  # tf-text FastWordpiece's default, which KerasHub keeps: longer words are [UNK]
_DELIMITERS = r"\s|\p{Cc}|\p{Cf}"
_PUNCTUATION = r"[!-/:-@\[-`{-~]|\p{P}"
_CJK = "|".join(f"[\\x{{{low:X}}}-\\x{{{high:X}}}]" for low, high in unicode_rules.CJK_RANGES)


def code_point_table(lower_case, strip_accents):
    """KerasHub's rules for every code point (`lowercase`, `strip_accents` as in its tokenizer.json), as a
    `unicode_rules.CodePointTable` (no final-sigma flags: case folding has no such rule)."""
    n = unicode_rules.NUM_CODE_POINTS
    code_points = np.array([cp for cp in range(n) if not 0xD800 <= cp <= 0xDFFF], np.int32)  # no surrogates
    raw = tf.strings.unicode_encode(tf.RaggedTensor.from_tensor(code_points[:, None]), "UTF-8")
    text = (tf.strings.regex_replace(tf_text.normalize_utf8(raw, "NFD"), r"\p{Mn}", "") if strip_accents
            else raw)
    pieces = tf.strings.unicode_decode(text, "UTF-8")
    delimiter = tf.strings.regex_full_match(text, _DELIMITERS).numpy()
    punctuation = tf.strings.regex_full_match(text, _PUNCTUATION).numpy()
    # A character splits or is a punctuation word only as a whole: none may become several characters of
    # which some split (the per-character table could not express that).
    each = tf.strings.unicode_encode(tf.RaggedTensor.from_tensor(pieces.flat_values[:, None]), "UTF-8")
    splits = tf.strings.regex_full_match(each, f"{_DELIMITERS}|{_PUNCTUATION}")
    mixed = (tf.reduce_any(pieces.with_flat_values(splits), axis=1).numpy()
             & (pieces.row_lengths().numpy() > 1))
    if mixed.any():
        raise AssertionError(f"U+{code_points[np.argmax(mixed)]:04X} splits into parts under "
                             "KerasHub's rules")
    mapped = tf.strings.unicode_decode(tf_text.case_fold_utf8(text), "UTF-8") if lower_case else pieces
    lengths = mapped.row_lengths().numpy()
    table = np.zeros((n, max(int(lengths.max()), 1)), np.int32)
    rows = np.repeat(code_points, lengths)
    table[rows, np.arange(len(rows)) - np.repeat(mapped.row_starts().numpy(), lengths)] = (
        mapped.flat_values.numpy())
    mapped_length = np.zeros(n, np.int8)
    mapped_length[code_points] = lengths
    mapped_length[code_points[delimiter]] = 0
    kind = np.full(n, unicode_rules.KEEP, np.int8)
    kind[code_points[tf.strings.regex_full_match(raw, _CJK).numpy()]] = unicode_rules.CJK
    kind[code_points[delimiter]] = unicode_rules.SPACE
    punct = np.zeros(n, bool)
    punct[code_points[punctuation]] = True
    unused = np.zeros(n, bool)
    return unicode_rules.CodePointTable(kind, table, mapped_length, punct, unused, unused.copy())
