"""SWAG CSV reader on a tiny file in the official layout."""

import pytest

from keras_bert.data.formats import DataFormatError
from keras_bert.tasks.multiple_choice.swag import read_swag_examples

HEADER = ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3"
ROW = ('0,anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street holding small horn brass '
       'instruments. A drum line","Members of the procession walk down the street holding small horn brass '
       'instruments.",A drum line,gold,"passes by walking down the street playing their instruments.",'
       '"has heard approaching them.","arrives and they\'re outside dancing and asleep.",'
       '"turns the lead singer watches the performance."')


def test_train_and_test_files(tmp_path):
    (tmp_path / "val.csv").write_text(f"{HEADER},label\n{ROW},0\n", encoding="utf-8")
    (example,) = read_swag_examples(tmp_path / "val.csv")
    assert example.swag_id == "anetv_jkn6uvmqwh4/3416"
    assert example.label == 0 and len(example.endings) == 4
    assert example.choice_pairs()[1] == (
        "Members of the procession walk down the street holding small horn brass instruments.",
        "A drum line has heard approaching them.")
    (tmp_path / "test.csv").write_text(f"{HEADER}\n{ROW}\n", encoding="utf-8")
    assert read_swag_examples(tmp_path / "test.csv")[0].label is None


def test_errors(tmp_path):
    (tmp_path / "bad_label.csv").write_text(f"{HEADER},label\n{ROW},0\n{ROW},4\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad_label\.csv:3: label '4' is not an ending index 0-3"):
        read_swag_examples(tmp_path / "bad_label.csv")
    (tmp_path / "short.csv").write_text(f"{HEADER},label\n{ROW}\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"short\.csv:2: expected 12 fields as in the header, got 11"):
        read_swag_examples(tmp_path / "short.csv")
    (tmp_path / "header.csv").write_text(",video-id,sent1\n0,a,b\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"header\.csv:1: header has no column 'fold-ind'"):
        read_swag_examples(tmp_path / "header.csv")
    (tmp_path / "empty.csv").write_text("", encoding="utf-8")
    with pytest.raises(DataFormatError, match="file is empty"):
        read_swag_examples(tmp_path / "empty.csv")
