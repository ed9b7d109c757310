"""Users' text and JSON files read strictly: every decoding or parsing error names the file and line.

Every reader of a user's file (CSV/TSV, GLUE TSV, CoNLL, SQuAD and SWAG files, `bert_config.json`,
Hugging Face `config.json` and index files, `labels.json`) goes through `read_text` or `read_json`, so a
file that is not UTF-8 fails with `path:line: not valid UTF-8 ...` rather than a bare `UnicodeDecodeError`
at a buffer offset.
"""

import codecs
import json
import os

from keras_bert.errors import UserInputError


class DataFormatError(UserInputError, ValueError):
    """A data file does not have the format a reader expects.

    Attributes:
      path: the file that is wrong.
      line: 1-based line number of the offending record, or None when the problem is the whole file.
    """

    def __init__(self, path, line, message):
        self.path = os.fspath(path)
        self.line = line
        self.reason = message
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")


def read_text(path):
    """The whole of `path` decoded as UTF-8 (a leading byte-order mark is dropped: MRPC's files have one).

    Returns:
      str, line endings as in the file.

    Raises:
      FileNotFoundError: no such file.
      DataFormatError: a byte sequence that is not UTF-8, naming its 1-based line and column.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as e:
        offset = start + e.start
        line_start = data.rfind(b"\n", 0, offset) + 1
        line = data.count(b"\n", 0, offset) + 1
        raise DataFormatError(path, line, f"not valid UTF-8: byte 0x{data[offset]:02x} at column "
                                          f"{offset - line_start + 1} ({e.reason}); save the file as UTF-8"
                              ) from None


def read_json(path):
    """The JSON value in `path` (UTF-8, as `read_text`).

    Raises:
      FileNotFoundError: no such file.
      DataFormatError: not UTF-8, empty, or not valid JSON (with the line and column of the error).
    """
    text = read_text(path)
    if not text.strip():
        raise DataFormatError(path, None, "file is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataFormatError(path, e.lineno, f"not valid JSON: {e.msg} (column {e.colno})") from None


def cache_dir(given=None):
    """Where keras_bert keeps what it builds once per machine (the default corpus and vocab, the tokenizer's
    character tables): `given`, else $KERAS_BERT_CACHE, else ~/.cache/keras_bert. Not created here."""
    return given or os.environ.get("KERAS_BERT_CACHE") or os.path.expanduser("~/.cache/keras_bert")
