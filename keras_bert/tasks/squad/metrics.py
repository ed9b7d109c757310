"""The official SQuAD evaluation: v1.1 (EM/F1, max over gold answers) and v2.0 (no-answer aware).

Both take the `data` list of a SQuAD JSON file (`json.load(f)["data"]`) and a dict qas_id -> predicted text,
and return percentages (0-100), as the official scripts print them.

    with open("dev-v2.0.json") as f:
        dataset = json.load(f)["data"]
    evaluate_v2(dataset, predictions, na_probs=null_odds)   # {"exact": .., "f1": .., "HasAns_exact": .., ...}
"""

import collections
import logging
import re
import string

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text):
    """Lower-cases, removes ASCII punctuation and the articles a/an/the, and collapses whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction, ground_truth):
    """1.0 when the normalized texts are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def f1_score(prediction, ground_truth, no_answer_aware=False):
    """Token-level F1 of the normalized texts (bag of tokens, counted with multiplicity).

    With `no_answer_aware` (the v2.0 definition), when either side normalizes to no tokens the score is 1.0
    if both do and 0.0 otherwise; the v1.1 definition scores that case 0.0.
    """
    prediction_tokens = normalize_answer(prediction).split()
    truth_tokens = normalize_answer(ground_truth).split()
    if no_answer_aware and (not prediction_tokens or not truth_tokens):
        return float(prediction_tokens == truth_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(truth_tokens)
    return 2 * precision * recall / (precision + recall)


def _questions(dataset):
    for article in dataset:
        for paragraph in article["paragraphs"]:
            yield from paragraph["qas"]


def evaluate_v1(dataset, predictions):
    """SQuAD v1.1: {"exact_match", "f1"} in percent over all questions of `dataset`.

    A question without a prediction scores 0 (and is logged), as in the official script.
    """
    exact = f1 = total = 0.0
    for qa in _questions(dataset):
        total += 1
        if qa["id"] not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qa["id"])
            continue
        truths = [answer["text"] for answer in qa["answers"]]
        prediction = predictions[qa["id"]]
        exact += max(exact_match_score(prediction, truth) for truth in truths)
        f1 += max(f1_score(prediction, truth) for truth in truths)
    if total == 0:
        raise ValueError("the dataset has no questions")
    return {"exact_match": 100.0 * exact / total, "f1": 100.0 * f1 / total}


def raw_scores_v2(dataset, predictions):
    """Per-question v2.0 scores before any no-answer threshold.

    Returns `(exact, f1, has_answer)`: dicts qas_id -> score in [0, 1], and qas_id -> bool. As the official
    script, a question has an answer when its gold list is non-empty; gold answers that normalize to "" are
    dropped from scoring, and a question left with none is right only for "" (gold `["The"]` is HasAns).
    A question without a prediction scores 0 (the official script skips it).
    """
    exact, f1, has_answer = {}, {}, {}
    for qa in _questions(dataset):
        qid = qa["id"]
        has_answer[qid] = bool(qa["answers"])
        truths = [answer["text"] for answer in qa["answers"] if normalize_answer(answer["text"])] or [""]
        if qid not in predictions:
            logging.warning("Missing prediction for %s; it scores 0.", qid)
            exact[qid] = f1[qid] = 0.0
            continue
        prediction = predictions[qid]
        exact[qid] = max(exact_match_score(prediction, truth) for truth in truths)
        f1[qid] = max(f1_score(prediction, truth, no_answer_aware=True) for truth in truths)
    return exact, f1, has_answer


def _apply_no_answer_threshold(scores, na_probs, has_answer, threshold):
    # A question whose no-answer probability is above the threshold counts as answered with "".
    return {
        qid: (float(not has_answer[qid]) if na_probs[qid] > threshold else score)
        for qid, score in scores.items()
    }


def best_threshold(predictions, scores, na_probs, has_answer):
    """The no-answer threshold maximizing the total score (the official v2.0 `find_best_thresh`).

    Questions are taken in increasing `na_probs`; a threshold just at a question's probability answers it and
    every question before it, and abstains on the rest. Returns `(best score in percent, threshold)`.
    """
    current = best = sum(1 for qid in scores if not has_answer[qid])
    threshold = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        elif predictions.get(qid):
            current -= 1
        if current > best:
            best, threshold = current, na_probs[qid]
    return 100.0 * best / len(scores), threshold


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_threshold=1.0):
    """SQuAD v2.0 evaluation, as the official script.

    Args:
      dataset: the `data` list of a SQuAD v2.0 JSON file.
      predictions: qas_id -> predicted text ("" means no answer).
      na_probs: optional qas_id -> no-answer score (e.g. `null_odds.json`); higher means "no answer".
      na_prob_threshold: predict "" where `na_probs` exceeds this (default 1.0).

    Returns:
      dict: "exact", "f1", "total"; "HasAns_exact/_f1/_total" and "NoAns_exact/_f1/_total" when such
      questions exist; with `na_probs`, "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh".
    """
    exact_raw, f1_raw, has_answer = raw_scores_v2(dataset, predictions)
    if not exact_raw:
        raise ValueError("the dataset has no questions")
    probs = na_probs if na_probs is not None else dict.fromkeys(exact_raw, 0.0)
    missing = [qid for qid in exact_raw if qid not in probs]
    if missing:
        raise ValueError(f"na_probs has no value for {len(missing)} questions, e.g. {missing[0]!r}")
    exact = _apply_no_answer_threshold(exact_raw, probs, has_answer, na_prob_threshold)
    f1 = _apply_no_answer_threshold(f1_raw, probs, has_answer, na_prob_threshold)

    def summary(qids, prefix=""):
        return {
            f"{prefix}exact": 100.0 * sum(exact[q] for q in qids) / len(qids),
            f"{prefix}f1": 100.0 * sum(f1[q] for q in qids) / len(qids),
            f"{prefix}total": len(qids),
        }

    result = summary(list(exact))
    for prefix, wanted in (("HasAns_", True), ("NoAns_", False)):
        qids = [qid for qid, has in has_answer.items() if has == wanted]
        if qids:
            result.update(summary(qids, prefix))
    if na_probs is not None:
        result["best_exact"], result["best_exact_thresh"] = best_threshold(predictions, exact_raw, probs,
                                                                           has_answer)
        result["best_f1"], result["best_f1_thresh"] = best_threshold(predictions, f1_raw, probs, has_answer)
    return result
