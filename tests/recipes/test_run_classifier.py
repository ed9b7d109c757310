"""run_classifier end to end on tiny GLUE-format (MRPC) and custom CSV files written here."""

import csv
import json
import logging
import os

import keras
import numpy as np
import pytest

from keras_bert.data import features
from keras_bert.tasks.classification.glue import read_glue_examples
from keras_bert.tasks.classification.metrics import compute_metrics
from keras_bert.text import BertPreprocessor, BertTokenizer

PAIRS = [
    ("The company said profits rose sharply in the third quarter.",
     "Profits rose sharply in the third quarter, the company said."),
    ("He arrived in Paris on Monday.", "The weather in Paris was cold."),
    ("Shares fell five percent after the report.", "After the report, shares dropped five percent."),
    ("The court rejected the appeal.", "The appeal was heard by a new judge."),
    ("She won the race easily.", "She easily won the race."),
    ("Officials closed the road for repairs.", "The new road opened last year."),
]


def _write_mrpc(directory):
    os.makedirs(directory)
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for split, rows in (("train", PAIRS * 2), ("dev", PAIRS)):
        with open(os.path.join(directory, f"{split}.tsv"), "w", encoding="utf-8") as f:
            f.write(header)
            for i, (a, b) in enumerate(rows):
                f.write(f"{1 - i % 2}\t{i}\t{i + 100}\t{a}\t{b}\n")
    with open(os.path.join(directory, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("index\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
        for i, (a, b) in enumerate(PAIRS[:4]):
            f.write(f"{i + 10}\t{i}\t{i + 100}\t{b}\t{a}\n")


@pytest.mark.slow
# Also with LoRA, accumulation and remat: the saved model (LoRA merged) then reproduces the LoRA model's
# metrics.
@pytest.mark.parametrize("adaptation", [(), ("--lora_rank=2", "--gradient_accumulation_steps=3", "--remat")])
def test_mrpc_train_eval_predict(tmp_path, tiny_model, run_in_process, caplog, adaptation):
    data_dir, out = str(tmp_path / "MRPC"), str(tmp_path / "out")
    _write_mrpc(data_dir)
    flags = tiny_model([a + " " + b for a, b in PAIRS], max_seq_length=48)
    caplog.set_level(logging.INFO, logger="keras_bert")
    status, stderr = run_in_process("run_classifier", "--task_name=MRPC", f"--data_dir={data_dir}",
                                    "--do_predict", f"--output_dir={out}", "--num_train_epochs=1",
                                    "--train_batch_size=4", "--eval_batch_size=4", "--pad_to_multiple_of=16",
                                    *flags, *adaptation)
    assert status is None, stderr  # main returned: the run succeeded
    if adaptation:
        assert "LoRA rank 2: " in caplog.text

    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    assert set(results) == {"accuracy", "f1", "eval_loss", "num_examples"} and results["num_examples"] == 6
    with open(os.path.join(out, "MRPC.tsv")) as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["index", "prediction"]
    assert [r[0] for r in rows[1:]] == ["10", "11", "12", "13"] and {r[1] for r in rows[1:]} <= {"0", "1"}

    # The saved model reproduces the reported metrics and loss (computed here by hand from its logits).
    model = keras.saving.load_model(os.path.join(out, "model.keras"), compile=False)
    tokenizer = BertTokenizer(flags[0].split("=", 1)[1])
    dev = read_glue_examples("mrpc", data_dir, "dev")
    logits = model.predict(features.classification_dataset(dev, BertPreprocessor(tokenizer, 48), ["0", "1"],
                                                           batch_size=4, with_labels=False), verbose=0)
    labels = np.array([int(e.label) for e in dev])
    expected = compute_metrics("mrpc", np.argmax(logits, -1), labels)
    assert results["accuracy"] == pytest.approx(expected["accuracy"])
    assert results["f1"] == pytest.approx(expected["f1"])
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    assert results["eval_loss"] == pytest.approx(-log_probs[np.arange(6), labels].mean(), rel=1e-4)
    # The model.keras is self-contained: its preprocessor and labels give the same logits from raw pairs.
    assert model.labels == ["0", "1"] and model.preprocessor.seq_length == 48
    raw = model.predict(([e.text_a for e in dev], [e.text_b for e in dev]), batch_size=4, verbose=0)
    np.testing.assert_allclose(raw, logits, atol=1e-5)


def _write_csv(path, rows, header=("text", "label")):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def test_custom_csv_unknown_label_names_file_and_line(tmp_path, tiny_model, run_in_process):
    train = _write_csv(tmp_path / "train.csv", [("good day", "pos"), ("bad day", "neg")])
    dev = _write_csv(tmp_path / "dev.csv", [("good", "pos"), ("so so", "meh")])
    status, stderr = run_in_process("run_classifier", f"--train_file={train}", f"--eval_file={dev}",
                                    f"--output_dir={tmp_path / 'out'}", *tiny_model(["good bad day so"]))
    assert status == 1
    assert f"{dev}:3: unknown label 'meh'" in stderr
    assert not os.path.exists(tmp_path / "out" / "model.keras")  # it failed before training


def _write_nli(directory, files):
    """GLUE-format NLI files under `directory`: {file name: labelled?}, rows of PAIRS."""
    os.makedirs(directory)
    labels = ("contradiction", "entailment", "neutral")
    for name, labelled in files.items():
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write("index\tsentence1\tsentence2" + ("\tgold_label\n" if labelled else "\n"))
            for i, (a, b) in enumerate(PAIRS):
                f.write(f"{i}\t{a}\t{b}" + (f"\t{labels[i % 3]}\n" if labelled else "\n"))


def test_mnli_predicts_ax_from_ax_data_dir(tmp_path, tiny_model, run_in_process):
    """--ax_data_dir: the MNLI model also predicts AX's diagnostic.tsv (AX.tsv, MNLI's labels), beside
    MNLI-m.tsv / MNLI-mm.tsv; each dev split scored under its name. --task_name=AX alone is refused."""
    mnli, ax, out = str(tmp_path / "MNLI"), str(tmp_path / "AX"), str(tmp_path / "out")
    _write_nli(mnli, {"train.tsv": True, "dev_matched.tsv": True, "dev_mismatched.tsv": True,
                      "test_matched.tsv": False, "test_mismatched.tsv": False})
    _write_nli(ax, {"diagnostic.tsv": False})
    flags = tiny_model([a + " " + b for a, b in PAIRS], max_seq_length=48)
    status, stderr = run_in_process("run_classifier", "--task_name=AX", f"--data_dir={ax}",
                                    f"--output_dir={tmp_path / 'ax_alone'}", *flags)
    assert status == 1 and "the GLUE task AX has no training data" in stderr.splitlines()[-1], stderr
    status, stderr = run_in_process("run_classifier", "--task_name=MNLI", f"--data_dir={mnli}",
                                    f"--ax_data_dir={ax}", "--do_predict", f"--output_dir={out}",
                                    "--num_train_epochs=1", "--train_batch_size=4", *flags)
    assert status is None, stderr
    with open(os.path.join(out, "eval_results.json")) as f:
        assert {"dev_matched/accuracy", "dev_mismatched/accuracy"} <= set(json.load(f))
    for name in ("MNLI-m.tsv", "MNLI-mm.tsv", "AX.tsv"):
        with open(os.path.join(out, name)) as f:
            rows = list(csv.reader(f, delimiter="\t"))
        assert rows[0] == ["index", "prediction"] and len(rows) == len(PAIRS) + 1, name
        assert {r[1] for r in rows[1:]} <= {"contradiction", "entailment", "neutral"}, name
