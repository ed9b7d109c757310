"""run_squad end to end on a tiny SQuAD v2.0 file written here: windows over a long context, a no-answer
question, and a training answer that does not match its offset (skipped and counted)."""

import json
import os

import pytest

from keras_bert.tasks.squad.metrics import evaluate_v2

FILLER = "The river flows past the old mill and the quiet town. "
CONTEXTS = [
    FILLER * 6 + "The bridge was built in 1895 by Steve Smith's company.",
    "Paris is the capital of France. It has many museums.",
    "The cat sat on the mat while the dog slept.",
]


def _qa(qid, question, context=None, answer=None, start=None):
    if answer is None:
        return {"id": qid, "question": question, "answers": [], "is_impossible": True}
    start = context.index(answer) if start is None else start
    return {"id": qid, "question": question, "answers": [{"text": answer, "answer_start": start}],
            "is_impossible": False}


def _write(path, questions_per_context):
    data = [{"title": f"t{i}", "paragraphs": [{"context": c, "qas": qas}]}
            for i, (c, qas) in enumerate(zip(CONTEXTS, questions_per_context, strict=True))]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": "v2.0", "data": data}, f)
    return str(path)


@pytest.mark.slow
def test_squad_v2_train_predict_eval(tmp_path, tiny_model, run_in_process):
    a, b, c = CONTEXTS
    train = _write(tmp_path / "train.json", [
        [_qa("t1", "When was the bridge built?", a, "1895"),
         _qa("t2", "Who built the bridge?", a, "Steve Smith")],
        [_qa("t3", "What is the capital of France?", b, "Paris"),
         _qa("t4", "What is misplaced?", b, "museums", start=0)],  # text not at its offset: skipped
        [_qa("t5", "Who slept?", c, "the dog"), _qa("t6", "What is the capital of Spain?")],
    ])
    dev = _write(tmp_path / "dev.json", [
        [_qa("d1", "When was the bridge built?", a, "1895")],
        [_qa("d2", "What is the capital of France?", b, "Paris")],
        [_qa("d3", "Where is the moon?")],
    ])
    out = str(tmp_path / "out")
    status, stderr = run_in_process(
        "run_squad", f"--train_file={train}", f"--predict_file={dev}", "--do_predict",
        "--version_2_with_negative", "--doc_stride=16", "--max_query_length=12", f"--output_dir={out}",
        "--num_train_epochs=1", "--train_batch_size=4", "--pad_to_multiple_of=8",
        *tiny_model(CONTEXTS + ["when was built who what is capital france spain slept moon where"],
                    max_seq_length=40))
    assert status is None, stderr  # main returned: the run succeeded
    assert "5 questions (1 skipped: answer not at its offset)" in run_in_process.stdout
    with open(os.path.join(out, "predictions.json")) as f:
        predictions = json.load(f)
    with open(os.path.join(out, "null_odds.json")) as f:
        null_odds = json.load(f)
    with open(os.path.join(out, "eval_results.json")) as f:
        results = json.load(f)
    assert set(predictions) == set(null_odds) == {"d1", "d2", "d3"}
    # Answers are spans of the original text (or "" for no answer).
    for qid, context in (("d1", a), ("d2", b), ("d3", c)):
        assert predictions[qid] == "" or predictions[qid] in context
    assert results["num_windows"] > 3  # the long context needs several windows
    assert results["HasAns_total"] == 2 and results["NoAns_total"] == 1
    with open(dev) as f:
        expected = evaluate_v2(json.load(f)["data"], predictions, na_probs=null_odds)
    assert results["exact"] == expected["exact"] and results["f1"] == expected["f1"]
    assert os.path.isfile(os.path.join(out, "model.keras"))
    # Predicting from the saved span labeler gives the same answers (what an export of it serves).
    again = str(tmp_path / "again")
    model_flags = tiny_model(CONTEXTS + ["when was built who what is capital france spain slept moon where"],
                             max_seq_length=40)
    status, stderr = run_in_process(
        "run_squad", f"--init_checkpoint={out}/model.keras", "--do_train=false", "--do_predict",
        f"--predict_file={dev}", "--version_2_with_negative", "--doc_stride=16", "--max_query_length=12",
        f"--output_dir={again}", *[f for f in model_flags if not f.startswith("--bert_config_file")])
    assert status is None, stderr  # main returned
    with open(os.path.join(again, "predictions.json")) as f:
        assert json.load(f) == predictions


def test_bad_predict_file_fails_before_training(tmp_path, tiny_model, run_in_process):
    a = CONTEXTS[0]
    train = _write(tmp_path / "train.json", [[_qa("t1", "When was the bridge built?", a, "1895")], [], []])
    dev = _write(tmp_path / "dev.json", [[_qa("d1", "When?", a, "1895")], [_qa("d1", "Again?")], []])
    out = tmp_path / "out"
    status, stderr = run_in_process("run_squad", f"--train_file={train}", f"--predict_file={dev}",
                                    f"--output_dir={out}", "--version_2_with_negative", *tiny_model(CONTEXTS))
    assert status == 1
    assert f"{dev}: data[1].paragraphs[0].qas[0]: duplicate question id 'd1'" in stderr
    assert not os.path.exists(out / "model.keras")  # no training step ran
