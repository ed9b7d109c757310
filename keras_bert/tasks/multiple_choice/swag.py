"""SWAG multiple choice: the official `train.csv` / `val.csv` / `test.csv`.

Header (the first column is an unnamed row number):
`,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label`;
`test.csv` has no `label` column. Each choice is scored as the pair (sent1, sent2 + " " + ending_i), as in
the BERT paper's SWAG setup. The row number is the example's id in the file: a repeated one is refused. The
`video-id`/`fold-ind` pair is not checked: swagaf's data README says `train.csv` also holds `gen` questions
(a generated ending ranked above the real one of the same caption pair), so the pair may repeat there.

    examples = read_swag_examples("val.csv")
    pairs = examples[0].choice_pairs()     # 4 x (text_a, text_b)
"""

import csv
import dataclasses

from keras_bert.data.formats import DataFormatError, check_new_id, header_index, read_rows

NUM_CHOICES = 4
_TEXT_COLUMNS = ("video-id", "fold-ind", "sent1", "sent2") + tuple(f"ending{i}" for i in range(NUM_CHOICES))


@dataclasses.dataclass(frozen=True)
class SwagExample:
    """One SWAG question.

    Attributes:
      swag_id: "<video-id>/<fold-ind>" (the question's caption pair; may repeat in `train.csv`, see above).
      context_sentence: `sent1`, the first sentence.
      start_ending: `sent2`, the beginning of the second sentence that every ending completes.
      endings: the 4 candidate endings.
      label: index of the right ending (0-3), or None in test files.
    """

    swag_id: str
    context_sentence: str
    start_ending: str
    endings: tuple
    label: int | None = None

    def choice_pairs(self):
        """The model inputs, one `(text_a, text_b)` pair per ending."""
        return [(self.context_sentence, f"{self.start_ending} {ending}") for ending in self.endings]


def read_swag_examples(path):
    """Reads a SWAG CSV file.

    Returns:
      list of `SwagExample` in file order; `label` is None when the file has no `label` column.

    Raises:
      DataFormatError: empty file, missing header column, wrong field count, label not an integer in 0-3,
        a row number (the unnamed first column) used twice.
    """
    rows = read_rows(path, ",", quoting=csv.QUOTE_MINIMAL)
    header_line, header = rows[0]
    columns = header_index(path, header, header_line, _TEXT_COLUMNS)
    label_column = header.index("label") if "label" in header else None
    if len(rows) == 1:
        raise DataFormatError(path, None, "file has a header but no examples")
    has_row_ids = header[0] == ""
    examples, first_lines = [], {}
    for line, fields in rows[1:]:
        if len(fields) != len(header):
            raise DataFormatError(path, line,
                                  f"expected {len(header)} fields as in the header, got {len(fields)}")
        label = None
        if label_column is not None:
            value = fields[label_column].strip()
            if value not in {str(i) for i in range(NUM_CHOICES)}:
                raise DataFormatError(path, line,
                                      f"label {value!r} is not an ending index 0-{NUM_CHOICES - 1}")
            label = int(value)
        if has_row_ids:
            check_new_id(path, line, "row number", fields[0], first_lines,
                         "it is the example's id in the file")
        examples.append(SwagExample(
            swag_id=f"{fields[columns['video-id']]}/{fields[columns['fold-ind']]}",
            context_sentence=fields[columns["sent1"]],
            start_ending=fields[columns["sent2"]],
            endings=tuple(fields[columns[f"ending{i}"]] for i in range(NUM_CHOICES)),
            label=label,
        ))
    return examples
