"""The custom CSV/TSV classification format."""

import pytest

from keras_bert.data.formats import DataFormatError
from keras_bert.tasks.classification.reader import collect_labels, read_classification_file


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_with_quotes_pairs_and_labels(tmp_path):
    train = _write(tmp_path / "train.csv",
                   'id,text,text_b,label\n1,"Great, really great",It was fine,pos\n'
                   '2,Awful,"multi\nline",neg\n'
                   "3,Meh,So so,neutral\n")
    examples = read_classification_file(train)
    assert [(e.text_a, e.text_b, e.label, e.index) for e in examples] == [
        ("Great, really great", "It was fine", "pos", "1"), ("Awful", "multi\nline", "neg", "2"),
        ("Meh", "So so", "neutral", "3")]
    assert collect_labels(examples) == ["neg", "neutral", "pos"]
    # The third record ends on line 5 because the second one spans two lines.
    _write(tmp_path / "dev.csv", "text,text_b,label\nNice,ok,pos\nHmm,ok,unsure\n")
    with pytest.raises(DataFormatError, match=r"dev\.csv:3: unknown label 'unsure'; expected one of"):
        read_classification_file(tmp_path / "dev.csv", label_list=collect_labels(examples))


def test_tsv_single_sentence_and_unlabeled_predict_file(tmp_path):
    _write(tmp_path / "predict.tsv", "text\nfirst sentence\nsecond \"quoted\" one\n")
    examples = read_classification_file(tmp_path / "predict.tsv", label_list=["a", "b"])
    assert [(e.text_a, e.text_b, e.label, e.guid) for e in examples] == [
        ("first sentence", None, None, "predict-0"), ('second "quoted" one', None, None, "predict-1")]


def test_regression_labels(tmp_path):
    _write(tmp_path / "train.tsv", "text\tlabel\nup\t0.75\ndown\t-2\n")
    assert ([e.label for e in read_classification_file(tmp_path / "train.tsv", is_regression=True)]
            == [0.75, -2.0])
    _write(tmp_path / "bad.tsv", "text\tlabel\nup\t0.75\ndown\tlots\n")
    with pytest.raises(DataFormatError, match=r"bad\.tsv:3: label 'lots' is not a number"):
        read_classification_file(tmp_path / "bad.tsv", is_regression=True)


def test_bad_files(tmp_path):
    _write(tmp_path / "empty.csv", "")
    with pytest.raises(DataFormatError, match=r"empty\.csv: file is empty"):
        read_classification_file(tmp_path / "empty.csv")
    _write(tmp_path / "header_only.csv", "text,label\n")
    with pytest.raises(DataFormatError, match="header but no examples"):
        read_classification_file(tmp_path / "header_only.csv")
    _write(tmp_path / "cols.csv", "text,label\nfine,a\nnot,fine,b\n")
    with pytest.raises(DataFormatError, match=r"cols\.csv:3: expected 2 fields as in the header, got 3"):
        read_classification_file(tmp_path / "cols.csv")
    _write(tmp_path / "notext.csv", "sentence,label\nx,a\n")
    with pytest.raises(DataFormatError, match=r"notext\.csv:1: header has no column 'text'"):
        read_classification_file(tmp_path / "notext.csv")
    _write(tmp_path / "data.json", "text,label\nx,a\n")
    with pytest.raises(DataFormatError, match="cannot tell CSV from TSV"):
        read_classification_file(tmp_path / "data.json")
    assert read_classification_file(tmp_path / "data.json", delimiter=",")[0].label == "a"
    _write(tmp_path / "one_class.csv", "text,label\nx,a\ny,a\n")
    with pytest.raises(ValueError, match="at least 2 distinct labels"):
        collect_labels(read_classification_file(tmp_path / "one_class.csv"), "one_class.csv")
    with pytest.raises(FileNotFoundError, match="missing.csv"):
        read_classification_file(tmp_path / "missing.csv")


def test_ids_empty_label_columns_and_files_to_evaluate(tmp_path):
    _write(tmp_path / "predict.tsv", "idx\ttext\tlabel\nq-7\tfirst\t\nq-3\tsecond\t\n")
    examples = read_classification_file(tmp_path / "predict.tsv", label_list=["a", "b"])
    assert [(e.index, e.label) for e in examples] == [("q-7", None), ("q-3", None)]
    with pytest.raises(DataFormatError, match=r"predict\.tsv: no labels \(no `label` column, or it is empty"):
        read_classification_file(tmp_path / "predict.tsv", label_list=["a", "b"], require_labels=True)
    _write(tmp_path / "dev.tsv", "id\ttext\tlabel\n1\tfirst\ta\n2\tsecond\t\n")
    with pytest.raises(DataFormatError, match=r"dev\.tsv:3: empty `label` field"):
        read_classification_file(tmp_path / "dev.tsv", label_list=["a", "b"])
    _write(tmp_path / "ids.tsv", "id\ttext\n1\tfirst\n2\tsecond\n1\tthird\n")
    with pytest.raises(DataFormatError, match=r"ids\.tsv:4: duplicate id '1' \(first at line 2\); "
                                              r"predictions are written by id"):
        read_classification_file(tmp_path / "ids.tsv")


def test_a_duplicated_column_is_refused_naming_it(tmp_path):
    # Was: the second `text` column silently ignored.
    _write(tmp_path / "dup.csv", "text,text,label\nfirst,second,a\nthird,fourth,b\n")
    with pytest.raises(DataFormatError, match=r"^\S*dup\.csv:1: column 'text' appears twice in the header "
                                              r"\(columns 1 and 2\)"):
        read_classification_file(tmp_path / "dup.csv")
    # A repeated column that is not read stays harmless.
    _write(tmp_path / "notes.csv", "text,note,note,label\nfirst,x,y,a\n")
    assert read_classification_file(tmp_path / "notes.csv")[0].label == "a"


def test_a_header_repeated_mid_file_is_refused(tmp_path):
    # Was: a class named `label` (two files concatenated, each with its header).
    _write(tmp_path / "cat.csv", "text,label\nfirst,a\n text , label \nsecond,b\n")
    with pytest.raises(DataFormatError, match=r"^\S*cat\.csv:3: this row repeats the header of line 1"):
        read_classification_file(tmp_path / "cat.csv")


def test_integer_labels_sort_as_numbers(tmp_path):
    # Was: ["1", "10", "2"]: class ids in string order.
    _write(tmp_path / "train.csv", "text,label\na,2\nb,10\nc,1\nd,-3\ne,2\n")
    assert collect_labels(read_classification_file(tmp_path / "train.csv")) == ["-3", "1", "2", "10"]
    # Not all integers: string order.
    _write(tmp_path / "mixed.csv", "text,label\na,2\nb,10\nc,x\n")
    assert collect_labels(read_classification_file(tmp_path / "mixed.csv")) == ["10", "2", "x"]
    # "01" and "1" are one number written two ways: refused rather than two classes.
    _write(tmp_path / "zeros.csv", "text,label\na,1\nb,01\nc,2\n")
    with pytest.raises(ValueError, match=r"^zeros\.csv: labels '01' and '1' are the same number written two "
                                         r"ways"):
        collect_labels(read_classification_file(tmp_path / "zeros.csv"), "zeros.csv")
