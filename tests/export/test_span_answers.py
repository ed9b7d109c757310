"""The span labeler's decoded answers, as TF Serving's C++ loader serves them (C API, fresh process), equal
run_squad's predictions on long non-ASCII contexts, for a v1.1 and a v2.0 head; bad input stays defined."""

import dataclasses
import json

import numpy as np
import pytest

from export import client
from keras_bert.export import ExportError, export_saved_model, servability
from keras_bert.tasks.squad import task as squad_task
from keras_bert.tasks.squad.answers import AnswerRules
from tests.data.test_squad_answers import CONTEXTS, PASSAGES, QUESTIONS, SEQ_LENGTH, span_labeler

RULES = {"doc_stride": 8, "max_query_length": 6, "n_best_size": 5, "max_answer_length": 6}


def _squad_file(path):
    paragraphs = [{"context": c,
                   "qas": [{"id": f"q{i}", "question": q, "answers": [], "is_impossible": True}]}
                  for i, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS, strict=True))]
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": paragraphs}]}),
                    encoding="utf-8")
    return str(path)


def _run(tmp_path, label, inputs):
    path = tmp_path / f"{label}.npz"
    servability.save_check_arrays(path, inputs, None)
    return {"signature": "serving_default", "arrays": path}


@pytest.mark.slow
def test_served_answers_equal_run_squad_predictions(tmp_path):
    dev = _squad_file(tmp_path / "dev.json")
    questions = np.array([q.encode() for q in QUESTIONS], dtype=object)
    contexts = np.array([c.encode() for c in CONTEXTS], dtype=object)
    bad = {"question": np.array([b"", b"who?", b"who \xff?"], dtype=object),
           "context": np.array([b"", ("Renée served crème brûlée. " * 3704).encode(),
                                b"Ren\xc3\xa9e \xff \xc3 ran"], dtype=object)}
    jobs, predictions = [], {}
    for version_2, seed in ((False, 1), (True, 2)):
        model = span_labeler(PASSAGES + QUESTIONS, seed=seed)
        settings = squad_task.SquadSettings(max_seq_length=SEQ_LENGTH, version_2_with_negative=version_2,
                                            **RULES)
        # What run_squad --do_predict writes to predictions.json for this model.
        examples = squad_task.SquadTask(predict_file=dev, settings=settings).read("eval")
        _, result = squad_task.SquadTask(settings=settings).predict(model, examples, batch_size=3)
        if version_2:  # a threshold between the null odds, so that some questions get no answer
            threshold = float(np.median(list(result.null_odds.values())))
            settings = dataclasses.replace(settings, null_score_diff_threshold=threshold)
            _, result = squad_task.SquadTask(settings=settings).predict(model, examples, batch_size=3)
        predictions[version_2] = result
        version_dir = export_saved_model(model, tmp_path / f"v2_{version_2}", model.preprocessor,
                                         answer_rules=settings.answer_rules())
        runs = [_run(tmp_path, f"answers-{version_2}", {"question": questions, "context": contexts}),
                _run(tmp_path, f"bad-{version_2}", bad)]
        jobs.append({"export_dir": version_dir, "runs": runs})
    # Requests the server must refuse, sent to the v1.1 export in the same loaded session (no second load).
    mismatched = {"question": questions, "context": contexts[:2]}
    rank_2 = {"question": questions[:, None], "context": contexts[:, None]}
    jobs[0]["refused"] = [_run(tmp_path, "mismatched", mismatched), _run(tmp_path, "rank-2", rank_2)]

    reports = servability.check_servable_subprocess(jobs)
    for version_2, report in zip((False, True), reports, strict=True):
        assert "error" not in report, report["error"]
        assert report["signatures"] == ["serve_examples", "serve_question_context", "serve_token_ids",
                                        "serving_default"]
        assert report["warmup_requests"] == 2
        assert report["ops"]["missing"] == {}
        served = report["runs"][0]["outputs"]
        result = predictions[version_2]
        assert served["answer"] == [result.predictions[f"q{i}"] for i in range(len(QUESTIONS))]
        for row, context in enumerate(CONTEXTS):
            assert context[served["answer_start"][row] : served["answer_end"][row]] == served["answer"][row]
        if version_2:
            null_odds = np.subtract(served["no_answer_score"], served["score"])
            np.testing.assert_allclose(null_odds, [result.null_odds[f"q{i}"] for i in range(4)], atol=1e-5)
            assert served["has_answer"] == [bool(a) for a in served["answer"]]
            assert not all(served["has_answer"])  # the threshold decided some
        else:
            assert all(served["answer"]) and "has_answer" not in served
        # Empty context: no answer; a 100k-character context and invalid UTF-8 (read as U+FFFD) are answered.
        bad_out = report["runs"][1]["outputs"]
        assert bad_out["answer"][0] == "" and bad_out["answer_start"][0] == bad_out["answer_end"][0] == 0
        long_context = bad["context"][1].decode()
        assert len(long_context) > 100_000 and np.isfinite(bad_out["score"][1])
        assert long_context[bad_out["answer_start"][1] : bad_out["answer_end"][1]] == bad_out["answer"][1]
    mismatched_error, rank_2_error = reports[0]["refused"]  # None where it was served
    assert ("serving inputs `question` and `context` must have the same batch size; got 4 and 2"
            in mismatched_error)
    assert "serving input `question` must be tf.string of shape [batch]; got shape [4 1]" in rank_2_error
    assert "Traceback" not in mismatched_error
    inputs = {"question": list(QUESTIONS), "context": list(CONTEXTS)}
    lines = client.example_lines(inputs, {"outputs": reports[1]["runs"][0]["outputs"]})
    assert lines[0] == f"question: {QUESTIONS[0]!r}" and "no-answer score" in lines[2]


def test_export_refuses_rules_without_room_and_non_span_labelers(tmp_path):
    model = span_labeler(PASSAGES)
    with pytest.raises(ExportError, match="max_query_length=40 leaves no context piece"):
        export_saved_model(model, tmp_path, model.preprocessor, answer_rules=AnswerRules(max_query_length=40))
    with pytest.raises(ExportError, match="needs a BertSpanLabeler, got a BertEncoder"):
        export_saved_model(model.encoder, tmp_path, model.preprocessor, signature="question_context")
