"""Sentence (pair) classification examples, and the reader of users' own CSV/TSV files.

The custom format: a CSV (`.csv`) or TSV (`.tsv`, `.txt`) file with a header row naming the columns `text`,
optionally `text_b`, and `label` (other columns are ignored). Labels are strings; the classes are the sorted
distinct labels of the training file (`collect_labels`; integers in numeric order). With `is_regression=True`
labels are floats.

    train = read_classification_file("train.csv")
    labels = collect_labels(train, "train.csv")
    dev = read_classification_file("dev.csv", label_list=labels)        # unknown label -> file:line error
    test = read_classification_file("test.csv", label_list=labels)      # no `label` column -> label=None
"""

import csv
import dataclasses
import math
import os
import re

from keras_bert.data.formats import DataFormatError, check_new_id, header_index, read_rows


@dataclasses.dataclass(frozen=True)
class ClassificationExample:
    """One single-sentence or sentence-pair example.

    Attributes:
      guid: unique id, `"<split or file stem>-<n>"`.
      text_a: first (or only) text.
      text_b: second text of a pair task, or None.
      label: a label string (classification), a float (regression), or None (unlabeled test data).
      index: the id written to a predictions file: the `index`/`id`/`idx` column of the source when it has
        one (an int in GLUE files, the text as written in custom files), else the 0-based row number.
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | float | None = None
    index: int | str = 0


def _delimiter_for(path, delimiter):
    if delimiter is not None:
        return delimiter
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension == ".csv":
        return ","
    if extension in (".tsv", ".txt"):
        return "\t"
    raise DataFormatError(path, None, f"cannot tell CSV from TSV by the extension {extension!r}: "
                                      "name the file .csv or .tsv, or pass delimiter=',' or '\\t'")


def parse_regression_label(path, line, value):
    """Parses a float label; a non-number, nan or inf raises DataFormatError naming path:line."""
    try:
        label = float(value)
    except ValueError:
        raise DataFormatError(path, line, f"label {value!r} is not a number (regression task)") from None
    if not math.isfinite(label):
        # One such label makes the loss NaN, and every weight after the first step.
        raise DataFormatError(path, line, f"label {value!r} is not a finite number (regression task)")
    return label


def check_label(path, line, label, label_list):
    """Raises DataFormatError naming path:line when `label` is not one of `label_list`."""
    if label not in label_list:
        raise DataFormatError(path, line, f"unknown label {label!r}; expected one of {list(label_list)}")


def read_classification_file(path, label_list=None, is_regression=False, delimiter=None, split=None,
                             require_labels=False):
    """Reads a custom CSV/TSV classification file.

    Args:
      path: a `.csv` or `.tsv` file with a header row with columns `text`, optional `text_b`, optional
        `label` (without it, or with it empty on every row, every example has `label=None`: a file to
        predict), optional `index`/`id`/`idx` (the ids written with the predictions).
      label_list: when given, every label must be one of these strings (unknown label: error naming
        path:line). None accepts any label (use this for the training file, then `collect_labels`).
      is_regression: labels are parsed as floats.
      delimiter: overrides the delimiter chosen from the extension.
      split: prefix of the example guids; defaults to the file name without extension.
      require_labels: refuse a file without labels (one to evaluate on).

    Returns:
      list of `ClassificationExample` (label: str, float, or None), in file order; `index` is the id
      column's text, or the row number (0-based, header excluded) when there is none.

    Raises:
      DataFormatError: empty file, no `text` column, a column read twice (`text,text,label`), a row that
        repeats the header (of two or more columns), a row whose field count differs from the header's,
        an empty `text`, an empty or repeated id, an empty label among non-empty ones, no labels with
        `require_labels`, an unknown label, a non-numeric or non-finite regression label.
    """
    rows = read_rows(path, _delimiter_for(path, delimiter), quoting=csv.QUOTE_MINIMAL)
    header_line, header = rows[0]
    header = [name.strip() for name in header]
    columns = header_index(path, header, header_line, ["text"])
    for name in ("text", "text_b", "label", "index", "id", "idx"):
        if header.count(name) > 1:  # one of them would be read, the others silently ignored
            positions = " and ".join(str(i + 1) for i, column in enumerate(header) if column == name)
            raise DataFormatError(path, header_line, f"column {name!r} appears twice in the header (columns "
                                                     f"{positions}); rename or drop the one not meant")
    text_b_column = header.index("text_b") if "text_b" in header else None
    label_column = header.index("label") if "label" in header else None
    id_column = next((header.index(name) for name in ("index", "id", "idx") if name in header), None)
    if len(rows) == 1:
        raise DataFormatError(path, None, "file has a header but no examples")
    for line, fields in rows[1:]:
        # e.g. two files concatenated, headers and all (one column: a text that happens to be its name)
        if len(header) > 1 and [field.strip() for field in fields] == header:
            raise DataFormatError(path, line, f"this row repeats the header of line {header_line}; expected "
                                              "one header, on the first line")
        if len(fields) != len(header):
            raise DataFormatError(path, line,
                                  f"expected {len(header)} fields as in the header, got {len(fields)}")
    if label_column is not None and not any(fields[label_column].strip() for _, fields in rows[1:]):
        label_column = None  # a label column left empty on every row: a file to predict
    if require_labels and label_column is None:
        raise DataFormatError(path, None, "no labels (no `label` column, or it is empty on every row); "
                                          "a file to evaluate on needs them")
    split = split or os.path.splitext(os.path.basename(os.fspath(path)))[0]
    examples, first_line_of_id = [], {}
    for row_number, (line, fields) in enumerate(rows[1:]):
        text_a = fields[columns["text"]]
        if not text_a.strip():
            raise DataFormatError(path, line, "empty `text` field")
        index = row_number
        if id_column is not None:
            index = fields[id_column].strip()
            if not index:
                raise DataFormatError(path, line, f"empty {header[id_column]!r} field")
            check_new_id(path, line, header[id_column], index, first_line_of_id,
                         "predictions are written by id")
        label = None
        if label_column is not None:
            label = fields[label_column].strip()
            if not label:
                raise DataFormatError(path, line, "empty `label` field (other rows have labels)")
            if is_regression:
                label = parse_regression_label(path, line, label)
            elif label_list is not None:
                check_label(path, line, label, label_list)
        examples.append(
            ClassificationExample(
                guid=f"{split}-{row_number}",
                text_a=text_a,
                text_b=fields[text_b_column] if text_b_column is not None else None,
                label=label,
                index=index,
            )
        )
    return examples


_INTEGER = re.compile(r"[+-]?[0-9]+")


def collect_labels(examples, source="examples"):
    """The sorted distinct string labels of `examples` (the class list of a custom task): in numeric order
    when every label is an integer ("1", "2", "10"; ASCII digits, optional sign), else in string order.

    Labels stay the strings written: two that are one integer written two ways ("01" and "1", "+1" and
    "1") are refused rather than made two classes, since such a file more likely means one class than two.

    Raises ValueError naming `source` when no example has a label, only one class occurs, or two integer
    labels are one number.
    """
    labels = sorted({example.label for example in examples if example.label is not None})
    if labels and all(_INTEGER.fullmatch(label) for label in labels):
        labels.sort(key=int)  # stable: labels of one number stay side by side, in string order
        for first, second in zip(labels, labels[1:], strict=False):
            if int(first) == int(second):
                raise ValueError(f"{source}: labels {first!r} and {second!r} are the same number written two "
                                 "ways; write each class one way")
    if len(labels) < 2:
        raise ValueError(f"{source}: a classification task needs at least 2 distinct labels, found {labels}")
    return labels
