"""WordPiece vocabularies: the special tokens, and reading, checking and writing a `vocab.txt`.

A vocab file has one token per line; the line number (from 0) is the token id, as in Google's
`tokenization.load_vocab` (which strips each line). Sub-word continuations start with `##`.
Learning a vocab from text is `vocab_learner`.
"""

import hashlib
import logging
import os

import tensorflow as tf

logger = logging.getLogger("keras_bert")

PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
# The vocabulary's file name among a saved tokenizer's assets (inside a .keras file).
VOCAB_ASSET = "vocab.txt"
# Learned vocabs put these at ids 0..4; Google's released vocabs have [PAD]=0, [UNK]=100, [CLS]=101, ...
RESERVED_TOKENS = (PAD, UNK, CLS, SEP, MASK)


def check_vocab(tokens, source="vocabulary"):
    """Checks a token list for a tokenizer: non-empty, no blank or duplicate entries, all reserved tokens.

    Args:
        tokens: list of str, the vocabulary in id order.
        source: what to name in error messages (a file path or "vocabulary").

    Returns:
        `tokens` as a list of str.

    Raises:
        ValueError: naming `source` and the line (1-based) or the token that is wrong.
    """
    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"{source}: the vocabulary is empty; expected one WordPiece token per line.")
    first_line = {}
    for index, token in enumerate(tokens):
        if not isinstance(token, str):
            raise ValueError(f"{source}: entry {index} is {token!r}; expected a str token.")
        if not token:
            raise ValueError(f"{source}: line {index + 1} is blank; expected one token per line.")
        if token in first_line:
            raise ValueError(
                f"{source}: token {token!r} appears on lines {first_line[token] + 1} and {index + 1}; "
                "expected each token once."
            )
        first_line[token] = index
    missing = [token for token in RESERVED_TOKENS if token not in first_line]
    if missing:
        raise ValueError(
            f"{source}: the vocabulary lacks the special tokens {missing}; a BERT vocab needs "
            f"{list(RESERVED_TOKENS)}."
        )
    return tokens


def load_vocab(path):
    """Reads a BERT `vocab.txt` (one token per line, stripped like Google's `load_vocab`).

    A leading UTF-8 byte order mark (as Windows editors write) is removed with a warning; otherwise it
    would stick to the first token ("\ufeff[PAD]": a missing [PAD], or a first word never matched).

    Args:
        path: local path or any path `tf.io.gfile` reads (gs://...).

    Returns:
        list of str: the tokens, where the list index is the token id.

    Raises:
        FileNotFoundError: if `path` does not exist.
        ValueError: naming the file and line, if the file is not UTF-8, is empty, has blank or duplicate
            lines, or lacks [PAD]/[UNK]/[CLS]/[SEP]/[MASK].
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(f"vocab file {path!r} does not exist; expected a BERT vocab.txt.")
    with tf.io.gfile.GFile(path, "rb") as f:
        return parse_vocab(f.read(), path)


def parse_vocab(data, path):
    """The tokens of vocab.txt bytes `data`, read and checked as `load_vocab` does (errors name `path`).

    Args:
        data: bytes, a vocab.txt's content.
        path: the file's name for error messages.

    Returns:
        list of str: the tokens, where the list index is the token id.

    Raises:
        ValueError: naming `path` and the line: not UTF-8, empty, blank or duplicate tokens, a missing
            reserved token.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        bad = data[error.start : error.end]
        raise ValueError(
            f"{path}: line {line} is not valid UTF-8 (bytes {bad!r}: {error.reason}); "
            "expected a UTF-8 vocab.txt."
        ) from None
    if text.startswith("\ufeff"):
        logger.warning("%s: removed the UTF-8 byte order mark at the start of the file.", path)
        text = text[1:]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    return check_vocab([line.strip() for line in lines], source=path)


def vocab_digest(tokens):
    """sha256 (hex) of `tokens` (list of str, id order) as a vocab.txt holds them: one per line.

    Args:
        tokens: list of str, the vocabulary in id order.

    Returns:
        str: 64 hex digits.
    """
    return hashlib.sha256("".join(token + "\n" for token in tokens).encode("utf-8")).hexdigest()


def save_vocab(tokens, path):
    """Writes `tokens` (list of str, id order) to `path`, one per line.

    Args:
        tokens: list of str, the vocabulary in id order (id = line number).
        path: local path or any path `tf.io.gfile` writes (gs://...); replaced if it exists.
    """
    with tf.io.gfile.GFile(os.fspath(path), "w") as f:
        f.write("".join(token + "\n" for token in tokens))
