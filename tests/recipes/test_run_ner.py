"""run_ner end to end on tiny CoNLL-2003 files (IOB1 tags, -DOCSTART- lines) written here."""

import json
import os

import pytest

from keras_bert.tasks.ner.metrics import conlleval

SENTENCES = [
    [("EU", "I-ORG"), ("rejects", "O"), ("German", "I-MISC"), ("call", "O"), (".", "O")],
    [("Peter", "I-PER"), ("Blackburn", "I-PER"), ("visited", "O"), ("Brussels", "I-LOC")],
    [("The", "O"), ("European", "I-ORG"), ("Commission", "I-ORG"), ("said", "O"), ("Thursday", "O")],
]


def _write_conll(path, sentences):
    with open(path, "w", encoding="utf-8") as f:
        f.write("-DOCSTART- -X- -X- O\n\n")
        for sentence in sentences:
            f.writelines(f"{token} NNP I-NP {tag}\n" for token, tag in sentence)
            f.write("\n")
    return str(path)


@pytest.mark.slow
def test_conll_train_eval_predict(tmp_path, tiny_model, run_in_process):
    train = _write_conll(tmp_path / "eng.train", SENTENCES * 4)
    dev = _write_conll(tmp_path / "eng.testa", SENTENCES)
    out = str(tmp_path / "out")
    status, stderr = run_in_process(
        "run_ner", f"--train_file={train}", f"--eval_file={dev}", f"--predict_file={dev}", "--do_predict",
        f"--output_dir={out}", "--num_train_epochs=1", "--train_batch_size=4", "--pad_to_multiple_of=8",
        *tiny_model([" ".join(t for t, _ in s) for s in SENTENCES], max_seq_length=16))
    assert status is None, stderr  # main returned: the run succeeded
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    with open(os.path.join(out, "labels.json")) as f:
        assert json.load(f)["labels"] == ["O", "I-LOC", "I-MISC", "I-ORG", "I-PER"]
    with open(os.path.join(out, "eval_predictions.txt")) as f:
        blocks = [b.splitlines() for b in f.read().strip().split("\n\n")]
    assert ([[line.split()[:2] for line in block] for block in blocks]
            == [[list(p) for p in s] for s in SENTENCES])
    # The reported scores are conlleval's on the written predictions.
    scores = conlleval([[line.split()[1] for line in b] for b in blocks],
                       [[line.split()[2] for line in b] for b in blocks])
    for name in ("precision", "recall", "f1", "accuracy"):
        assert results[name] == pytest.approx(scores[name])
    assert results["num_sentences"] == 3 and results["eval_loss"] > 0
    assert os.path.isfile(os.path.join(out, "test_predictions.txt"))


def test_unknown_tag_in_eval_file_names_the_line(tmp_path, tiny_model, run_in_process):
    train = _write_conll(tmp_path / "eng.train", SENTENCES)
    dev = _write_conll(tmp_path / "eng.testa", [[("Rome", "I-GPE")]])
    status, stderr = run_in_process("run_ner", f"--train_file={train}", f"--eval_file={dev}", "--nodo_train",
                                    f"--output_dir={tmp_path / 'out'}", *tiny_model(["rome"]))
    assert status == 1 and f"{dev}:3: unknown tag 'I-GPE'" in stderr


def test_bad_predict_file_fails_before_training(tmp_path, tiny_model, run_in_process):
    train = _write_conll(tmp_path / "eng.train", SENTENCES)
    (tmp_path / "eng.testb").write_bytes(b"EU I-ORG\nM\xfcller I-PER\n")  # Latin-1, not UTF-8
    out = tmp_path / "out"
    status, stderr = run_in_process("run_ner", f"--train_file={train}",
                                    f"--predict_file={tmp_path / 'eng.testb'}", "--do_predict", "--nodo_eval",
                                    f"--output_dir={out}",
                                    *tiny_model([" ".join(t for t, _ in s) for s in SENTENCES]))
    assert status == 1
    assert f"{tmp_path / 'eng.testb'}:2: not valid UTF-8: byte 0xfc at column 2" in stderr
    assert not os.path.exists(out / "model.keras")  # no training step ran
