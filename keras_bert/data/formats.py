"""Shared plumbing of the fine-tuning readers: one error type and line-numbered CSV/TSV rows.

Every reader in `keras_bert.data` raises `DataFormatError` with the file and 1-based line of the problem, so a
user can open the file at that line and see what is wrong.
"""

import csv
import os
import sys

# GLUE/SQuAD-era files have very long fields (QQP, MNLI parses); the csv default of 128 KiB is too small.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


class DataFormatError(ValueError):
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


def open_text(path):
    """Opens `path` for reading as UTF-8 text (a leading byte-order mark is dropped: MRPC's files have one)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    return open(path, encoding="utf-8-sig", newline="")


def read_rows(path, delimiter, quoting=csv.QUOTE_MINIMAL):
    """Reads a delimited text file into `[(line_number, fields), ...]`.

    Args:
      path: file path.
      delimiter: "\\t" or ",".
      quoting: a `csv.QUOTE_*` constant. GLUE TSVs are read with `csv.QUOTE_NONE` (quotes are text there).

    Returns:
      list of `(line, fields)`: `line` is the 1-based line where the record ends, `fields` a list of str.
      Blank lines are dropped.

    Raises:
      DataFormatError: the file is empty or not valid CSV.
    """
    rows = []
    with open_text(path) as f:
        reader = csv.reader(f, delimiter=delimiter, quoting=quoting)
        try:
            for fields in reader:
                if fields:
                    rows.append((reader.line_num, fields))
        except csv.Error as e:
            raise DataFormatError(path, reader.line_num, f"not valid delimited text ({e})") from e
    if not rows:
        raise DataFormatError(path, None, "file is empty")
    return rows


def header_index(path, header, line, required):
    """Maps each column name in `required` to its position in `header`; errors name the missing column."""
    positions = {}
    for name in required:
        if name not in header:
            raise DataFormatError(
                path, line, f"header has no column {name!r} (header columns: {', '.join(map(repr, header))})"
            )
        positions[name] = header.index(name)
    return positions
