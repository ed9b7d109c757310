"""The original BasicTokenizer in TensorFlow ops: strings → normalized words with byte offsets.

Steps 1-4 of `unicode_rules` work on code points through one lookup table built from
`unicode_rules.code_point_table`, so character classes, case mapping and decomposition agree with
Python's `unicodedata` (the database the original runs on) by construction rather than through ICU/RE2
versions; tf-text's NFKC-based lower-casing is not used. Every output character keeps the byte span of
the input character it came from, so offsets point into the original string even when normalization
changes lengths. Ops used at call time: UnicodeDecodeWithOffsets, UnicodeEncode, gathers, cumsums,
SearchSorted and core ragged ops; no Python per string.
"""

import functools
import hashlib
import os
import pathlib
import unicodedata

import numpy as np
import tensorflow as tf

from keras_bert import textfiles
from keras_bert.text import keras_hub_rules, unicode_rules
from keras_bert.text.ragged_ops import exclusive_cumsum, ragged_from_rows, row_ids, shift_right, utf8_length

# Layout of one packed int32 entry of the character table.
_VALUE_BITS = 21  # mapped code point, or row of the multi-character table when length > 1
_LEN_SHIFT, _LEN_MASK, _CLASS_SHIFT = 21, 31, 26  # up to 31 output characters (KerasHub's NFKC: 18)
_PUNCT_BIT, _IGNORABLE_BIT, _CASED_BIT = 1 << 28, 1 << 29, 1 << 30
RULES = ("google", "keras_hub")
_BLOCK = 128  # two-level table: block index from cp >> 7, then entry within the block
_CAPITAL_SIGMA, _FINAL_SIGMA = 0x3A3, 0x3C2


@functools.lru_cache(maxsize=4)
def _character_tables(lower_case, strip_accents=None, rules="google"):
    """`_packed_tables`, read from the machine's cache (`textfiles.cache_dir`) where an earlier process wrote
    them: evaluating the rules for 1.1M code points takes 0.7-1 s, which every process building a tokenizer
    (each recipe run, each served check) would pay. The cache file is keyed by the arguments, Python's
    Unicode database version and the rule modules' source, written to a temporary name and renamed; an
    unreadable or unwritable cache only means the tables are built in this process."""
    sources = b"".join(pathlib.Path(path).read_bytes()
                       for path in (unicode_rules.__file__, keras_hub_rules.__file__, __file__))
    key = hashlib.sha256(repr((lower_case, strip_accents, rules, unicodedata.unidata_version)).encode()
                         + sources).hexdigest()[:20]
    path = os.path.join(textfiles.cache_dir(), f"character_tables_{key}.npz")
    try:
        with np.load(path) as cached:
            return cached["block_index"], cached["blocks"], cached["multi"]
    except Exception:  # absent, partial or unreadable: build it
        pass
    tables = _packed_tables(lower_case, strip_accents, rules)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.npz"
        np.savez(tmp, **dict(zip(("block_index", "blocks", "multi"), tables, strict=True)))
        os.replace(tmp, path)
    except OSError:
        pass
    return tables


def _packed_tables(lower_case, strip_accents, rules):
    """Packs `unicode_rules.code_point_table` (or `keras_hub_rules`') into int32 lookup tables.

    Returns:
        (block_index int32 [0x110000 / 128], blocks int32 [n * 128], multi int32 [m, width]): the packed
        entry of code point c is blocks[block_index[c >> 7] * 128 + (c & 127)].
    """
    if rules == "keras_hub":
        rules = keras_hub_rules.code_point_table(lower_case, strip_accents)
    else:
        rules = unicode_rules.code_point_table(lower_case, strip_accents)
    length = rules.mapped_length.astype(np.int64)
    value = np.where(length == 1, rules.mapped[:, 0], 0).astype(np.int64)
    multi_rows = np.flatnonzero(length > 1)
    value[multi_rows] = np.arange(1, len(multi_rows) + 1)  # row 0 of `multi` is unused
    multi = np.concatenate([np.zeros((1, rules.mapped.shape[1]), np.int32), rules.mapped[multi_rows]])
    table = (
        value
        | (length << _LEN_SHIFT)
        | (rules.kind.astype(np.int64) << _CLASS_SHIFT)
        | np.where(rules.punctuation, _PUNCT_BIT, 0)
        | np.where(rules.case_ignorable, _IGNORABLE_BIT, 0)
        | np.where(rules.cased, _CASED_BIT, 0)
    )
    table = table.astype(np.int32).reshape(-1, _BLOCK)
    blocks, block_index = np.unique(table, axis=0, return_inverse=True)
    return (
        block_index.reshape(-1).astype(np.int32),
        blocks.reshape(-1).astype(np.int32),
        multi.astype(np.int32),
    )


class BasicWordSplitter:
    """The original BasicTokenizer in TF ops: strings → normalized words with byte offsets.

    Not a Keras layer; `BertTokenizer` and the vocab learner use it. Call `split_with_offsets` on a 1-D
    tf.string tensor.

    Args:
        lower_case: lower-case the text (uncased models; default True).
        strip_accents: None (default): strip accents exactly when `lower_case`, the original's rule; True
            or False sets it apart from casing.
        rules: "google" (default): Google's BasicTokenizer; "keras_hub": a KerasHub preset's rules
            (`keras_bert.text.keras_hub_rules`).

    Raises:
        ValueError: `rules` is not "google" or "keras_hub".
    """

    def __init__(self, lower_case=True, strip_accents=None, rules="google"):
        """`strip_accents` None: as `lower_case` (the original's rule); `rules` "keras_hub": a KerasHub
        preset's rules instead of Google's (`keras_hub_rules`)."""
        if rules not in RULES:
            raise ValueError(f"rules={rules!r}; expected one of {RULES}")
        self.lower_case, self.rules = bool(lower_case), rules
        if rules == "keras_hub":
            strip_accents = bool(strip_accents)
        elif strip_accents is not None and bool(strip_accents) == self.lower_case:
            strip_accents = None  # the original's rule: one cached table for both spellings of it
        block_index, blocks, multi = _character_tables(self.lower_case, strip_accents, rules)
        self._block_index = tf.constant(block_index)
        self._blocks = tf.constant(blocks)
        self._width = multi.shape[1]
        self._multi = tf.constant(multi.reshape(-1))

    def _lookup(self, code_points):
        block = tf.gather(self._block_index, tf.bitwise.right_shift(code_points, 7))
        return tf.gather(self._blocks, block * _BLOCK + tf.bitwise.bitwise_and(code_points, _BLOCK - 1))

    def _final_sigma(self, code_points, entries, char_rows):
        """Bool [n]: capital sigma at a final-sigma position (Python str.lower's rule, per token)."""
        cls = tf.bitwise.right_shift(entries, _CLASS_SHIFT) & 3
        boundary = (cls == unicode_rules.SPACE) | (cls == unicode_rules.CJK)
        # Anchors are the characters the rule does not skip; spaces and CJK end the token, so they are
        # anchors that are not cased.
        anchor = boundary | (tf.bitwise.bitwise_and(entries, _IGNORABLE_BIT) == 0)
        anchor_cased = ~boundary & (tf.bitwise.bitwise_and(entries, _CASED_BIT) != 0)
        anchors = tf.cast(tf.where(anchor)[:, 0], tf.int32)
        sigmas = tf.cast(tf.where(tf.equal(code_points, _CAPITAL_SIGMA))[:, 0], tf.int32)
        n_anchors = tf.size(anchors)
        before = tf.searchsorted(anchors, sigmas, side="left") - 1
        after = tf.searchsorted(anchors, sigmas, side="right")
        prev = tf.gather(anchors, tf.maximum(before, 0))
        nxt = tf.gather(anchors, tf.minimum(after, n_anchors - 1))
        sigma_rows = tf.gather(char_rows, sigmas)
        prev_cased = (
            (before >= 0) & tf.equal(tf.gather(char_rows, prev), sigma_rows) & tf.gather(anchor_cased, prev)
        )
        next_cased = (
            (after < n_anchors)
            & tf.equal(tf.gather(char_rows, nxt), sigma_rows)
            & tf.gather(anchor_cased, nxt)
        )
        final = tf.cast(prev_cased & ~next_cased, tf.int32)
        return tf.scatter_nd(sigmas[:, None], final, tf.shape(code_points)) > 0

    def split_chars(self, strings, with_offsets=True):
        """Runs steps 1-4 of `unicode_rules` on a 1-D tf.string tensor.

        Returns:
            dict of flat tensors over the output characters of all strings, in order:
            `code_points` int32 [n], `word_ids` int64 [n] (global word number), `word_first_char` int64
            [w], `word_rows` int64 [w] (the string each word is in), `batch_size`, and with_offsets:
            `starts`/`ends` int64 [n] (byte span in the input string of the character it came from).
        """
        decoded, offsets = _decode(strings, with_offsets)
        code_points = decoded.flat_values
        char_rows = row_ids(decoded.row_splits)
        entries = self._lookup(code_points)
        token_ids = _whitespace_token_ids(entries, char_rows)
        source, within, out_cp = self._output_chars(code_points, entries, char_rows)
        word_start = _word_starts(entries, tf.gather(token_ids, source), source, within)
        word_ids = tf.math.cumsum(tf.cast(word_start, tf.int64)) - 1
        word_first_char = tf.where(word_start)[:, 0]
        result = {
            "code_points": out_cp,
            "word_ids": word_ids,
            "word_first_char": word_first_char,
            "word_rows": tf.gather(char_rows, tf.gather(source, word_first_char)),
            "batch_size": decoded.nrows(),
        }
        if with_offsets:
            starts = offsets.flat_values
            result["starts"] = tf.gather(starts, source)
            result["ends"] = result["starts"] + utf8_length(tf.gather(code_points, source))
        return result

    def _output_chars(self, code_points, entries, char_rows):
        """Each character expanded into its 0..31 output characters (0: space, dropped, lone accent).

        Returns:
            (source, within, code_points) int32 [m]: the input character each output character comes
            from, its place among that character's outputs, and its code point.
        """
        value = tf.bitwise.bitwise_and(entries, (1 << _VALUE_BITS) - 1)
        if self.lower_case and self.rules == "google":  # str.lower's rule; case folding has none
            # No tf.cond around this: in tf.data, cond branches cost each new iterator tens of ms to set up.
            value = tf.where(self._final_sigma(code_points, entries, char_rows), _FINAL_SIGMA, value)
        lengths = tf.bitwise.right_shift(entries, _LEN_SHIFT) & _LEN_MASK
        source = tf.repeat(tf.range(tf.size(lengths)), lengths)
        source_value = tf.gather(value, source)
        is_multi = tf.gather(lengths, source) > 1
        within = tf.range(tf.size(source)) - tf.gather(exclusive_cumsum(lengths), source)
        multi_index = tf.where(is_multi, source_value * self._width + within, 0)
        out_cp = tf.where(is_multi, tf.gather(self._multi, multi_index), source_value)
        return source, within, out_cp

    def split_with_offsets(self, strings):
        """1-D tf.string [batch] → (words, starts, ends): ragged [batch, (words)] tf.string / int64 / int64.

        Words are the original BasicTokenizer's output (lower-cased and accent-stripped when uncased);
        starts/ends are byte offsets of each word in the input string (end exclusive).
        """
        chars = self.split_chars(strings)
        n_words = tf.size(chars["word_first_char"], out_type=tf.int64)
        word_chars = ragged_from_rows(chars["code_points"], chars["word_ids"], n_words)
        words = tf.strings.unicode_encode(word_chars, "UTF-8")
        last_char = chars["word_first_char"] + word_chars.row_lengths() - 1
        starts = tf.gather(chars["starts"], chars["word_first_char"])
        ends = tf.gather(chars["ends"], last_char)
        rows = chars["word_rows"]
        return tuple(ragged_from_rows(t, rows, chars["batch_size"]) for t in (words, starts, ends))

    def split(self, strings):
        """1-D tf.string [batch] → ragged tf.string [batch, (words)]."""
        return self.split_with_offsets(strings)[0]


def _decode(strings, with_offsets):
    """(ragged int32 code points [batch, (chars)], their byte offsets or None) of a 1-D tf.string tensor."""
    strings = tf.convert_to_tensor(strings, tf.string)
    # Invalid UTF-8 becomes U+FFFD, which step 1 drops: the same as the original's decode(errors="ignore").
    if with_offsets:
        return tf.strings.unicode_decode_with_offsets(strings, "UTF-8", errors="replace",
                                                      replacement_char=0xFFFD)
    return tf.strings.unicode_decode(strings, "UTF-8", errors="replace", replacement_char=0xFFFD), None


def _whitespace_token_ids(entries, char_rows):
    """int64 [n]: the whitespace token of each input character, numbered from 1 over the whole batch."""
    cls = tf.bitwise.right_shift(entries, _CLASS_SHIFT) & 3
    is_boundary = tf.equal(cls, unicode_rules.SPACE) | tf.equal(cls, unicode_rules.CJK)
    # A whitespace token starts at a new string, after a space and around each CJK ideograph; dropped
    # characters (no output) carry their token on to the next character.
    new_row = tf.not_equal(char_rows, shift_right(char_rows, tf.constant(-1, char_rows.dtype)))
    token_start = new_row | shift_right(is_boundary, True) | tf.equal(cls, unicode_rules.CJK)
    return tf.math.cumsum(tf.cast(token_start, tf.int64))


def _word_starts(entries, out_token, source, within):
    """bool [m]: output characters that start a word: a new whitespace token (`out_token`, per output
    character), and a punctuation character's first output and the one after its last."""
    punct = tf.gather(tf.bitwise.bitwise_and(entries, _PUNCT_BIT) != 0, source)
    # A punctuation character is one word with all its output characters (KerasHub folds "…" to "...").
    first_out = tf.equal(within, 0)
    return (
        tf.not_equal(out_token, shift_right(out_token, tf.constant(-1, tf.int64)))
        | (punct & first_out)
        | (shift_right(punct, False) & first_out)
    )
