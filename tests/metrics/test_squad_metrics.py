"""The official SQuAD v1.1/v2.0 scores on hand-computed cases, and v2.0 against the official script's
logic."""

import collections
import random
import re
import string

import pytest

from keras_bert.tasks.squad import metrics as squad


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
    # h3: gold "" after normalization, yet HasAns (a non-empty gold list), right only for "".
    dataset = _dataset(("h1", ["Denver"]), ("h2", ["1895"]), ("n1", []), ("h3", ["  the "]))
    predictions = {"h1": "Denver", "h2": "", "n1": "", "h3": "something"}
    result = squad.evaluate_v2(dataset, predictions)
    assert result == pytest.approx({
        "exact": 50.0, "f1": 50.0, "total": 4,
        "HasAns_exact": 100 / 3, "HasAns_f1": 100 / 3, "HasAns_total": 3,
        "NoAns_exact": 100.0, "NoAns_f1": 100.0, "NoAns_total": 1,
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


def test_v2_gold_that_normalizes_to_nothing_still_has_an_answer():
    # evaluate-v2.0.py: HasAns means a non-empty gold list; gold "The" is then right only for "".
    dataset = _dataset(("q1", ["The"]), ("q2", ["Denver"]))
    result = squad.evaluate_v2(dataset, {"q1": "", "q2": "x"}, na_probs={"q1": 0.9, "q2": 0.1})
    assert (result["exact"], result["HasAns_total"], "NoAns_total" in result) == (50.0, 2, False)
    assert (result["best_exact"], result["best_exact_thresh"]) == (50.0, 0.9)


def _official_v2(dataset, predictions, na_probs, threshold):
    """evaluate-v2.0.py's logic, restated: HasAns by gold list, raw max over normalized golds, no-answer
    threshold, then the best-threshold walk in increasing no-answer probability."""
    def tokens(text):
        text = "".join(c for c in text.lower() if c not in string.punctuation)
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    def f1(gold, guess):
        common = sum((collections.Counter(gold) & collections.Counter(guess)).values())
        if not gold or not guess:
            return float(gold == guess)
        return 0.0 if common == 0 else 2 * common / (len(gold) + len(guess))

    has, raw = {}, {"exact": {}, "f1": {}}
    for qa in (q for a in dataset for p in a["paragraphs"] for q in p["qas"]):
        has[qa["id"]] = bool(qa["answers"])
        golds = [tokens(a["text"]) for a in qa["answers"] if tokens(a["text"])] or [[]]
        guess = tokens(predictions[qa["id"]])
        raw["exact"][qa["id"]] = max(float(g == guess) for g in golds)
        raw["f1"][qa["id"]] = max(f1(g, guess) for g in golds)
    out = {}
    for name, scores in raw.items():
        final = {q: (float(not has[q]) if na_probs[q] > threshold else s) for q, s in scores.items()}
        out[name] = 100 * sum(final.values()) / len(final)
        for prefix, wanted in (("HasAns_", True), ("NoAns_", False)):
            qids = [q for q in final if has[q] == wanted]
            if qids:
                out[prefix + name] = 100 * sum(final[q] for q in qids) / len(qids)
        best = current = sum(not h for h in has.values())
        best_threshold = 0.0
        for q in sorted(na_probs, key=na_probs.get):
            current += scores[q] if has[q] else -float(bool(predictions[q]))
            if current > best:
                best, best_threshold = current, na_probs[q]
        out[f"best_{name}"], out[f"best_{name}_thresh"] = 100 * best / len(scores), best_threshold
    return out


def test_v2_matches_official_semantics_on_random_cases():
    rng = random.Random(0)
    words = ["The", "a", "an", "Denver", "broncos", "1895", ".", "!", "", " ", "the end", "A-Team", "x y"]
    for _ in range(1000):
        questions, predictions, na_probs = [], {}, {}
        for i in range(rng.randint(1, 5)):
            golds = [" ".join(rng.sample(words, rng.randint(1, 2))) for _ in range(rng.choice([0, 0, 1, 2]))]
            questions.append((f"q{i}", golds))
            predictions[f"q{i}"] = " ".join(rng.sample(words, rng.randint(0, 2)))
            na_probs[f"q{i}"] = rng.choice([0.1, 0.3, 0.5, 0.7, rng.random()])
        threshold = rng.choice([0.0, 0.5, 1.0])
        result = squad.evaluate_v2(_dataset(*questions), predictions, na_probs, threshold)
        expected = _official_v2(_dataset(*questions), predictions, na_probs, threshold)
        assert {k: v for k, v in result.items() if not k.endswith("total")} == pytest.approx(expected), (
            questions)
