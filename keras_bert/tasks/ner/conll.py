"""CoNLL-2003 NER files: the sentences and tags a token classifier trains on (`windows.training_windows`
labels each token's first WordPiece) and the `token gold predicted` file conlleval reads.

Format: one token per line, whitespace-separated fields with the token first and the tag last
(`EU NNP B-NP B-ORG`); a blank line between sentences; `-DOCSTART-` lines (document separators) are skipped.
Every non-blank line of a file must have the same number of fields.

    train = read_conll_file("eng.train")
    tags = collect_tags(train)                      # ["O", "B-LOC", ...]: "O" first, then sorted
    dev = read_conll_file("eng.testa", tag_list=tags)  # unknown tag -> error naming file:line
"""

import dataclasses
import os

from keras_bert.data.formats import DataFormatError, open_text

DOCSTART = "-DOCSTART-"


@dataclasses.dataclass(frozen=True)
class ConllSentence:
    """One sentence.

    Attributes:
      guid: "<file stem>-<n>".
      tokens: the words (first field of each line).
      tags: their tags (last field), as many as `tokens`.
      line: 1-based line of the sentence's first token (for error messages).
    """

    guid: str
    tokens: tuple
    tags: tuple
    line: int


def read_conll_file(path, tag_list=None):
    """Reads a CoNLL-2003 style file.

    Args:
      path: the file.
      tag_list: when given, every tag must be one of these (unknown tag: error naming path:line).

    Returns:
      list of `ConllSentence` in file order (sentences of `-DOCSTART-` lines and empty sentences are dropped).

    Raises:
      DataFormatError: empty file (or only -DOCSTART-), a line with fewer than 2 fields, a line whose field
        count differs from the first line's, an unknown tag.
    """
    stem = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    sentences, tokens, tags, first_line = [], [], [], None
    num_fields = None

    def flush():
        if tokens:
            sentences.append(ConllSentence(f"{stem}-{len(sentences)}", tuple(tokens), tuple(tags),
                                           first_line))
            tokens.clear()
            tags.clear()

    with open_text(path) as f:
        for line_number, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                flush()
                continue
            if fields[0] == DOCSTART:
                flush()
                continue
            if len(fields) < 2:
                raise DataFormatError(path, line_number, f"expected a token and a tag, got {line.strip()!r}")
            if num_fields is None:
                num_fields = len(fields)
            elif len(fields) != num_fields:
                raise DataFormatError(path, line_number,
                                      f"expected {num_fields} fields as on the first line, got {len(fields)}")
            if tag_list is not None and fields[-1] not in tag_list:
                raise DataFormatError(path, line_number, f"unknown tag {fields[-1]!r}; expected one of "
                                                         f"{list(tag_list)}")
            if not tokens:
                first_line = line_number
            tokens.append(fields[0])
            tags.append(fields[-1])
    flush()
    if not sentences:
        raise DataFormatError(path, None, "file has no sentences")
    return sentences


def collect_tags(sentences):
    """The tag list of a task: "O" first (when present), then the other tags of `sentences` sorted."""
    tags = {tag for sentence in sentences for tag in sentence.tags}
    return (["O"] if "O" in tags else []) + sorted(tags - {"O"})


def iob1_to_iob2(tags):
    """Rewrites IOB1 tags (chunks open with `I-`) as IOB2 (every chunk opens with `B-`)."""
    converted = []
    for i, tag in enumerate(tags):
        if tag.startswith("I-"):
            previous = tags[i - 1] if i > 0 else "O"
            if previous == "O" or previous[2:] != tag[2:]:
                tag = "B-" + tag[2:]
        converted.append(tag)
    return converted


def write_conll_predictions(path, sentences, predicted_tags):
    """Writes `token gold predicted` lines with blank lines between sentences: the input of conlleval.pl."""
    if len(sentences) != len(predicted_tags):
        raise ValueError(f"{len(sentences)} sentences but {len(predicted_tags)} predicted tag sequences")
    with open(path, "w", encoding="utf-8") as f:
        for sentence, predicted in zip(sentences, predicted_tags, strict=True):
            if len(predicted) != len(sentence.tokens):
                raise ValueError(f"{sentence.guid}: {len(sentence.tokens)} tokens but {len(predicted)} tags")
            for token, gold, tag in zip(sentence.tokens, sentence.tags, predicted, strict=True):
                f.write(f"{token} {gold} {tag}\n")
            f.write("\n")
