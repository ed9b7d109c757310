"""GLUE readers on tiny files in the official download-script layout, TFDS mapping, submission files."""

import os

import numpy as np
import pytest

from keras_bert.data.formats import DataFormatError
from keras_bert.tasks.classification import glue

MNLI_HEADER = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
               "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")


def _write(directory, name, lines):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def test_cola_no_header_train_and_header_test(tmp_path):
    _write(tmp_path, "train.tsv", ["gj04\t1\t\tOur friends won't buy this analysis.",
                                   "gj04\t0\t*\tThey drank the pub."])
    _write(tmp_path, "test.tsv", ["index\tsentence", "0\tBill whistled past the house.",
                                  "1\tHe \"said\" so."])
    train = glue.read_glue_examples("CoLA", tmp_path, "train")
    assert [(e.text_a, e.label) for e in train] == [("Our friends won't buy this analysis.", "1"),
                                                    ("They drank the pub.", "0")]
    test = glue.read_glue_examples("cola", tmp_path, "test")
    assert [(e.index, e.text_a, e.label) for e in test] == [(0, "Bill whistled past the house.", None),
                                                            (1, 'He "said" so.', None)]  # quotes are text


def test_cola_wrong_field_count_names_line(tmp_path):
    _write(tmp_path, "dev.tsv", ["gj04\t1\t\tFine.", "gj04\t1\tonly three fields"])
    with pytest.raises(DataFormatError, match=r"dev\.tsv:2: expected 4 tab-separated fields"):
        glue.read_glue_examples("cola", tmp_path, "dev")


def test_mrpc_with_bom_and_test_index(tmp_path):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    path = os.path.join(tmp_path, "train.tsv")
    with open(path, "w", encoding="utf-8-sig") as f:  # the MRPC source files start with a BOM
        f.write(header + "\n1\t702876\t702977\tAmrozi accused his brother.\t"
                         "Referring to him, Amrozi said.\n")
    _write(tmp_path, "test.tsv", ["index\t#1 ID\t#2 ID\t#1 String\t#2 String",
                                  "7\t1089874\t1089925\tPCCW .\tHe ."])
    (train,) = glue.read_glue_examples("MRPC", tmp_path, "train")
    assert (train.text_a, train.text_b, train.label, train.index) == (
        "Amrozi accused his brother.", "Referring to him, Amrozi said.", "1", 0)
    (test,) = glue.read_glue_examples("mrpc", tmp_path, "test")
    assert (test.index, test.text_a, test.text_b, test.label) == (7, "PCCW .", "He .", None)


def test_stsb_float_labels_and_bad_score(tmp_path):
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    _write(tmp_path, "train.tsv",
           [header, "0\tmain-captions\tMSRvid\t2012test\t0001\tnone\tnone\tA plane.\tA jet.\t5.000",
            "1\tmain-captions\tMSRvid\t2012test\t0004\tnone\tnone\tA man.\tA dog.\t0.500"])
    examples = glue.read_glue_examples("STS-B", tmp_path, "train")
    assert [e.label for e in examples] == [5.0, 0.5]
    assert glue.get_glue_task("stsb").is_regression and glue.get_glue_task("stsb").num_classes == 1
    _write(tmp_path, "dev.tsv", [header, "0\tg\tf\ty\to\ts\ts\tA.\tB.\thigh"])
    with pytest.raises(DataFormatError, match=r"dev\.tsv:2: label 'high' is not a number"):
        glue.read_glue_examples("stsb", tmp_path, "dev")


def test_qqp_skips_malformed_rows_with_count(tmp_path, caplog):
    _write(tmp_path, "train.tsv", ["id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
                                   "201359\t303345\t303346\tWhy are X?\tWhy is X?\t0",
                                   "133273\t213221\t213222\tHow do I?",
                                   "1\t2\t3\tA?\tB?\t1"])
    _write(tmp_path, "test.tsv", ["id\tquestion1\tquestion2", "0\tWhat?\tWho?"])
    with caplog.at_level("WARNING"):
        examples = glue.read_glue_examples("qqp", tmp_path, "train")
    assert [(e.index, e.label) for e in examples] == [(201359, "0"), (1, "1")]
    assert "skipped 1 malformed rows" in caplog.text and "lines 3" in caplog.text
    (test,) = glue.read_glue_examples("qqp", tmp_path, "test")
    assert (test.text_a, test.text_b, test.label) == ("What?", "Who?", None)


def test_mnli_splits_labels_and_unknown_label(tmp_path):
    train_header = MNLI_HEADER + "\tlabel1\tgold_label"
    dev_header = MNLI_HEADER + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label"
    parses = "\t".join(["p"] * 4)
    five = {name: "\t".join([name] * 5) for name in ("entailment", "neutral", "x")}
    _write(tmp_path, "train.tsv",
           [train_header, f"0\t1\t1e\tgov\t{parses}\tConceptually.\tProduct.\tneutral\tneutral"])
    _write(tmp_path, "dev_matched.tsv",
           [dev_header, f"0\t1\t1e\tgov\t{parses}\tA.\tB.\t{five['entailment']}\tentailment"])
    _write(tmp_path, "dev_mismatched.tsv",
           [dev_header, f"5\t1\t1e\tgov\t{parses}\tA.\tB.\t{five['neutral']}\tneutral",
            f"6\t1\t1e\tgov\t{parses}\tA.\tB.\t{five['x']}\tunsure"])
    _write(tmp_path, "test_matched.tsv", [MNLI_HEADER, f"9\t1\t1e\tgov\t{parses}\tC.\tD."])
    assert [e.label for e in glue.read_glue_examples("MNLI", tmp_path, "train")] == ["neutral"]
    (dev,) = glue.read_glue_examples("mnli", tmp_path, "dev_matched")
    assert (dev.text_a, dev.text_b, dev.label) == ("A.", "B.", "entailment")
    with pytest.raises(DataFormatError, match=r"dev_mismatched\.tsv:3: unknown label 'unsure'"):
        glue.read_glue_examples("mnli", tmp_path, "dev_mismatched")
    (test,) = glue.read_glue_examples("mnli", tmp_path, "test_matched")
    assert (test.index, test.text_a, test.label) == (9, "C.", None)
    with pytest.raises(ValueError, match="no split 'dev'"):
        glue.read_glue_examples("mnli", tmp_path, "dev")
    with pytest.raises(FileNotFoundError, match="test_mismatched.tsv"):
        glue.read_glue_examples("mnli", tmp_path, "test_mismatched")


@pytest.mark.parametrize(
    "task, header, row, expected",
    [
        ("sst2", "sentence\tlabel", "hide new secretions \t0", ("hide new secretions ", None, "0")),
        ("qnli", "index\tquestion\tsentence\tlabel", "0\tWhen?\tIn 1990.\tentailment",
         ("When?", "In 1990.", "entailment")),
        ("rte", "index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\tnot_entailment",
         ("A.", "B.", "not_entailment")),
        ("wnli", "index\tsentence1\tsentence2\tlabel", "0\tA.\tB.\t1", ("A.", "B.", "1")),
    ],
)
def test_header_tasks(tmp_path, task, header, row, expected):
    _write(tmp_path, "train.tsv", [header, row])
    (example,) = glue.read_glue_examples(task, tmp_path, "train")
    assert (example.text_a, example.text_b, example.label) == expected


def test_header_errors(tmp_path):
    _write(tmp_path, "train.tsv", ["sentence\tlabel", "good\t1", "too\tmany\tfields"])
    with pytest.raises(DataFormatError, match=r"train\.tsv:3: expected 2 tab-separated fields.*got 3"):
        glue.read_glue_examples("sst2", tmp_path, "train")
    _write(tmp_path, "dev.tsv", ["text\tlabel", "good\t1"])
    with pytest.raises(DataFormatError, match=r"dev\.tsv:1: header has no column 'sentence'"):
        glue.read_glue_examples("sst2", tmp_path, "dev")
    _write(tmp_path, "test.tsv", [])
    with pytest.raises(DataFormatError, match=r"test\.tsv: file is empty"):
        glue.read_glue_examples("sst2", tmp_path, "test")
    _write(tmp_path, "train.tsv", ["sentence\tlabel", "good\t2"])
    with pytest.raises(DataFormatError,
                       match=r"train\.tsv:2: unknown label '2'; expected one of \['0', '1'\]"):
        glue.read_glue_examples("sst-2", tmp_path, "train")


def test_ax_diagnostic_and_submission_files(tmp_path):
    _write(tmp_path, "diagnostic.tsv", ["index\tsentence1\tsentence2",
                                        "0\tThe cat sat.\tThe cat did not sit.", "1\tA.\tB."])
    examples = glue.read_glue_examples("AX", tmp_path, "test")
    path = glue.write_glue_predictions("ax", "test", examples, [0, "neutral"], tmp_path / "out")
    assert os.path.basename(path) == "AX.tsv"
    with open(path) as f:
        assert f.read() == "index\tprediction\n0\tcontradiction\n1\tneutral\n"
    path = glue.write_glue_predictions("mnli", "test_mismatched", examples, [1, 2], tmp_path / "out")
    assert os.path.basename(path) == "MNLI-mm.tsv"
    path = glue.write_glue_predictions("sts-b", "test", examples, [np.float32(3.14159), 5], tmp_path / "out")
    with open(path) as f:
        assert f.read() == "index\tprediction\n0\t3.142\n1\t5.000\n"
    path = glue.write_glue_predictions("CoLA", "test", examples, np.array([1, 0]), tmp_path / "out")
    with open(path) as f:
        assert f.read().splitlines()[1:] == ["0\t1", "1\t0"]
    with pytest.raises(ValueError, match="class id 3 out of range"):
        glue.write_glue_predictions("rte", "test", examples, [0, 3], tmp_path / "out")
    with pytest.raises(ValueError, match="no submission file"):
        glue.write_glue_predictions("rte", "dev", examples, [0, 1], tmp_path / "out")


def test_tfds_examples_from_a_tf_data_split():
    tf = pytest.importorskip("tensorflow")
    mnli = tf.data.Dataset.from_tensor_slices({
        "premise": [b"A man sleeps.", "Ein Hund läuft.".encode()],
        "hypothesis": [b"A man is awake.", b"A dog."],
        "label": np.array([2, -1], dtype=np.int64),
        "idx": np.array([4, 5], dtype=np.int32),
    })
    examples = glue.examples_from_tfds("glue/mnli", mnli, split="validation_matched")
    assert [(e.text_a, e.text_b, e.label, e.index) for e in examples] == [
        ("A man sleeps.", "A man is awake.", "contradiction", 4), ("Ein Hund läuft.", "A dog.", None, 5)]
    # TFDS ids follow the TFDS class names; ours follow the TSV processors.
    wnli = [{"sentence1": b"a", "sentence2": b"b", "label": 1, "idx": 0}]
    assert glue.examples_from_tfds("glue/wnli", wnli)[0].label == "1"  # TFDS "entailment" is GLUE's 1
    cola = [{"sentence": b"ok", "label": 0, "idx": 3}]
    assert glue.examples_from_tfds("glue/cola", cola)[0].label == "0"
    stsb = [{"sentence1": b"a", "sentence2": b"b", "label": np.float32(3.5), "idx": 0}]
    assert glue.examples_from_tfds("glue/stsb", stsb)[0].label == 3.5
    qnli = [{"question": b"q", "sentence": b"s", "label": 1, "idx": 0}]
    assert glue.examples_from_tfds("glue/qnli", qnli)[0].label == "not_entailment"
    with pytest.raises(ValueError, match=r"missing keys \['sentence2'\]"):
        glue.examples_from_tfds("glue/rte", [{"sentence1": b"a", "label": 0, "idx": 0}])


def test_parse_tfds_name():
    assert glue.parse_tfds_name("glue/sst2", "validation") == ("sst2", "dev")
    assert glue.parse_tfds_name("glue/mnli", "validation_mismatched") == ("mnli", "dev_mismatched")
    assert glue.parse_tfds_name("glue/mnli_matched", "test") == ("mnli", "test_matched")
    assert glue.parse_tfds_name("glue/ax", "test") == ("ax", "test")
    with pytest.raises(ValueError, match="expected glue/<config>"):
        glue.parse_tfds_name("super_glue/boolq")


def test_load_tfds_examples_not_prepared(tmp_path):
    pytest.importorskip("tensorflow_datasets")
    with pytest.raises(FileNotFoundError,
                       match=f"glue/rte: not prepared under the data_dir '{tmp_path}/glue/rte/"):
        glue.load_tfds_examples("glue/rte", "train", data_dir=str(tmp_path))
