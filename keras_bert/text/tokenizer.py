"""BERT WordPiece tokenization in TensorFlow ops, with the ids of Google's original `tokenization.py`.

Google's `FullTokenizer` (BasicTokenizer + WordpieceTokenizer) does, per string:
  1. drop U+0000, U+FFFD and control characters (category Cc/Cf other than \\t \\n \\r); whitespace → " ";
  2. put spaces around CJK ideographs; split on whitespace (Python `str.split`, so U+2028/U+2029 too);
  3. uncased only: per whitespace token, Python `str.lower()` (full case mapping, final sigma), NFD, drop Mn;
  4. split on punctuation (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode category P*);
  5. WordPiece greedy longest-match-first with "##", [UNK] for words over 100 characters.

Here each step works on code points with lookup tables computed from Python's `unicodedata` (the
database the original runs on), so character classes, case mapping and decomposition agree with it by
construction rather than through ICU/RE2 versions; tf-text's NFKC-based lower-casing is not used. Every
output character keeps the byte span of the input character it came from, so offsets point into the
original string even when normalization changes lengths. WordPiece is `tf_text.FastWordpieceTokenizer`.

Fast path: a string of only printable ASCII, space, \t, \n and \r (see `ASCII_ROW_PATTERN`) needs none
of that. The original keeps every such character (none is Cc/Cf other than \t \n \r), its only
whitespace is " \t\n\r", its punctuation is exactly the ASCII non-alphanumerics !-/ :-@ [-` {-~, lower()
only maps A-Z, and NFD/Mn stripping change nothing. So those rows take byte-level lower-casing and one
end-to-end FastWordpiece op (tf-text's BERT pre-tokenization splits such text exactly like the original,
and with one character = one byte its byte limit is the 100-character [UNK] rule); their words alone
(split_words_with_offsets) come from one RegexSplitWithOffsets. Rows with anything else (control
characters, DEL, non-ASCII, invalid UTF-8) take the code point path; results are merged in input order.
Ops used at call time: RegexFullMatch, StringLower, RegexSplitWithOffsets, UnicodeDecodeWithOffsets,
UnicodeEncode, gathers, cumsums, SearchSorted, FastWordpieceTokenizeWithOffsets (tf-text) and core ragged
ops; no Python per string.
"""

import functools
import os
import unicodedata

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.text import vocab as vocab_lib

MAX_CHARS_PER_WORD = 100  # the original's max_input_chars_per_word

# Layout of one packed int32 entry of the character table.
_VALUE_BITS = 21  # mapped code point, or row of the multi-character table when length > 1
_LEN_SHIFT, _CLASS_SHIFT = 21, 23
_PUNCT_BIT, _IGNORABLE_BIT, _CASED_BIT = 1 << 25, 1 << 26, 1 << 27
_OTHER, _DROP, _SPACE, _CJK = 0, 1, 2, 3
_MAX_MAPPED = 3  # longest lower+NFD+strip result (Hangul LVT syllables)
_BLOCK = 128  # two-level table: block index from cp >> 7, then entry within the block
_CAPITAL_SIGMA, _SMALL_SIGMA, _FINAL_SIGMA = 0x3A3, 0x3C3, 0x3C2

# Rows the fast path takes: printable ASCII (0x20-0x7E) and the three control characters the original
# keeps as whitespace. \x0b, \x0c, \x1c-\x1f are whitespace to str.split but Cc, so the original DROPS them
# (no word boundary); they, \x00-\x1f and \x7f go to the code point path.
ASCII_ROW_PATTERN = r"[\x20-\x7e\t\n\r]*"
_ASCII_PUNCT = r"[!-/:-@\[-`{-~]"  # the original's ASCII punctuation: every printable non-alphanumeric
_ASCII_DELIMITERS = r"[ \t\n\r]|" + _ASCII_PUNCT

_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def _is_punctuation(char):
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _lower_and_strip(char):
    """The uncased mapping of one character: str.lower, NFD, drop Mn."""
    decomposed = unicodedata.normalize("NFD", char.lower())
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


@functools.lru_cache(maxsize=2)
def _character_tables(lower_case):
    """Builds the code point tables (about 1 s, once per process and setting).

    Returns:
        (block_index int32 [0x110000 / 128], blocks int32 [n * 128], multi int32 [m, 3]): the packed
        entry of code point c is blocks[block_index[c >> 7] * 128 + (c & 127)].
    """
    size = 0x110000
    table = np.zeros(size, np.int64)
    table[:] = np.arange(size) | (1 << _LEN_SHIFT)  # default: kept as itself, one character
    multi = [(0, 0, 0)]
    for cp in range(size):
        char = chr(cp)
        category = unicodedata.category(char)
        if category in ("Cn", "Co", "Cs"):
            continue  # unassigned/private/surrogate: not control, space, punctuation; lower/NFD keep it
        entry = 0
        if cp == 0 or cp == 0xFFFD or (category in ("Cc", "Cf") and char not in "\t\n\r"):
            # Dropped: no output, no token boundary, skipped by the final-sigma rule.
            table[cp] = (_DROP << _CLASS_SHIFT) | _IGNORABLE_BIT
            continue
        if char in " \t\n\r" or category == "Zs" or char.isspace():
            table[cp] = _SPACE << _CLASS_SHIFT
            continue
        if any(low <= cp <= high for low, high in _CJK_RANGES):
            entry |= _CJK << _CLASS_SHIFT
        mapped = char
        if lower_case:
            mapped = _lower_and_strip(char)
            # Python's final-sigma rule needs Unicode's Case_Ignorable and Cased properties; read them off
            # str.lower itself so they come from the same database.
            before = (char + "\u03a3").lower()[-1] == "\u03c2"  # char is cased and not case-ignorable
            after_cased = ("A" + char + "\u03a3").lower()[-1] == "\u03c2"
            if before:
                entry |= _CASED_BIT
            elif after_cased:
                entry |= _IGNORABLE_BIT
        if len(mapped) > _MAX_MAPPED:
            raise AssertionError(f"U+{cp:04X} maps to {len(mapped)} characters")
        # The punctuation bit describes the output character(s): NFD can turn U+1FEF into "`".
        if any(_is_punctuation(c) for c in mapped):
            if len(mapped) != 1:
                raise AssertionError(f"U+{cp:04X} maps to several characters, one of them punctuation")
            entry |= _PUNCT_BIT
        if len(mapped) == 1:
            entry |= ord(mapped) | (1 << _LEN_SHIFT)
        elif len(mapped) > 1:
            entry |= len(multi) | (len(mapped) << _LEN_SHIFT)
            multi.append(tuple(ord(c) for c in mapped) + (0,) * (_MAX_MAPPED - len(mapped)))
        table[cp] = entry
    table = table.astype(np.int32).reshape(-1, _BLOCK)
    blocks, block_index = np.unique(table, axis=0, return_inverse=True)
    return (
        block_index.reshape(-1).astype(np.int32),
        blocks.reshape(-1).astype(np.int32),
        np.asarray(multi, np.int32),
    )


def _utf8_length(code_points):
    """Bytes of each code point in UTF-8 (int64, same shape)."""
    cp = tf.cast(code_points, tf.int64)
    return (
        1 + tf.cast(cp >= 0x80, tf.int64) + tf.cast(cp >= 0x800, tf.int64) + tf.cast(cp >= 0x10000, tf.int64)
    )


def _exclusive_cumsum(x):
    return tf.math.cumsum(x, exclusive=True)


def _row_ids(row_splits):
    """Row of each value, from row splits (int64); faster than RaggedTensor.value_rowids."""
    return tf.searchsorted(row_splits[1:], tf.range(row_splits[-1]), side="right", out_type=tf.int64)


def _ragged_from_rows(values, sorted_rows, nrows):
    """RaggedTensor with values grouped by sorted int64 row ids; faster than from_value_rowids."""
    splits = tf.searchsorted(sorted_rows, tf.range(nrows + 1), side="left", out_type=tf.int64)
    return tf.RaggedTensor.from_row_splits(values, splits, validate=False)


def _shift_right(x, first):
    """x[i-1] for i > 0 and `first` at i = 0 (1-D)."""
    return tf.concat([tf.fill([1], first), x[:-1]], axis=0)


def _by_row_kind(strings, ascii_fn, exact_fn):
    """Runs `ascii_fn` on the rows of 1-D `strings` that match ASCII_ROW_PATTERN and `exact_fn` on the
    others (both: 1-D strings → tuple of ragged [rows, (x)]), and returns their outputs in input order."""
    # Both parts always run (an empty one is cheap): a tf.cond costs each new tf.data iterator tens of ms.
    is_ascii = tf.strings.regex_full_match(strings, ASCII_ROW_PATTERN)
    ascii_rows = tf.where(is_ascii)[:, 0]
    other_rows = tf.where(~is_ascii)[:, 0]
    ascii_out = ascii_fn(tf.gather(strings, ascii_rows))
    other_out = exact_fn(tf.gather(strings, other_rows))
    order = tf.math.invert_permutation(tf.concat([ascii_rows, other_rows], axis=0))
    return tuple(
        tf.gather(tf.concat([a, b], axis=0), order) for a, b in zip(ascii_out, other_out, strict=True)
    )


class BasicWordSplitter:
    """The original BasicTokenizer in TF ops: strings → normalized words with byte offsets.

    Not a Keras layer; `BertTokenizer` and the vocab learner use it. Call `split_with_offsets` on a 1-D
    tf.string tensor.
    """

    def __init__(self, lower_case=True):
        self.lower_case = bool(lower_case)
        block_index, blocks, multi = _character_tables(self.lower_case)
        self._block_index = tf.constant(block_index)
        self._blocks = tf.constant(blocks)
        self._multi = tf.constant(multi.reshape(-1))

    def _lookup(self, code_points):
        block = tf.gather(self._block_index, tf.bitwise.right_shift(code_points, 7))
        return tf.gather(self._blocks, block * _BLOCK + tf.bitwise.bitwise_and(code_points, _BLOCK - 1))

    def _final_sigma(self, code_points, entries, row_ids):
        """Bool [n]: capital sigma at a final-sigma position (Python str.lower's rule, per token)."""
        cls = tf.bitwise.right_shift(entries, _CLASS_SHIFT) & 3
        boundary = (cls == _SPACE) | (cls == _CJK)
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
        sigma_rows = tf.gather(row_ids, sigmas)
        prev_cased = (
            (before >= 0) & tf.equal(tf.gather(row_ids, prev), sigma_rows) & tf.gather(anchor_cased, prev)
        )
        next_cased = (
            (after < n_anchors) & tf.equal(tf.gather(row_ids, nxt), sigma_rows) & tf.gather(anchor_cased, nxt)
        )
        final = tf.cast(prev_cased & ~next_cased, tf.int32)
        return tf.scatter_nd(sigmas[:, None], final, tf.shape(code_points)) > 0

    def split_chars(self, strings, with_offsets=True):
        """Runs steps 1-4 on a 1-D tf.string tensor.

        Returns:
            dict of flat tensors over the output characters of all strings, in order:
            `code_points` int32 [n], `word_ids` int64 [n] (global word number), `word_first_char` int64
            [w], `word_rows` int64 [w] (the string each word is in), `batch_size`, and with_offsets:
            `starts`/`ends` int64 [n] (byte span in the input string of the character it came from).
        """
        strings = tf.convert_to_tensor(strings, tf.string)
        # Invalid UTF-8 becomes U+FFFD, which step 1 drops: the same as the original's decode(errors="ignore").
        if with_offsets:
            decoded, offsets = tf.strings.unicode_decode_with_offsets(
                strings, "UTF-8", errors="replace", replacement_char=0xFFFD
            )
        else:
            decoded = tf.strings.unicode_decode(strings, "UTF-8", errors="replace", replacement_char=0xFFFD)
        code_points = decoded.flat_values
        row_ids = _row_ids(decoded.row_splits)
        entries = self._lookup(code_points)
        cls = tf.bitwise.right_shift(entries, _CLASS_SHIFT) & 3
        is_boundary = tf.equal(cls, _SPACE) | tf.equal(cls, _CJK)
        # A whitespace token starts at a new string, after a space and around each CJK ideograph; dropped
        # characters (no output) carry their token on to the next character.
        new_row = tf.not_equal(row_ids, _shift_right(row_ids, tf.constant(-1, row_ids.dtype)))
        token_start = new_row | _shift_right(is_boundary, True) | tf.equal(cls, _CJK)
        token_ids = tf.math.cumsum(tf.cast(token_start, tf.int64))
        value = tf.bitwise.bitwise_and(entries, (1 << _VALUE_BITS) - 1)
        if self.lower_case:
            # No tf.cond around this: in tf.data, cond branches cost each new iterator tens of ms to set up.
            value = tf.where(self._final_sigma(code_points, entries, row_ids), _FINAL_SIGMA, value)
        lengths = tf.bitwise.right_shift(entries, _LEN_SHIFT) & 3
        # Expand each character into its 0..3 output characters (0: space, dropped, lone accent).
        source = tf.repeat(tf.range(tf.size(lengths)), lengths)
        source_value = tf.gather(value, source)
        is_multi = tf.gather(lengths, source) > 1
        within = tf.range(tf.size(source)) - tf.gather(_exclusive_cumsum(lengths), source)
        multi_index = tf.where(is_multi, source_value * _MAX_MAPPED + within, 0)
        out_cp = tf.where(is_multi, tf.gather(self._multi, multi_index), source_value)
        out_token = tf.gather(token_ids, source)
        punct = tf.gather(tf.bitwise.bitwise_and(entries, _PUNCT_BIT) != 0, source)
        word_start = (
            tf.not_equal(out_token, _shift_right(out_token, tf.constant(-1, tf.int64)))
            | punct
            | _shift_right(punct, False)
        )
        word_ids = tf.math.cumsum(tf.cast(word_start, tf.int64)) - 1
        word_first_char = tf.where(word_start)[:, 0]
        result = {
            "code_points": out_cp,
            "word_ids": word_ids,
            "word_first_char": word_first_char,
            "word_rows": tf.gather(row_ids, tf.gather(source, word_first_char)),
            "batch_size": decoded.nrows(),
        }
        if with_offsets:
            starts = offsets.flat_values
            result["starts"] = tf.gather(starts, source)
            result["ends"] = result["starts"] + _utf8_length(tf.gather(code_points, source))
        return result

    def split_with_offsets(self, strings):
        """1-D tf.string [batch] → (words, starts, ends): ragged [batch, (words)] tf.string / int64 / int64.

        Words are the original BasicTokenizer's output (lower-cased and accent-stripped when uncased);
        starts/ends are byte offsets of each word in the input string (end exclusive).
        """
        chars = self.split_chars(strings)
        n_words = tf.size(chars["word_first_char"], out_type=tf.int64)
        word_chars = _ragged_from_rows(chars["code_points"], chars["word_ids"], n_words)
        words = tf.strings.unicode_encode(word_chars, "UTF-8")
        last_char = chars["word_first_char"] + word_chars.row_lengths() - 1
        starts = tf.gather(chars["starts"], chars["word_first_char"])
        ends = tf.gather(chars["ends"], last_char)
        rows = chars["word_rows"]
        return tuple(_ragged_from_rows(t, rows, chars["batch_size"]) for t in (words, starts, ends))

    def split(self, strings):
        """1-D tf.string [batch] → ragged tf.string [batch, (words)]."""
        return self.split_with_offsets(strings)[0]


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenizer(keras.layers.Layer):
    """WordPiece tokenizer giving the ids of Google's `FullTokenizer(vocab_file, do_lower_case)`.

    Args:
        vocab_file: path to a BERT vocab.txt (one token per line; id = line number).
        lower_case: True for uncased models (lower-case + strip accents), False for cased ones.
        vocabulary: optional list of str used instead of reading `vocab_file` (get_config stores it, so a
            saved model does not depend on the vocab file still being there).

    Call: `tokenizer(strings)` with a tf.string tensor [batch] (or a scalar, or any-rank dense/ragged)
    returns int32 ids, ragged with one more dimension than the input: [batch, (pieces)] for [batch].
    No [CLS]/[SEP] are added (see BertPacker). Invalid UTF-8 bytes are dropped, like the original's
    `decode("utf-8", "ignore")`; empty or whitespace-only strings give no pieces.
    """

    def __init__(self, vocab_file=None, lower_case=True, vocabulary=None, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        # Strings pass through as they are (Keras would otherwise try to convert/cast call arguments).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if vocabulary is None:
            if vocab_file is None:
                raise ValueError(
                    "BertTokenizer needs vocab_file (a BERT vocab.txt path) or vocabulary (a list)."
                )
            vocabulary = vocab_lib.load_vocab(vocab_file)
        else:
            vocabulary = vocab_lib.check_vocab(vocabulary, source=vocab_file or "vocabulary")
        self.vocab_file = os.fspath(vocab_file) if vocab_file is not None else None
        self.lower_case = bool(lower_case)
        self._vocab = list(vocabulary)
        self._token_to_id = {token: index for index, token in enumerate(self._vocab)}
        self._splitter = BasicWordSplitter(self.lower_case)
        # Words over 100 characters are replaced by the [UNK] token text, which WordPiece maps to [UNK].
        # Any word of <= 100 characters fits in 400 bytes, so tf-text's byte limit never triggers.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self._vocab,
            suffix_indicator="##",
            max_bytes_per_word=4 * MAX_CHARS_PER_WORD + 8,
            token_out_type=tf.int32,
            unknown_token=vocab_lib.UNK,
            no_pretokenization=True,
            support_detokenization=False,
        )
        # The fast path's WordPiece also splits words (tf-text's BERT pre-tokenization, which on the ASCII
        # rows it gets splits exactly like the original); there a character is a byte, so its byte limit
        # is the original's 100-character [UNK] rule.
        self._ascii_wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self._vocab,
            suffix_indicator="##",
            max_bytes_per_word=MAX_CHARS_PER_WORD,
            token_out_type=tf.int32,
            unknown_token=vocab_lib.UNK,
            no_pretokenization=False,
            support_detokenization=False,
        )
        self._is_suffix = tf.constant([token.startswith("##") for token in self._vocab])
        self._vocab_tensor = tf.constant(self._vocab)

    # ----------------------------------------------------------------------------------- properties
    @property
    def vocab(self):
        """list of str: the tokens in id order."""
        return list(self._vocab)

    @property
    def vocab_size(self):
        return len(self._vocab)

    @property
    def pad_id(self):
        return self._token_to_id[vocab_lib.PAD]

    @property
    def unk_id(self):
        return self._token_to_id[vocab_lib.UNK]

    @property
    def cls_id(self):
        return self._token_to_id[vocab_lib.CLS]

    @property
    def sep_id(self):
        return self._token_to_id[vocab_lib.SEP]

    @property
    def mask_id(self):
        return self._token_to_id[vocab_lib.MASK]

    @property
    def special_ids(self):
        """list of int: ids of [PAD], [UNK], [CLS], [SEP], [MASK]."""
        return [self._token_to_id[token] for token in vocab_lib.RESERVED_TOKENS]

    def token_to_id(self, token):
        """The id of `token` (str); KeyError naming the token if it is not in the vocab."""
        if token not in self._token_to_id:
            raise KeyError(
                f"token {token!r} is not in the vocabulary of {self.vocab_file or 'this tokenizer'}"
            )
        return self._token_to_id[token]

    def id_to_token(self, token_id):
        """The token (str) of `token_id` (int)."""
        return self._vocab[int(token_id)]

    # ------------------------------------------------------------------------------------ the work
    def _tokenize_flat(self, strings, outputs):
        """1-D strings → tuple of ragged [batch, (pieces)] named by `outputs`, from "ids" (int32),
        "starts"/"ends" (int64 byte offsets) and "word_ids" (int32)."""
        return _by_row_kind(
            strings,
            lambda rows: self._tokenize_ascii(rows, outputs),
            lambda rows: self._tokenize_exact(rows, outputs),
        )

    def _split_ascii(self, strings):
        """Like `split_words_with_offsets`, for 1-D strings that all match ASCII_ROW_PATTERN."""
        if self.lower_case:
            strings = tf.strings.lower(strings)  # byte-wise A-Z → a-z: same length, so offsets hold
        return tf_text.regex_split_with_offsets(strings, _ASCII_DELIMITERS, _ASCII_PUNCT)

    def _tokenize_ascii(self, strings, outputs):
        """`_tokenize_flat` for 1-D strings that all match ASCII_ROW_PATTERN (one character = one byte)."""
        if self.lower_case:
            strings = tf.strings.lower(strings)  # byte-wise A-Z → a-z: same length, so offsets hold
        if "starts" in outputs or "ends" in outputs:
            ids, starts, ends = self._ascii_wordpiece.tokenize_with_offsets(strings)
            values = {"starts": starts.flat_values, "ends": ends.flat_values}
        else:
            ids, values = self._ascii_wordpiece.tokenize(strings), {}
        values["ids"] = ids.flat_values
        if "word_ids" in outputs:
            # A piece starts a word unless it is a "##" continuation ("#" is punctuation, so no word starts
            # with "##"); number the starts within each row.
            starts_word = tf.cast(~tf.gather(self._is_suffix, ids.flat_values), tf.int32)
            count = tf.math.cumsum(starts_word)
            row_base = tf.gather(_shift_right(count, 0), tf.gather(ids.row_splits, _row_ids(ids.row_splits)))
            values["word_ids"] = count - row_base - 1
        return tuple(
            tf.RaggedTensor.from_row_splits(values[name], ids.row_splits, validate=False) for name in outputs
        )

    def _tokenize_exact(self, strings, outputs):
        """`_tokenize_flat` on code points, for any 1-D strings."""
        with_offsets = "starts" in outputs or "ends" in outputs
        chars = self._splitter.split_chars(strings, with_offsets=with_offsets)
        first = chars["word_first_char"]
        n_words = tf.size(first, out_type=tf.int64)
        word_chars = _ragged_from_rows(chars["code_points"], chars["word_ids"], n_words)
        n_chars = word_chars.row_lengths()
        too_long = n_chars > MAX_CHARS_PER_WORD
        words = tf.where(too_long, vocab_lib.UNK, tf.strings.unicode_encode(word_chars, "UTF-8"))
        values = {}
        if with_offsets:
            ids, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(words)
        else:
            ids = self._wordpiece.tokenize(words)
        values["ids"] = ids.flat_values
        # Regroup pieces from [words, (pieces)] to [strings, (pieces)].
        word_splits = _ragged_from_rows(first, chars["word_rows"], chars["batch_size"]).row_splits
        piece_splits = tf.gather(ids.row_splits, word_splits)
        if with_offsets or "word_ids" in outputs:
            piece_word = _row_ids(ids.row_splits)
        if "word_ids" in outputs:
            piece_rows = tf.gather(chars["word_rows"], piece_word)
            values["word_ids"] = tf.cast(piece_word - tf.gather(word_splits, piece_rows), tf.int32)
        if with_offsets:
            # Byte offsets inside each word → output character → byte span of its source character.
            char_bytes = _exclusive_cumsum(_utf8_length(chars["code_points"]))
            word_base = tf.gather(tf.gather(char_bytes, first), piece_word)
            first_char = (
                tf.searchsorted(char_bytes, word_base + piece_starts.flat_values, "right", tf.int64) - 1
            )
            last_char = tf.searchsorted(char_bytes, word_base + piece_ends.flat_values, "left", tf.int64) - 1
            piece_long = tf.gather(too_long, piece_word)  # an [UNK] for a long word spans the word
            word_first = tf.gather(first, piece_word)
            first_char = tf.where(piece_long, word_first, first_char)
            last_char = tf.where(piece_long, word_first + tf.gather(n_chars, piece_word) - 1, last_char)
            values["starts"] = tf.gather(chars["starts"], first_char)
            values["ends"] = tf.gather(chars["ends"], last_char)
        return tuple(
            tf.RaggedTensor.from_row_splits(values[name], piece_splits, validate=False) for name in outputs
        )

    def _apply(self, strings, fn):
        """Applies `fn` (1-D strings → tuple of ragged [batch, (x)]) to any-rank string input."""
        if isinstance(strings, tf.RaggedTensor):
            outputs = fn(strings.flat_values)
            return tuple(strings.with_flat_values(output) for output in outputs)
        strings = tf.convert_to_tensor(strings, tf.string)
        rank = strings.shape.rank
        if rank == 1:
            return fn(strings)
        if rank == 0:
            return tuple(output[0] for output in fn(strings[None]))
        ragged = tf.RaggedTensor.from_tensor(strings)
        outputs = fn(ragged.flat_values)
        return tuple(ragged.with_flat_values(output) for output in outputs)

    def _tokenize(self, strings, outputs):
        return self._apply(strings, lambda flat: self._tokenize_flat(flat, outputs))

    def call(self, inputs):
        return self._tokenize(inputs, ("ids",))[0]

    def tokenize(self, strings):
        """Same as calling the layer: strings → ragged int32 ids."""
        return self._tokenize(strings, ("ids",))[0]

    def tokenize_with_offsets(self, strings):
        """strings → (ids int32, starts int64, ends int64), ragged [batch, (pieces)].

        starts/ends are byte offsets into the ORIGINAL input string, end exclusive: the span of input
        characters the piece came from (a piece of an accented or decomposed character covers the
        whole input character; an [UNK] word covers the whole word).
        """
        return self._tokenize(strings, ("ids", "starts", "ends"))

    def tokenize_with_word_ids(self, strings):
        """strings → (ids int32, word_ids int32), ragged [batch, (pieces)].

        word_ids[i, j] is the index (within string i) of the basic-tokenizer word that piece j comes
        from, i.e. the index into `split_words_with_offsets(strings)[0][i]`. Pieces with the same word id
        form one word for whole-word masking; the first piece of each word carries a NER label.
        """
        return self._tokenize(strings, ("ids", "word_ids"))

    def split_words_with_offsets(self, strings):
        """strings → (words tf.string, starts int64, ends int64), ragged [batch, (words)].

        The words of the original BasicTokenizer (after cleaning, CJK split, lower-casing and accent
        stripping when uncased, and punctuation split), before WordPiece, with byte offsets into the
        original string.
        """
        return self._apply(
            strings, lambda flat: _by_row_kind(flat, self._split_ascii, self._splitter.split_with_offsets)
        )

    def detokenize(self, ids):
        """int ids [batch, (pieces)] (ragged or dense) → tf.string [batch]: tokens joined by spaces, "##"
        continuations glued to the previous piece. Lower-casing and accent stripping are not undone."""
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        tokens = tf.gather(self._vocab_tensor, ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(list(inputs.shape) + [None], dtype="int32", ragged=True)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"vocab_file": self.vocab_file, "lower_case": self.lower_case, "vocabulary": self.vocab}
        )
        return config
