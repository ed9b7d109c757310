"""Raw text to encoder inputs in ops LiteRT runs: tf-text's FastBertNormalizer + end-to-end
FastWordpieceTokenizer (custom ops its runtime registers) and a packer of builtin ops.

LiteRT has no kernel for the ops `BertTokenizer` runs on code points (UnicodeDecode, RegexFullMatch,
StringLower, searchsorted). So a .tflite tokenizes with tf-text's two fast ops, which give our ids on every
text of printable ASCII (there they are `BertTokenizer`'s own fast path) and differ on some other
characters, listed with the inputs they affect in docs/litert.md; it packs with `BertPacker`, which is made of
builtin ops (gathers and selects).
"""

import tensorflow as tf
import tensorflow_text as tf_text

from keras_bert.export.errors import ExportError
from keras_bert.text import BertPreprocessor, BertTokenizer


class FastOpsTokenizer(BertTokenizer):
    """A `BertTokenizer` whose ids come from tf-text's FastBertNormalizer (lower-casing, NFD and accent
    stripping when uncased; dropping or spacing control characters) and FastWordpieceTokenizer with its own
    BERT pre-tokenization (whitespace, punctuation, CJK ideographs; [UNK] for words over 100 bytes).
    Same arguments and calls as `BertTokenizer` (ids, and byte offsets into the input string); word ids
    are not computed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=self.lower_case)

    def _tokenize_flat(self, strings, outputs):
        """1-D strings -> tuple of ragged [batch, (pieces)] named by `outputs` ("ids", "starts", "ends")."""
        if "word_ids" in outputs:
            raise ValueError("word ids (a token classifier's words) need searchsorted, which LiteRT has no "
                             "kernel for")
        if "starts" not in outputs and "ends" not in outputs:
            ids = self._ascii_wordpiece.tokenize(self._normalizer.normalize(strings))
            return (ids,)
        normalized, offsets = self._normalizer.normalize_with_offsets(strings)
        ids, starts, ends = self._ascii_wordpiece.tokenize_with_offsets(normalized)
        # offsets[i, k]: the input byte of normalized byte k of row i (one more entry: the end).
        base = tf.gather(offsets.row_splits[:-1], starts.value_rowids())
        values = {"ids": ids.flat_values,
                  "starts": tf.gather(offsets.flat_values, base + starts.flat_values),
                  "ends": tf.gather(offsets.flat_values, base + ends.flat_values)}
        return tuple(tf.RaggedTensor.from_row_splits(values[name], ids.row_splits, validate=False)
                     for name in outputs)


class FastOpsPreprocessor(BertPreprocessor):
    """A `BertPreprocessor` of a `FastOpsTokenizer`."""

    def padding_to_longest(self, multiple):
        return FastOpsPreprocessor(self.tokenizer, self.seq_length, pad_to_multiple_of=multiple,
                                   name=f"{self.name}_longest")


def fast_ops_preprocessor(preprocessor):
    """`preprocessor` (a `BertPreprocessor`) as a `FastOpsPreprocessor` of the same vocabulary, casing and
    sequence length. ExportError where tf-text's fast ops cannot follow its tokenizer: accents stripped apart
    from casing, or KerasHub's rules."""
    tokenizer = preprocessor.tokenizer
    if tokenizer.rules != "google" or tokenizer.strip_accents not in (None, tokenizer.lower_case):
        raise ExportError("a LiteRT export tokenizes with tf-text's FastBertNormalizer, which strips accents "
                          "exactly when it lower-cases; this tokenizer has "
                          f"lower_case={tokenizer.lower_case}, strip_accents={tokenizer.strip_accents}, "
                          f"rules={tokenizer.rules!r}")
    fast = FastOpsTokenizer(tokenizer.vocab_file, lower_case=tokenizer.lower_case, vocabulary=tokenizer.vocab)
    return FastOpsPreprocessor(fast, preprocessor.seq_length, preprocessor.pad_to_multiple_of)
