"""CoNLL-2003 reader and prediction files."""

import pytest

from keras_bert.data.formats import DataFormatError
from keras_bert.tasks.ner import conll

TRAIN = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

BRUSSELS NNP B-NP B-LOC
"""


def test_read_sentences_and_tags(tmp_path):
    path = tmp_path / "eng.train"
    path.write_text(TRAIN)
    sentences = conll.read_conll_file(path)
    assert [s.tokens for s in sentences] == [("EU", "rejects", "German", "call", "."), ("Peter", "Blackburn"),
                                             ("BRUSSELS",)]
    assert sentences[0].tags == ("B-ORG", "O", "B-MISC", "O", "O")
    assert [s.line for s in sentences] == [3, 9, 14]
    assert sentences[1].guid == "eng-1"
    assert conll.collect_tags(sentences) == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER"]


def test_two_column_files_and_trailing_sentence(tmp_path):
    path = tmp_path / "dev.txt"
    path.write_text("Paris B-LOC\nis O")  # no final newline, no blank line
    (sentence,) = conll.read_conll_file(path, tag_list=["O", "B-LOC"])
    assert sentence.tags == ("B-LOC", "O")


def test_errors(tmp_path):
    (tmp_path / "tag.txt").write_text("EU NNP B-NP B-ORG\n\nBonn NNP B-NP B-GPE\n")
    with pytest.raises(DataFormatError, match=r"tag\.txt:3: unknown tag 'B-GPE'"):
        conll.read_conll_file(tmp_path / "tag.txt", tag_list=["O", "B-ORG"])
    (tmp_path / "cols.txt").write_text("EU NNP B-NP B-ORG\nrejects B-VP O\n")
    with pytest.raises(DataFormatError, match=r"cols\.txt:2: expected 4 fields as on the first line, got 3"):
        conll.read_conll_file(tmp_path / "cols.txt")
    (tmp_path / "one.txt").write_text("EU B-ORG\nrejects\n")
    with pytest.raises(DataFormatError, match=r"one\.txt:2: expected a token and a tag"):
        conll.read_conll_file(tmp_path / "one.txt")
    (tmp_path / "empty.txt").write_text("-DOCSTART- -X- O O\n\n")
    with pytest.raises(DataFormatError, match=r"empty\.txt: file has no sentences"):
        conll.read_conll_file(tmp_path / "empty.txt")


def test_write_predictions(tmp_path):
    path = tmp_path / "eng.train"
    path.write_text(TRAIN)
    sentences = conll.read_conll_file(path)[1:]
    conll.write_conll_predictions(tmp_path / "out.txt", sentences, [["B-PER", "O"], ["B-LOC"]])
    assert (tmp_path / "out.txt").read_text() == ("Peter B-PER B-PER\nBlackburn I-PER O\n\n"
                                                  "BRUSSELS B-LOC B-LOC\n\n")
