"""conlleval chunk rules and scores on hand-computed cases, and against a transcription of its counting
loop."""

import random

import pytest

from keras_bert.tasks.ner import metrics as conll
from keras_bert.tasks.ner.conll import iob1_to_iob2


def test_chunk_rules_iob2_and_iob1():
    assert conll.extract_chunks(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 1), ("LOC", 3, 3)]
    # IOB1: I- after O opens a chunk; B- separates adjacent chunks of one type.
    iob1 = ["I-PER", "I-PER", "B-PER", "O", "I-LOC"]
    assert conll.extract_chunks(iob1) == [("PER", 0, 1), ("PER", 2, 2), ("LOC", 4, 4)]
    assert iob1_to_iob2(iob1) == ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    assert conll.extract_chunks(iob1_to_iob2(iob1)) == conll.extract_chunks(iob1)


def test_chunk_rule_quirks():
    assert conll.extract_chunks(["B-PER", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 1)]  # type change
    assert conll.extract_chunks(["I-PER", "I-LOC", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 2)]
    assert conll.extract_chunks(["O", "I-PER", "I-PER"]) == [("PER", 1, 2)]
    assert conll.extract_chunks(["I-PER", "B-PER"]) == [("PER", 0, 0), ("PER", 1, 1)]
    assert conll.extract_chunks(["B-MISC-X", "I-MISC-X"]) == [("MISC-X", 0, 1)]  # types may hold "-"
    # Plain conlleval knows no S-, and no end at E- followed by B- of the same type.
    assert conll.extract_chunks(["S-PER", "S-PER"]) == [("PER", 0, 1)]
    assert conll.extract_chunks(["B-PER", "E-PER", "B-PER", "E-PER"]) == [("PER", 0, 3)]
    assert conll.extract_chunks(["S-PER", "S-PER"], iobes=True) == [("PER", 0, 0), ("PER", 1, 1)]
    assert conll.extract_chunks(["B-PER", "E-PER", "B-PER", "E-PER"], iobes=True) == [("PER", 0, 1),
                                                                                      ("PER", 2, 3)]
    assert conll.extract_chunks(["B-LOC", "E-LOC", "S-PER", "O", "S-PER", "I-PER"], iobes=True) == [
        ("LOC", 0, 1), ("PER", 2, 2), ("PER", 4, 4), ("PER", 5, 5)]


def test_scores_hand_computed():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "O"]]
    result = conll.conlleval(gold, pred)
    # gold chunks: PER, LOC, ORG(0-2); predicted: PER, ORG(3), ORG(0-1); only PER matches.
    assert (result["true_chunks"], result["predicted_chunks"], result["correct_chunks"]) == (3, 3, 1)
    assert result["precision"] == pytest.approx(1 / 3) and result["recall"] == pytest.approx(1 / 3)
    assert result["f1"] == pytest.approx(1 / 3)
    assert result["accuracy"] == pytest.approx(5 / 7) and result["tokens"] == 7
    assert result["per_type"]["PER"]["f1"] == 1.0
    assert result["per_type"]["LOC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "true_chunks": 1,
                                         "predicted_chunks": 0, "correct_chunks": 0}
    assert (result["per_type"]["ORG"]["predicted_chunks"] == 2
            and result["per_type"]["ORG"]["true_chunks"] == 1)
    assert sorted(result["per_type"]) == ["LOC", "ORG", "PER"]


def test_iob1_gold_scored_against_iob2_predictions():
    gold = [["I-PER", "I-PER", "B-PER", "O", "I-LOC"]]
    pred = [["B-PER", "I-PER", "B-PER", "O", "B-LOC"]]
    result = conll.conlleval(gold, pred)
    assert result["f1"] == 1.0 and result["accuracy"] == pytest.approx(3 / 5)  # tags 1-3 equal


def test_sentence_boundary_ends_chunks():
    # Across a sentence boundary "I-PER | I-PER" is two chunks; in one sentence it is one.
    assert conll.conlleval([["I-PER"], ["I-PER"]], [["B-PER"], ["B-PER"]])["f1"] == 1.0
    assert conll.conlleval([["I-PER", "I-PER"]], [["B-PER", "B-PER"]])["f1"] == 0.0


def test_no_chunks_and_bad_input():
    result = conll.conlleval([["O", "O"]], [["O", "O"]])
    assert (result["precision"], result["recall"], result["f1"], result["accuracy"]) == (0.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError, match="sentence 0: 2 gold tags but 1 predicted"):
        conll.conlleval([["O", "O"]], [["O"]])


def _conlleval_pl(lines):
    """conlleval.pl (2004-01-26) on `token gold guessed` lines, written from the script's rules: Perl's
    truthiness drops the type "0", "[" and "]" are one-token chunks, "." continues any chunk."""
    ends = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
    starts = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}

    def read(tag):
        prefix, dash, kind = tag.partition("-")
        return (prefix, kind if dash and kind != "0" else "")

    def ended(p, pt, t, tt):
        return (p, t) in ends or (p not in ("O", ".") and pt != tt) or p in ("[", "]")

    def started(p, pt, t, tt):
        return (p, t) in starts or (t not in ("O", ".") and pt != tt) or t in ("[", "]")

    found_gold, found_guessed, correct, per_type = 0, 0, 0, {}
    tokens = right_tags = 0
    in_correct, last = False, (("O", ""), ("O", ""))
    for line in lines:
        fields = line.split(" ") if line else ["-X-", "O", "O"]
        (gold, gold_type), (guessed, guessed_type) = read(fields[-2]), read(fields[-1])
        (lg, lgt), (lp, lpt) = last
        gold_end, guessed_end = ended(lg, lgt, gold, gold_type), ended(lp, lpt, guessed, guessed_type)
        if in_correct and gold_end and guessed_end and lpt == lgt:
            in_correct, correct = False, correct + 1
            per_type[lgt] = per_type.get(lgt, 0) + 1
        elif in_correct and (gold_end != guessed_end or guessed_type != gold_type):
            in_correct = False
        gold_start, guessed_start = started(lg, lgt, gold, gold_type), started(lp, lpt, guessed, guessed_type)
        if gold_start and guessed_start and guessed_type == gold_type:
            in_correct = True
        found_gold += gold_start
        found_guessed += guessed_start
        if fields[0] != "-X-":
            tokens += 1
            right_tags += (gold, gold_type) == (guessed, guessed_type)
        last = ((gold, gold_type), (guessed, guessed_type))
    if in_correct:
        correct += 1
        per_type[last[0][1]] = per_type.get(last[0][1], 0) + 1
    return found_gold, found_guessed, correct, right_tags, tokens, per_type


def _lines(gold_sentences, guessed_sentences):
    """The file conlleval.pl reads: one `token gold guessed` line per token, a blank line after each
    sentence."""
    lines = []
    for gold_sentence, guessed_sentence in zip(gold_sentences, guessed_sentences, strict=True):
        lines += [f"w {g} {p}" for g, p in zip(gold_sentence, guessed_sentence, strict=True)] + [""]
    return lines


def test_tags_outside_iob_score_as_conlleval_pl():
    # ".-PER" continues the chunk B-PER opened, which is one chunk to the script.
    result = conll.conlleval([["B-PER", ".-PER"]], [["B-PER", ".-PER"]])
    assert (result["true_chunks"], result["correct_chunks"], result["f1"]) == (1, 1, 1.0)
    # Type "0" is no type to Perl: B-0 and B are the same tag.
    result = conll.conlleval([["B-0", "O"]], [["B", "O"]])
    assert (result["accuracy"], result["correct_chunks"], list(result["per_type"])) == (1.0, 1, [""])
    assert conll.conlleval([["[", "]", "O"]], [["[", "O", "O"]])["true_chunks"] == 2


def test_matches_conlleval_pl_on_random_tags():
    rng = random.Random(0)
    tags = ["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "E-PER", "S-LOC",
            ".", ".-PER", "[", "]-LOC", "B-0", "I-0", "B", "I", "I-", "B-MISC-X", "X-PER"]
    for _ in range(2000):
        lengths = [rng.randint(0, 6) for _ in range(rng.randint(1, 4))]
        gold = [[rng.choice(tags) for _ in range(n)] for n in lengths]
        # Predictions mostly copy gold, so that many chunks match.
        pred = [[g if rng.random() < 0.7 else rng.choice(tags) for g in sentence] for sentence in gold]
        result = conll.conlleval(gold, pred)
        found_gold, found_guessed, correct, right_tags, tokens, per_type = _conlleval_pl(_lines(gold, pred))
        assert (result["true_chunks"], result["predicted_chunks"], result["correct_chunks"],
                result["tokens"]) == (found_gold, found_guessed, correct, tokens), (gold, pred)
        assert result["accuracy"] == (right_tags / tokens if tokens else 0.0)
        # The script prints the types of found chunks only (a correct chunk may be credited to another).
        assert {t: v["correct_chunks"] for t, v in result["per_type"].items()} == {
            t: per_type.get(t, 0) for t in result["per_type"]}
