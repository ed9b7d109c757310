"""Bad bytes and stray quotes in every reader of users' files: errors name the file and the line."""

import json

import pytest

from keras_bert.config import BertConfig
from keras_bert.data.formats import DataFormatError
from keras_bert.tasks.classification import glue
from keras_bert.tasks.classification.reader import read_classification_file
from keras_bert.tasks.multiple_choice.swag import read_swag_examples
from keras_bert.tasks.ner import conll
from keras_bert.tasks.squad import reader as squad

SQUAD = {"data": [{"title": "t", "paragraphs": [{"context": "Paris is in France.", "qas": [
    {"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]}


def _latin1(path, head, tail=b""):
    """`head` lines, then a line with Latin-1 "é" (0xe9, column 4: valid cp1252, not UTF-8); returns its
    line."""
    path.write_bytes(head + b"caf\xe9 x" + tail)
    return head.count(b"\n") + 1


READERS = {
    "csv": ("train.csv", b"text,label\nok,a\n", b",b\n", read_classification_file),
    "tsv": ("train.tsv", b"text\tlabel\nok\ta\n", b"\tb\n", read_classification_file),
    "glue": ("dev.tsv", b"sentence\tlabel\nok\t1\n", b"\t0\n",
             lambda path: glue.read_glue_examples("sst2", path.parent, "dev")),
    "conll": ("eng.train", b"EU B-ORG\nrejects O\n", b" O\n", conll.read_conll_file),
    "squad": ("train.json", b'{"data": [\n', b"\n]}", lambda path: squad.read_squad_examples(path, True)),
    "swag": ("val.csv", b",video-id,fold-ind,sent1,sent2,ending0,ending1,ending2,ending3,label\n", b",x\n",
             read_swag_examples),
    "bert_config": ("bert_config.json", b'{"vocab_size": 10,\n', b'": 1}\n', BertConfig.from_json_file),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_non_utf8_byte_names_file_line_and_column(tmp_path, reader):
    name, head, tail, read = READERS[reader]
    line = _latin1(tmp_path / name, head, tail)
    with pytest.raises(ValueError, match=rf"{name.replace('.', '[.]')}:{line}: not valid UTF-8: byte 0xe9 at "
                                         r"column 4"):
        read(tmp_path / name if reader != "bert_config" else str(tmp_path / name))


def test_utf8_byte_order_mark_is_still_dropped(tmp_path):
    (tmp_path / "train.csv").write_bytes(b"\xef\xbb\xbftext,label\nok,a\n")
    assert read_classification_file(tmp_path / "train.csv")[0].label == "a"


def test_stray_quote_is_refused_at_the_line_that_opens_it(tmp_path):
    # Lenient csv merged lines 2-4 into one 2-field row ("unclosed,pos\nb,neg\nc" + "pos"): silently 1
    # example.
    (tmp_path / "train.csv").write_text('text,label\n"unclosed,pos\nb,neg\n"c",pos\n')
    with pytest.raises(DataFormatError, match=r"train\.csv:2: a quoted field opened on this line is still "
                                              r"open at line 4"):
        read_classification_file(tmp_path / "train.csv")
    # Unclosed up to the end of the file.
    (tmp_path / "eof.csv").write_text('text,label\nfine,neg\n"unclosed,pos\nb,neg\nc,pos\n')
    with pytest.raises(DataFormatError,
                       match=r"eof\.csv:3: a quoted field opened on this line is still open"):
        read_classification_file(tmp_path / "eof.csv")
    # A quote closed in the middle of a field.
    (tmp_path / "mid.csv").write_text('text,label\n"a"b,pos\n')
    with pytest.raises(DataFormatError, match=r"mid\.csv:2: not valid delimited text"):
        read_classification_file(tmp_path / "mid.csv")
    # Quotes inside an unquoted field stay text, and GLUE TSVs never treat quotes as quoting.
    (tmp_path / "ok.csv").write_text('text,label\nsay "hi",pos\n')
    assert read_classification_file(tmp_path / "ok.csv")[0].text_a == 'say "hi"'


def test_swag_stray_quote(tmp_path):
    header = ",video-id,fold-ind,sent1,sent2,ending0,ending1,ending2,ending3,label\n"
    (tmp_path / "val.csv").write_text(header + '0,v,1,"a,b,c,d,e,f,0\n1,v,2,a,b,c,d,e,f,1\n')
    with pytest.raises(DataFormatError,
                       match=r"val\.csv:2: a quoted field opened on this line is still open"):
        read_swag_examples(tmp_path / "val.csv")


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity"])
def test_non_finite_regression_labels_are_refused(tmp_path, value):
    (tmp_path / "train.tsv").write_text(f"text\tlabel\nup\t0.5\ndown\t{value}\n")
    with pytest.raises(DataFormatError, match=rf"train\.tsv:3: label '{value}' is not a finite number"):
        read_classification_file(tmp_path / "train.tsv", is_regression=True)
    (tmp_path / "dev.tsv").write_text(f"sentence1\tsentence2\tscore\na\tb\t{value}\n")
    with pytest.raises(DataFormatError, match=rf"dev\.tsv:2: label '{value}' is not a finite number"):
        glue.read_glue_examples("stsb", tmp_path, "dev")


def test_squad_duplicate_question_ids_are_refused(tmp_path):
    document = json.loads(json.dumps(SQUAD))
    qas = document["data"][0]["paragraphs"][0]["qas"]
    qas.append(dict(qas[0], question="Which country is Paris in?"))
    (tmp_path / "dev.json").write_text(json.dumps(document))
    for is_training in (False, True):
        with pytest.raises(DataFormatError, match=r"dev\.json: data\[0\]\.paragraphs\[0\]\.qas\[1\]: "
                                                  r"duplicate question id 'q1' \(first at "
                                                  r"data\[0\]\.paragraphs\[0\]\.qas\[0\]\)"):
            squad.read_squad_examples(tmp_path / "dev.json", is_training)
    (tmp_path / "ok.json").write_text(json.dumps(SQUAD))
    assert [e.qas_id for e in squad.read_squad_examples(tmp_path / "ok.json", False).examples] == ["q1"]


def test_glue_duplicate_ids_are_refused(tmp_path):
    # QNLI test.tsv: `index` is the id GLUE submissions are keyed by; QQP names it `id`.
    (tmp_path / "test.tsv").write_text("index\tquestion\tsentence\n0\tWhen?\tIn 1990.\n1\tWho?\tShe.\n"
                                       "1\tWhere?\tHere.\n")
    with pytest.raises(DataFormatError, match=r"test\.tsv:4: duplicate index 1 \(first at line 3\); GLUE "
                                              r"submissions are keyed by it"):
        glue.read_glue_examples("qnli", tmp_path, "test")
    (tmp_path / "dev.tsv").write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
                                      "7\t1\t2\tA?\tB?\t0\n07\t3\t4\tC?\tD?\t1\n")
    with pytest.raises(DataFormatError, match=r"dev\.tsv:3: duplicate id 7 \(first at line 2\)"):
        glue.read_glue_examples("qqp", tmp_path, "dev")
    # No id column (SST-2 train): the same row twice is two examples, numbered by row.
    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood\t1\ngood\t1\n")
    assert [e.index for e in glue.read_glue_examples("sst2", tmp_path, "train")] == [0, 1]


def test_swag_duplicate_row_numbers_are_refused(tmp_path):
    header = ",video-id,fold-ind,sent1,sent2,ending0,ending1,ending2,ending3,label\n"
    (tmp_path / "val.csv").write_text(header + "0,v,1,a,b,c,d,e,f,0\n1,v,2,a,b,c,d,e,f,1\n"
                                      "0,w,3,a,b,c,d,e,f,2\n")
    with pytest.raises(DataFormatError, match=r"val\.csv:4: duplicate row number '0' \(first at line 2\); "
                                              r"it is the example's id in the file"):
        read_swag_examples(tmp_path / "val.csv")
    # The same video-id/fold-ind under two row numbers is read: train.csv's `gen` questions repeat the pair.
    (tmp_path / "train.csv").write_text(header + "0,v,1,a,b,c,d,e,f,0\n1,v,1,a,b,c,d,e,f,1\n")
    assert [e.swag_id for e in read_swag_examples(tmp_path / "train.csv")] == ["v/1", "v/1"]
