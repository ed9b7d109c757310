"""SQuAD v1.1/v2.0: the JSON reader and the prediction files.

    examples, skipped = read_squad_examples("train-v2.0.json", is_training=True, version_2_with_negative=True)
    inputs, targets = windows.training_arrays(examples, preprocessor, rules)   # the windows `serve` cuts
    # keras_bert.tasks.squad.answers decodes the logits into answers as character spans of the context
    result.save(output_dir)   # a SquadPredictions: predictions.json, nbest_predictions.json, null_odds.json

Contexts are split into words on whitespace as the original (`char_to_word_offset` maps each context
character to its word): a training answer must match its words at its offset.
"""

import collections
import dataclasses
import json
import logging
import os

from keras_bert.data.formats import DataFormatError
from keras_bert.textfiles import read_json

# ------------------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SquadExample:
    """One question about one paragraph.

    Attributes:
      qas_id: the question id (key of predictions.json).
      question_text: the question.
      context_text: the paragraph, unchanged.
      doc_tokens: the paragraph split on whitespace (the "words" answers are mapped to).
      char_to_word_offset: for each character of `context_text`, the index of its word in `doc_tokens`
        (whitespace maps to the preceding word; -1 before the first word).
      answers: gold answer texts (all of them; empty for a no-answer question). Used for evaluation.
      answer_text, answer_start: the training answer (the first) and its character offset; "" and -1 for
        no-answer questions or when not reading for training.
      start_position, end_position: word indices of the training answer in `doc_tokens` (-1 when none).
      is_impossible: v2.0 no-answer question.
    """

    qas_id: str
    question_text: str
    context_text: str
    doc_tokens: list
    char_to_word_offset: list
    answers: list = dataclasses.field(default_factory=list)
    answer_text: str = ""
    answer_start: int = -1
    start_position: int = -1
    end_position: int = -1
    is_impossible: bool = False


SquadReadResult = collections.namedtuple("SquadReadResult", ["examples", "skipped_qas_ids"])


def _is_squad_whitespace(ch):
    # U+202F (narrow no-break space) occurs in SQuAD contexts and separates words there.
    return ch in " \t\r\n" or ord(ch) == 0x202F


def split_context(context):
    """Splits `context` on whitespace; returns `(doc_tokens, char_to_word_offset)` (see `SquadExample`)."""
    doc_tokens, char_to_word_offset = [], []
    previous_is_whitespace = True
    for ch in context:
        if _is_squad_whitespace(ch):
            previous_is_whitespace = True
        else:
            if previous_is_whitespace:
                doc_tokens.append(ch)
            else:
                doc_tokens[-1] += ch
            previous_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _load_json(path):
    document = read_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise DataFormatError(path, None, 'expected a JSON object with a "data" list (SQuAD format)')
    return document["data"]


def _field(path, where, record, key, kind):
    if not isinstance(record, dict) or key not in record:
        raise DataFormatError(path, None, f"{where}: missing key {key!r}")
    value = record[key]
    if not isinstance(value, kind):
        raise DataFormatError(path, None,
                              f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


def read_squad_examples(path, is_training, version_2_with_negative=False):
    """Reads a SQuAD v1.1 or v2.0 JSON file.

    Args:
      path: the JSON file (`{"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}`).
      is_training: take each question's first answer as the training target (a question must then have
        exactly one answer unless it is a v2.0 no-answer question) and check it against the context.
      version_2_with_negative: read `is_impossible` (SQuAD v2.0).

    Returns:
      `SquadReadResult(examples, skipped_qas_ids)`: a list of `SquadExample` in file order, and the ids of
      training questions skipped because their answer text does not occur at its offset in the context
      (compared on whitespace-normalized words, as the original; each skip is logged with its id).

    Raises:
      DataFormatError: empty file, not UTF-8 or invalid JSON (with its line), a missing or mistyped key
        (with its JSON path), a question id used twice, a training question without exactly one answer, an
        empty context.
    """
    data = _load_json(path)
    examples, skipped = [], []
    first_seen = {}  # qas_id -> where it first occurs: predictions and scores are keyed by id
    for a, article in enumerate(data):
        for p, paragraph in enumerate(_field(path, f"data[{a}]", article, "paragraphs", list)):
            where = f"data[{a}].paragraphs[{p}]"
            context = _field(path, where, paragraph, "context", str)
            doc_tokens, char_to_word_offset = split_context(context)
            if not doc_tokens:
                raise DataFormatError(path, None, f"{where}.context is empty")
            for q, qa in enumerate(_field(path, where, paragraph, "qas", list)):
                qa_where = f"{where}.qas[{q}]"
                qas_id = str(_field(path, qa_where, qa, "id", (str, int)))
                if qas_id in first_seen:
                    raise DataFormatError(path, None,
                                          f"{qa_where}: duplicate question id {qas_id!r} (first at "
                                          f"{first_seen[qas_id]}); predictions and scores are keyed "
                                          "by id, so every question needs its own")
                first_seen[qas_id] = qa_where
                qa_where = f"{qa_where} (id {qas_id})"
                question = _field(path, qa_where, qa, "question", str)
                answers = _field(path, qa_where, qa, "answers", list)
                is_impossible = bool(qa.get("is_impossible", False)) if version_2_with_negative else False
                example = SquadExample(
                    qas_id=qas_id,
                    question_text=question,
                    context_text=context,
                    doc_tokens=doc_tokens,
                    char_to_word_offset=char_to_word_offset,
                    answers=[_field(path, f"{qa_where}.answers[{i}]", answer, "text", str)
                             for i, answer in enumerate(answers)],
                    is_impossible=is_impossible,
                )
                if is_training and not is_impossible:
                    if len(answers) != 1:
                        raise DataFormatError(path, None, f"{qa_where}: a training question needs exactly 1 "
                                                          f"answer, found {len(answers)}")
                    if not _set_training_answer(path, qa_where, example, answers[0]):
                        logging.warning("%s: could not find answer %r at its offset in %s; skipping it",
                                        path, example.answer_text, qa_where)
                        skipped.append(qas_id)
                        continue
                examples.append(example)
    if skipped:
        logging.warning("%s: skipped %d training questions whose answer does not match the context",
                        path, len(skipped))
    return SquadReadResult(examples, skipped)


def _set_training_answer(path, where, example, answer):
    """Sets the training answer of `example` from the JSON `answer`; False when it is not in the context at
    its offset. Whitespace around the answer text is dropped, and the offset moved past the context's
    whitespace it pointed at: " cat " given at the space before "cat" labels "cat", where the original
    (the space mapping to the word before it) labelled "The cat"."""
    text = _field(path, f"{where}.answers[0]", answer, "text", str)
    start = _field(path, f"{where}.answers[0]", answer, "answer_start", int)
    context = example.context_text
    while text and _is_squad_whitespace(text[0]):
        text = text[1:]
        if 0 <= start < len(context) and _is_squad_whitespace(context[start]):
            start += 1
    while text and _is_squad_whitespace(text[-1]):
        text = text[:-1]
    example.answer_text, example.answer_start = text, start
    end = start + len(text) - 1
    if not text or start < 0 or end >= len(example.context_text):
        return False
    example.start_position = example.char_to_word_offset[start]
    example.end_position = example.char_to_word_offset[end]
    # Compared on whitespace-joined words: the answer may start or end inside a word, or differ in spacing.
    found = " ".join(example.doc_tokens[example.start_position : example.end_position + 1])
    return " ".join(text.split()) in found


# ------------------------------------------------------------------------------------------------------------
# Prediction files
# ------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class SquadPredictions:
    """Post-processing output.

    Attributes:
      predictions: qas_id -> answer text ("" = no answer, v2.0).
      nbest: qas_id -> list of {"text", "probability", "start_logit", "end_logit"}, best first.
      null_odds: qas_id -> null score minus the best non-null span score (v2.0 only; else empty). Pass it
        as `na_probs` to `keras_bert.tasks.squad.metrics.evaluate_v2`.
    """

    predictions: dict
    nbest: dict
    null_odds: dict

    def save(self, output_dir):
        """Writes predictions.json, nbest_predictions.json, and (v2.0) null_odds.json; returns their paths."""
        os.makedirs(output_dir, exist_ok=True)
        files = {"predictions.json": self.predictions, "nbest_predictions.json": self.nbest}
        if self.null_odds:
            files["null_odds.json"] = self.null_odds
        paths = []
        for name, content in files.items():
            paths.append(os.path.join(output_dir, name))
            with open(paths[-1], "w", encoding="utf-8") as f:
                json.dump(content, f, indent=2, ensure_ascii=False)
        return paths
