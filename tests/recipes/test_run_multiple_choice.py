"""run_multiple_choice end to end on tiny SWAG CSV files written here."""

import csv
import json
import os

import numpy as np
import pytest

HEADER = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
          "ending0", "ending1", "ending2", "ending3", "label"]
QUESTIONS = [
    ("The man opens the door.", "He", ["walks inside.", "eats the moon.", "sings a door.", "is a cloud."], 0),
    ("A woman picks up a cup.", "She", ["flies away.", "drinks the tea.", "paints the sky.", "melts."], 1),
    ("The boy kicks the ball.", "The ball",
     ["reads a book.", "cooks dinner.", "rolls across the grass.", "sleeps."], 2),
    ("Someone starts the car.", "The car",
     ["laughs.", "swims.", "writes a letter.", "drives down the road."], 3),
]


def _write_swag(path, questions, labeled=True):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(HEADER if labeled else HEADER[:-1])
        for i, (sent1, sent2, endings, label) in enumerate(questions):
            row = [i, f"video{i}", i, f"{sent1} {sent2}", sent1, sent2, "gold", *endings]
            writer.writerow(row + [label] if labeled else row)
    return str(path)


@pytest.mark.slow
def test_swag_train_eval_predict(tmp_path, tiny_model, run_in_process):
    train = _write_swag(tmp_path / "train.csv", QUESTIONS * 3)
    val = _write_swag(tmp_path / "val.csv", QUESTIONS)
    test = _write_swag(tmp_path / "test.csv", QUESTIONS[:2], labeled=False)
    out = str(tmp_path / "out")
    texts = [" ".join([q[0], q[1], *q[2]]) for q in QUESTIONS]
    status, stderr = run_in_process(
        "run_multiple_choice", f"--train_file={train}", f"--eval_file={val}", f"--predict_file={test}",
        "--do_predict", f"--output_dir={out}", "--num_train_epochs=1", "--train_batch_size=4",
        "--pad_to_multiple_of=8", *tiny_model(texts, max_seq_length=24))
    assert status is None, stderr  # main returned: the run succeeded
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    with open(os.path.join(out, "eval_predictions.csv")) as f:
        rows = list(csv.DictReader(f))
    assert [r["swag_id"] for r in rows] == [f"video{i}/{i}" for i in range(4)]
    probabilities = np.array([[float(r[f"prob{i}"]) for i in range(4)] for r in rows])
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    gold = np.array([q[3] for q in QUESTIONS])
    predicted = np.array([int(r["label"]) for r in rows])
    np.testing.assert_array_equal(predicted, probabilities.argmax(-1))
    assert results["accuracy"] == pytest.approx(np.mean(predicted == gold))
    assert results["eval_loss"] == pytest.approx(-np.log(probabilities[np.arange(4), gold]).mean(), rel=1e-3)
    with open(os.path.join(out, "predictions.csv")) as f:
        assert len(list(csv.DictReader(f))) == 2
