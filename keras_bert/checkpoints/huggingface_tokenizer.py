"""Hugging Face tokenizer files: the fast `tokenizer.json` (a `tokenizers` WordPiece, all that transformers 5
writes beside the weights) read into our BertTokenizer's settings, and the files `AutoTokenizer` loads
(`vocab.txt`, `tokenizer.json`, `tokenizer_config.json`) written from a BertTokenizer."""

from __future__ import annotations

import json
import logging
import os

from keras_bert.checkpoints.files import TOKENIZER_CONFIG_FILE, VOCAB_FILE
from keras_bert.checkpoints.mapping import CheckpointError
from keras_bert.text.unicode_rules import MAX_CHARS_PER_WORD
from keras_bert.text.vocab import CLS, MASK, PAD, RESERVED_TOKENS, SEP, UNK
from keras_bert.textfiles import read_json

logger = logging.getLogger("keras_bert")

FAST_TOKENIZER_FILE = "tokenizer.json"
# transformers' model_max_length when a tokenizer states no limit (VERY_LARGE_INTEGER = int(1e30)); any
# value this large is that placeholder, not a length.
UNSET_MAX_LENGTH = 10**18


# tokenizer.json settings that Google's BasicTokenizer + WordPiece (our BertTokenizer) reproduce exactly.
_FAST_TOKENIZER = {("model", "type"): "WordPiece", ("model", "continuing_subword_prefix"): "##",
                   ("model", "max_input_chars_per_word"): MAX_CHARS_PER_WORD,
                   ("normalizer", "type"): "BertNormalizer", ("normalizer", "clean_text"): True,
                   ("normalizer", "handle_chinese_chars"): True,
                   ("pre_tokenizer", "type"): "BertPreTokenizer"}


def huggingface_text(directory: str) -> dict | None:
    """{"vocabulary" (tokens by id), "lower_case", "strip_accents" (None: as lower_case), "source"} of the
    fast tokenizer `tokenizer.json` in the Hugging Face directory, or None when there is none. Raises
    CheckpointError naming the file and key of a setting our BertTokenizer does not reproduce."""
    source = os.path.join(directory, FAST_TOKENIZER_FILE)
    if not os.path.isfile(source):
        return None
    values = read_json(source)
    for (section, key), expected in _FAST_TOKENIZER.items():
        part = values.get(section) if isinstance(values, dict) else None
        found = part.get(key) if isinstance(part, dict) else None
        if found != expected:
            raise CheckpointError(f"{source}: {section}.{key} is {found!r}; keras_bert reads only a BERT "
                                  f"tokenizer with {section}.{key}={expected!r}")
    vocab = values["model"].get("vocab")
    if not isinstance(vocab, dict) or sorted(vocab.values()) != list(range(len(vocab))):
        raise CheckpointError(f"{source}: model.vocab must map each token to a distinct id 0..n-1")
    normalizer = values["normalizer"]
    strip_accents = normalizer.get("strip_accents")
    return {"vocabulary": sorted(vocab, key=vocab.get), "lower_case": bool(normalizer.get("lowercase")),
            "strip_accents": None if strip_accents is None else bool(strip_accents), "source": source}


def tokenizer_max_length(directory: str) -> tuple[int, str] | None:
    """(model_max_length, its source "<file>: model_max_length") of the tokenizer_config.json in the
    Hugging Face directory, or None when there is none, it states none, or it states transformers'
    placeholder for "no limit" (>= UNSET_MAX_LENGTH). Raises CheckpointError naming the file when the value
    is not an integer."""
    path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
    if not os.path.isfile(path):
        return None
    values = read_json(path)
    value = values.get("model_max_length") if isinstance(values, dict) else None
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                         and value >= UNSET_MAX_LENGTH):
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise CheckpointError(f"{path}: model_max_length is {value!r}; expected an integer")
    return value, f"{path}: model_max_length"


def _dump(value, file):
    with open(file, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def _template(tokenizer):
    cls, sep = {"SpecialToken": {"id": CLS, "type_id": 0}}, {"SpecialToken": {"id": SEP, "type_id": 0}}
    second = [{"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": SEP, "type_id": 1}}]
    single = [cls, {"Sequence": {"id": "A", "type_id": 0}}, sep]
    return {"type": "TemplateProcessing", "single": single, "pair": single + second,
            "special_tokens": {token: {"id": token, "ids": [tokenizer.token_to_id(token)], "tokens": [token]}
                               for token in (CLS, SEP)}}


def write_tokenizer_files(tokenizer, directory, max_length):
    """Writes `vocab.txt`, `tokenizer.json` and `tokenizer_config.json` of the BertTokenizer `tokenizer`
    into `directory`, so that transformers' `AutoTokenizer` splits text into the ids `tokenizer` gives;
    `max_length` (the packed length) is its `model_max_length`. KerasHub's character rules have no
    Hugging Face form: they are written as Google's, with a warning."""
    if tokenizer.rules != "google":
        logger.warning("%s: the tokenizer follows %s rules; Hugging Face's BertNormalizer applies Google's",
                       directory, tokenizer.rules)
    vocab = tokenizer.vocab
    with open(os.path.join(directory, VOCAB_FILE), "w", encoding="utf-8") as f:
        f.writelines(token + "\n" for token in vocab)
    special = [{"id": tokenizer.token_to_id(token), "content": token, "single_word": False, "lstrip": False,
                "rstrip": False, "normalized": False, "special": True} for token in RESERVED_TOKENS]
    _dump({"version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
           "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": tokenizer.strip_accents, "lowercase": tokenizer.lower_case},
           "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": _template(tokenizer),
           "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
           "model": {"type": "WordPiece", "unk_token": UNK, "continuing_subword_prefix": "##",
                     "max_input_chars_per_word": MAX_CHARS_PER_WORD,
                     "vocab": {token: index for index, token in enumerate(vocab)}}},
          os.path.join(directory, FAST_TOKENIZER_FILE))
    _dump({"tokenizer_class": "BertTokenizer", "do_lower_case": tokenizer.lower_case,
           "strip_accents": tokenizer.strip_accents, "tokenize_chinese_chars": True,
           "model_max_length": int(max_length), "unk_token": UNK, "sep_token": SEP, "pad_token": PAD,
           "cls_token": CLS, "mask_token": MASK}, os.path.join(directory, TOKENIZER_CONFIG_FILE))
