"""BERT WordPiece tokenization in TensorFlow ops, with the ids of Google's original `tokenization.py`.

Google's `FullTokenizer` is BasicTokenizer (steps 1-4 of `unicode_rules`, run here by `BasicWordSplitter`
on code points) + WordPiece greedy longest-match-first with "##" and [UNK] for words over
`MAX_CHARS_PER_WORD` characters, here `tf_text.FastWordpieceTokenizer`.

Fast path: a string of only printable ASCII, space, \t, \n and \r (see `ASCII_ROW_PATTERN`) needs none
of the code point work. The original keeps every such character (none is Cc/Cf other than \t \n \r), its
only whitespace is " \t\n\r", its punctuation is exactly the ASCII non-alphanumerics !-/ :-@ [-` {-~,
lower() only maps A-Z, and NFD/Mn stripping change nothing. So those rows take byte-level lower-casing and
one end-to-end FastWordpiece op (tf-text's BERT pre-tokenization splits such text exactly like the
original, and with one character = one byte its byte limit is the 100-character [UNK] rule); their words
alone (split_words_with_offsets) come from one RegexSplitWithOffsets. Rows with anything else (control
characters, DEL, non-ASCII, invalid UTF-8) take the code point path; results are merged in input order.
Ops used at call time: RegexFullMatch, StringLower, RegexSplitWithOffsets, FastWordpieceTokenizeWithOffsets
(tf-text), the splitter's ops and core ragged ops; no Python per string.
"""

import hashlib
import os
import zipfile

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert import compat
from keras_bert.text import vocab as vocab_lib
from keras_bert.text.keras_hub_rules import MAX_BYTES_PER_WORD
from keras_bert.text.ragged_ops import exclusive_cumsum, ragged_from_rows, row_ids, shift_right, utf8_length
from keras_bert.text.splitter import BasicWordSplitter
from keras_bert.text.unicode_rules import ASCII_PUNCTUATION_RANGES, KEPT_WHITESPACE, MAX_CHARS_PER_WORD

# Rows the fast path takes: printable ASCII (0x20-0x7E) and the three control characters the original
# keeps as whitespace. \x0b, \x0c, \x1c-\x1f are whitespace to str.split but Cc, so the original DROPS them
# (no word boundary); they, \x00-\x1f and \x7f go to the code point path.
ASCII_ROW_PATTERN = r"[\x20-\x7e\t\n\r]*"
# RE2 character classes of the rules' ASCII punctuation and kept whitespace (every ASCII punctuation
# character may be backslash-escaped in RE2).
_ASCII_PUNCT = "[" + "".join(f"\\{chr(low)}-\\{chr(high)}" for low, high in ASCII_PUNCTUATION_RANGES) + "]"
# The get_config key of a `.keras` file's tokenizer whose vocabulary is its vocab.txt asset.
ASSET_KEY = "vocabulary_asset"
_ASCII_DELIMITERS = "[" + KEPT_WHITESPACE.encode("unicode_escape").decode("ascii") + "]|" + _ASCII_PUNCT


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


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenizer(keras.layers.Layer):
    """WordPiece tokenizer giving the ids of Google's `FullTokenizer(vocab_file, do_lower_case)`.

    Args:
        vocab_file: path to a BERT vocab.txt (one token per line; id = line number).
        lower_case: True for uncased models (lower-case + strip accents), False for cased ones.
        vocabulary: optional list of str used instead of reading `vocab_file` (a saved model does not
            depend on the vocab file still being there: a `.keras` file holds it as its vocab.txt asset).
        strip_accents: None (default) strips accents exactly when `lower_case`, as the original; True or
            False sets it apart from casing (Hugging Face's BertTokenizer and KerasHub presets have it too).
        rules: "google" (default): Google's BasicTokenizer, as above; "keras_hub": a KerasHub preset's
            WordPieceTokenizer (`keras_bert.text.keras_hub_rules`: NFKC case folding for `lower_case`,
            only ASCII whitespace and control characters split, [UNK] over 100 bytes), so its ids are
            KerasHub's.

    Call: `tokenizer(strings)` with a tf.string tensor [batch] (or a scalar, or any-rank dense/ragged)
    returns int32 ids, ragged with one more dimension than the input: [batch, (pieces)] for [batch].
    No [CLS]/[SEP] are added (see BertPacker). Invalid UTF-8 bytes are dropped, like the original's
    `decode("utf-8", "ignore")`; empty or whitespace-only strings give no pieces.

    Examples:

        tokenizer = BertTokenizer("vocab.txt", lower_case=True)
        ids = tokenizer(tf.constant(["The cat sat.", "Dogs!"]))   # ragged int32 [2, (pieces)]
        tokenizer.detokenize(ids)                                 # [b"the cat sat .", b"dogs !"]
        tokenizer.cls_id, tokenizer.mask_id, tokenizer.vocab_size
    """

    def __init__(self, vocab_file=None, lower_case=True, vocabulary=None, strip_accents=None, rules="google",
                 **kwargs):
        # From a .keras file's config.json (see get_config): the vocabulary is its asset, which load_assets
        # reads; until then the tokenizer knows only that record (size, digest, special ids).
        asset = kwargs.pop(ASSET_KEY, None)
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        # Strings pass through as they are (Keras would otherwise try to convert/cast call arguments).
        compat.accept_raw_inputs(self)
        self._asset = asset
        if self._asset is not None:
            vocabulary = None
        elif vocabulary is None:
            if vocab_file is None:
                raise ValueError(
                    "BertTokenizer needs vocab_file (a BERT vocab.txt path) or vocabulary (a list)."
                )
            vocabulary = vocab_lib.load_vocab(vocab_file)
        else:
            vocabulary = vocab_lib.check_vocab(vocabulary, source=vocab_file or "vocabulary")
        self.vocab_file = os.fspath(vocab_file) if vocab_file is not None else None
        self.lower_case = bool(lower_case)
        self.strip_accents = None if strip_accents is None else bool(strip_accents)
        self.rules = rules
        self._splitter = BasicWordSplitter(self.lower_case, self.strip_accents, rules)
        self.built = True  # no weights: built as made, so Keras' whole-model calls (quantize) pass over it
        self._vocab = None
        if vocabulary is not None:
            self._set_vocabulary(vocabulary)

    def _set_vocabulary(self, vocabulary):
        """Builds the lookups of `vocabulary` (list of str, id order)."""
        self._vocab = list(vocabulary)
        self._token_to_id = {token: index for index, token in enumerate(self._vocab)}
        # Words over 100 characters are replaced by the [UNK] token text, which WordPiece maps to [UNK].
        # Any word of <= 100 characters fits in 400 bytes, so tf-text's byte limit never triggers.
        self._wordpiece = compat.fast_wordpiece_tokenizer(
            self._vocab, "##", max_bytes_per_word=4 * MAX_CHARS_PER_WORD + 8, unknown_token=vocab_lib.UNK,
            no_pretokenization=True, token_out_type=tf.int32)
        # The fast path's WordPiece also splits words (tf-text's BERT pre-tokenization, which on the ASCII
        # rows it gets splits exactly like the original); there a character is a byte, so its byte limit
        # is the original's 100-character [UNK] rule.
        self._ascii_wordpiece = compat.fast_wordpiece_tokenizer(
            self._vocab, "##", max_bytes_per_word=MAX_CHARS_PER_WORD, unknown_token=vocab_lib.UNK,
            no_pretokenization=False, token_out_type=tf.int32)
        self._is_suffix = tf.constant([token.startswith("##") for token in self._vocab])
        self._vocab_tensor = tf.constant(self._vocab)

    def _loaded(self):
        """The vocabulary (list of str); ValueError when a tokenizer rebuilt from a .keras file's config has
        not read its vocab.txt asset yet."""
        if self._vocab is None:
            raise ValueError(
                f"BertTokenizer {self.name!r}: its vocabulary ({self._asset['size']} tokens) is the "
                f"{vocab_lib.VOCAB_ASSET} asset of the .keras file its config came from and was not read; "
                "load that file with keras.saving.load_model (or the tokenizer's fill_from_keras_file)")
        return self._vocab

    # ----------------------------------------------------------------------------------- properties
    @property
    def vocab(self):
        """list of str: the tokens in id order."""
        return list(self._loaded())

    @property
    def vocab_size(self):
        return len(self._vocab) if self._vocab is not None else self._asset["size"]

    def _special_id(self, token):
        """The id of the reserved `token`; known before the vocabulary asset is read (the packer needs it)."""
        return self._token_to_id[token] if self._vocab is not None else self._asset["special_ids"][token]

    @property
    def pad_id(self):
        return self._special_id(vocab_lib.PAD)

    @property
    def unk_id(self):
        return self._special_id(vocab_lib.UNK)

    @property
    def cls_id(self):
        return self._special_id(vocab_lib.CLS)

    @property
    def sep_id(self):
        return self._special_id(vocab_lib.SEP)

    @property
    def mask_id(self):
        return self._special_id(vocab_lib.MASK)

    @property
    def special_ids(self):
        """list of int: ids of [PAD], [UNK], [CLS], [SEP], [MASK]."""
        return [self._special_id(token) for token in vocab_lib.RESERVED_TOKENS]

    def token_to_id(self, token):
        """The id of `token` (str); KeyError naming the token if it is not in the vocab."""
        self._loaded()
        if token not in self._token_to_id:
            raise KeyError(
                f"token {token!r} is not in the vocabulary of {self.vocab_file or 'this tokenizer'}"
            )
        return self._token_to_id[token]

    def id_to_token(self, token_id):
        """The token (str) of `token_id` (int); IndexError if it is not in [0, vocab_size)."""
        index = int(token_id)
        if not 0 <= index < len(self._loaded()):  # a negative id would otherwise count from the end
            raise IndexError(
                f"token id {index} is out of range for the vocabulary of "
                f"{self.vocab_file or 'this tokenizer'}; expected 0 <= id < {len(self._vocab)}"
            )
        return self._vocab[index]

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
            starts_word = tf.cast(self.starts_word(ids.flat_values), tf.int32)
            count = tf.math.cumsum(starts_word)
            row_base = tf.gather(shift_right(count, 0), tf.gather(ids.row_splits, row_ids(ids.row_splits)))
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
        word_chars = ragged_from_rows(chars["code_points"], chars["word_ids"], n_words)
        n_chars = word_chars.row_lengths()
        words = tf.strings.unicode_encode(word_chars, "UTF-8")
        if self.rules == "keras_hub":
            too_long = tf.strings.length(words) > MAX_BYTES_PER_WORD
        else:
            too_long = n_chars > MAX_CHARS_PER_WORD
        words = tf.where(too_long, vocab_lib.UNK, words)
        values = {}
        if with_offsets:
            ids, piece_starts, piece_ends = self._wordpiece.tokenize_with_offsets(words)
        else:
            ids = self._wordpiece.tokenize(words)
        values["ids"] = ids.flat_values
        # Regroup pieces from [words, (pieces)] to [strings, (pieces)].
        word_splits = ragged_from_rows(first, chars["word_rows"], chars["batch_size"]).row_splits
        piece_splits = tf.gather(ids.row_splits, word_splits)
        if with_offsets or "word_ids" in outputs:
            piece_word = row_ids(ids.row_splits)
        if "word_ids" in outputs:
            piece_rows = tf.gather(chars["word_rows"], piece_word)
            values["word_ids"] = tf.cast(piece_word - tf.gather(word_splits, piece_rows), tf.int32)
        if with_offsets:
            # Byte offsets inside each word → output character → byte span of its source character.
            char_bytes = exclusive_cumsum(utf8_length(chars["code_points"]))
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
        self._loaded()
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

    def starts_word(self, ids):
        """bool, shaped as `ids`: whether each piece begins a basic-tokenizer word (punctuation is a word of
        its own), i.e. is no "##" continuation; the first pieces of `tokenize_with_word_ids`' words."""
        self._loaded()
        return ~tf.gather(self._is_suffix, ids)

    def detokenize(self, ids):
        """int ids [batch, (pieces)] (ragged or dense) → tf.string [batch]: tokens joined by spaces, "##"
        continuations glued to the previous piece. Lower-casing and accent stripping are not undone."""
        self._loaded()
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        tokens = tf.gather(self._vocab_tensor, ids)
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(list(inputs.shape) + [None], dtype="int32", ragged=True)

    def get_config(self):
        """The constructor's arguments, `vocabulary` inline (list of str); for a `.keras` file's config.json
        instead `vocabulary: None` and ASSET_KEY: {"size", "sha256", "special_ids"} of the vocab.txt asset
        `save_assets` writes (the config stays small: Keras prints it whole when it cannot rebuild it)."""
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "lower_case": self.lower_case, "vocabulary": None})
        if self._vocab is None:
            config[ASSET_KEY] = dict(self._asset)
        elif compat.in_keras_file():
            special = dict(zip(vocab_lib.RESERVED_TOKENS, self.special_ids, strict=True))
            config[ASSET_KEY] = {"size": self.vocab_size, "sha256": vocab_lib.vocab_digest(self._vocab),
                                 "special_ids": special}
        else:  # in memory (clone, from_config copies): no asset to read from
            config["vocabulary"] = self.vocab
        if self.strip_accents is not None:  # only when set: configs of the original rules stay as they were
            config["strip_accents"] = self.strip_accents
        if self.rules != "google":
            config["rules"] = self.rules
        return config

    def save_assets(self, dir_path):
        """Writes the vocabulary as `vocab.txt` among a `.keras` file's assets (readable with any zip
        tool)."""
        vocab_lib.save_vocab(self._loaded(), os.path.join(dir_path, vocab_lib.VOCAB_ASSET))

    def load_assets(self, dir_path):
        """Reads the vocabulary from the `vocab.txt` asset (a file whose config held it inline, as saved
        before the asset form: checks the asset against it)."""
        path = os.path.join(dir_path, vocab_lib.VOCAB_ASSET)
        if self._vocab is not None:
            if os.path.exists(path) and vocab_lib.load_vocab(path) != self._vocab:
                raise ValueError(f"the saved tokenizer's vocab.txt asset differs from the vocabulary in its "
                                 f"config ({self.vocab_size} tokens): the .keras file was changed after "
                                 "saving")
            return
        if not os.path.exists(path):
            raise ValueError(f"the saved tokenizer {self.name!r} has no {vocab_lib.VOCAB_ASSET} asset "
                             f"({self._asset['size']} tokens); expected one in the .keras file")
        with open(path, "rb") as f:
            self._fill(f.read(), path)

    def fill_from_keras_file(self, keras_path):
        """Reads the vocabulary of a tokenizer rebuilt from `keras_path`'s config.json alone (by
        `keras.saving.deserialize_keras_object`, not `load_model`) from that file's vocab.txt asset of its
        digest. Does nothing when the tokenizer has its vocabulary."""
        if self._vocab is not None:
            return
        with zipfile.ZipFile(keras_path) as archive:
            names = [name for name in archive.namelist()
                     if name.startswith("assets/") and name.endswith("/" + vocab_lib.VOCAB_ASSET)]
            for name in names:
                data = archive.read(name)
                if hashlib.sha256(data).hexdigest() == self._asset["sha256"]:
                    return self._fill(data, f"{keras_path}:{name}")
        raise ValueError(f"{keras_path}: no {vocab_lib.VOCAB_ASSET} asset of the tokenizer {self.name!r} "
                         f"({self._asset['size']} tokens, sha256 {self._asset['sha256'][:12]}...) among "
                         f"{names}; expected the .keras file its config came from")

    def _fill(self, data, source):
        """Sets the vocabulary from vocab.txt bytes `data` (named `source`), checked against its record."""
        tokens = vocab_lib.parse_vocab(data, source)
        if vocab_lib.vocab_digest(tokens) != self._asset["sha256"]:
            raise ValueError(f"the saved tokenizer's vocab.txt asset differs from the vocabulary its config "
                             f"names ({self._asset['size']} tokens, sha256 {self._asset['sha256'][:12]}...): "
                             "the .keras file was changed after saving")
        self._set_vocabulary(tokens)
