"""The official SQuAD v1.1/v2.0 scores on hand-computed cases."""

import pytest

from keras_bert.metrics import squad


def _dataset(*questions):
    """questions: (qas_id, [gold texts])."""
    qas = [{"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
           for qid, golds in questions]
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def test_normalize_answer():
    assert squad.normalize_answer("The  Broncos!") == "broncos"
    assert squad.normalize_answer("  a\tcat,\nan apple; the end.") == "cat apple end"
    assert squad.normalize_answer("Theater anthem") == "theater anthem"  # articles only as whole words
    assert squad.normalize_answer("A-Team") == "ateam"  # punctuation is removed, not replaced by a space
    assert squad.normalize_answer("the") == ""


def test_exact_and_f1():
    assert squad.exact_match_score("the Denver Broncos.", "Denver  broncos") == 1.0
    assert squad.exact_match_score("Denver", "Denver Broncos") == 0.0
    # pred "denver broncos team" vs gold "broncos": precision 1/3, recall 1 -> 0.5
    assert squad.f1_score("Denver Broncos team", "the Broncos") == pytest.approx(0.5)
    # Tokens are counted with multiplicity: 2 common of 4 predicted and 3 gold.
    assert squad.f1_score("x x x z", "x x y") == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))
    assert squad.f1_score("", "") == 0.0  # v1.1: no common token
    assert squad.f1_score("", "the", no_answer_aware=True) == 1.0  # v2.0: both empty after normalization
    assert squad.f1_score("Denver", "", no_answer_aware=True) == 0.0


def test_evaluate_v1_max_over_golds_and_missing():
    dataset = _dataset(("q1", ["Denver Broncos", "the Broncos"]), ("q2", ["1895"]), ("q3", ["x"]))
    result = squad.evaluate_v1(dataset, {"q1": "Broncos", "q2": "in 1895"})
    # q1: EM 1 (vs "the Broncos"); q2: EM 0, F1 2*(1/2)*1/(1.5) = 2/3; q3 missing: 0.
    assert result == pytest.approx({"exact_match": 100 / 3, "f1": 100 * (1 + 2 / 3) / 3})


def test_evaluate_v2_no_answer_and_breakdown():
    dataset = _dataset(("h1", ["Denver"]), ("h2", ["1895"]), ("n1", []), ("n2", ["  the "]))  # n2: gold "" after norm
    predictions = {"h1": "Denver", "h2": "", "n1": "", "n2": "something"}
    result = squad.evaluate_v2(dataset, predictions)
    assert result == pytest.approx({
        "exact": 50.0, "f1": 50.0, "total": 4,
        "HasAns_exact": 50.0, "HasAns_f1": 50.0, "HasAns_total": 2,
        "NoAns_exact": 50.0, "NoAns_f1": 50.0, "NoAns_total": 2,
    })


def test_evaluate_v2_threshold_and_best_threshold():
    dataset = _dataset(("h1", ["Denver Broncos"]), ("h2", ["1895"]), ("n1", []), ("n2", []))
    predictions = {"h1": "Broncos", "h2": "1895", "n1": "team", "n2": ""}
    na_probs = {"h1": 0.1, "h2": 0.6, "n1": 0.3, "n2": 0.9}
    # Raw exact: h1 0, h2 1, n1 0, n2 1. Raw F1: h1 2/3.
    result = squad.evaluate_v2(dataset, predictions, na_probs=na_probs, na_prob_threshold=0.5)
    # Above 0.5 -> abstain: h2 (has answer) becomes wrong, n2 stays right.
    assert result["exact"] == pytest.approx(25.0)
    assert result["f1"] == pytest.approx(100 * (2 / 3 + 0 + 0 + 1) / 4)
    # Best threshold, walking h1 (0.1), n1 (0.3), h2 (0.6), n2 (0.9) from 2 (the no-answer count):
    # exact: +0 -> 2, -1 -> 1, +1 -> 2, +0 -> 2: never above 2, so 50% at threshold 0.0.
    assert (result["best_exact"], result["best_exact_thresh"]) == pytest.approx((50.0, 0.0))
    # f1: +2/3 -> 2.667 (best, 0.1), -1 -> 1.667, +1 -> 2.667 (not above), 0: 66.67% at 0.1.
    assert (result["best_f1"], result["best_f1_thresh"]) == pytest.approx((100 * (2 + 2 / 3) / 4, 0.1))
    with pytest.raises(ValueError, match="na_probs has no value for 1 questions"):
        squad.evaluate_v2(dataset, predictions, na_probs={"h1": 0.1, "h2": 0.6, "n1": 0.3})
