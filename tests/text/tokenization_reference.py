"""Reference path for parity tests: Google's original FullTokenizer semantics on top of the
`transformers` Python port (transformers.models.bert.tokenization_bert_legacy).

Two adjustments make the port follow the original `tokenization.py` (google-research/bert):
  * `_clean_text`: the port drops every category C* character (Co private use, Cn unassigned, Cs);
    the original drops only Cc and Cf (besides U+0000 and U+FFFD). Reimplemented here.
  * `tokenize`: the port NFC-normalizes the text before splitting; the original does not (this changes
    cased ids for decomposed input such as "e" + U+0301). The step list is the original's.
Everything else (CJK spacing, str.lower, NFD + Mn strip, punctuation split, WordPiece with [UNK] for
words over 100 characters) is the port's own code.
"""

import unicodedata

from transformers.models.bert import tokenization_bert_legacy as hf_bert

_whitespace_tokenize = hf_bert.whitespace_tokenize


def _is_original_control(char):
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


class OriginalBasicTokenizer(hf_bert.BasicTokenizer):
    def _clean_text(self, text):
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_original_control(char):
                continue
            output.append(" " if hf_bert._is_whitespace(char) else char)
        return "".join(output)

    def tokenize(self, text, never_split=None):
        text = self._tokenize_chinese_chars(self._clean_text(text))
        split_tokens = []
        for token in _whitespace_tokenize(text):
            if self.do_lower_case:
                token = self._run_strip_accents(token.lower())
            split_tokens.extend(self._run_split_on_punc(token))
        return _whitespace_tokenize(" ".join(split_tokens))


class OriginalFullTokenizer:
    """Python reference: `tokenize(text) -> list of ids`, as Google's FullTokenizer +
    convert_tokens_to_ids."""

    def __init__(self, vocab, lower_case):
        self.vocab = {token: index for index, token in enumerate(vocab)}
        self.basic = OriginalBasicTokenizer(do_lower_case=lower_case)
        self.wordpiece = hf_bert.WordpieceTokenizer(
            vocab=self.vocab, unk_token="[UNK]", max_input_chars_per_word=100
        )

    def words(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8", "ignore")  # the original's convert_to_unicode
        return self.basic.tokenize(text)

    def tokenize(self, text):
        return [self.vocab[piece] for word in self.words(text) for piece in self.wordpiece.tokenize(word)]
