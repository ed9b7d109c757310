"""Shared plumbing of the fine-tuning readers: one error type and line-numbered CSV/TSV rows, parsed strictly.

Every reader in `keras_bert.data` raises `DataFormatError` with the file and 1-based line of the problem, so a
user can open the file at that line and see what is wrong.
"""

import csv
import io
import sys

from keras_bert.textfiles import DataFormatError, read_text

# GLUE/SQuAD-era files have very long fields (QQP, MNLI parses); the csv default of 128 KiB is too small.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


def open_text(path):
    """`path` as a text stream for `csv` (UTF-8 read strictly by `read_text`; a leading byte-order mark is
    dropped)."""
    return io.StringIO(read_text(path), newline="")


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
    # strict: a stray quote is an error, not a field that silently swallows the following rows.
    reader = csv.reader(open_text(path), delimiter=delimiter, quoting=quoting, strict=True)
    record_start = 1
    try:
        for fields in reader:
            if fields:
                rows.append((reader.line_num, fields))
            record_start = reader.line_num + 1
    except csv.Error as e:
        if reader.line_num > record_start:
            raise DataFormatError(path, record_start, f"a quoted field opened on this line is still open at "
                                                      f"line {reader.line_num} ({e}); close the quote, or "
                                                      f"double a quote that is text (\"\")") from None
        raise DataFormatError(path, record_start, f"not valid delimited text ({e})") from None
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


def check_new_id(path, line, column, value, first_lines, keyed):
    """Records in `first_lines` ({id: line}) that the example at `line` has id `value` in `column`; raises
    DataFormatError naming both lines when an earlier example has it. `keyed` says what relies on the id."""
    if value in first_lines:
        raise DataFormatError(path, line,
                              f"duplicate {column} {value!r} (first at line {first_lines[value]}); {keyed}, "
                              "so every example needs its own")
    first_lines[value] = line
