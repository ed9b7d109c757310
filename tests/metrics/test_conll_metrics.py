"""conlleval chunk rules and scores on hand-computed cases, and against a transcription of its counting loop."""

import random

import pytest

from keras_bert.data.conll import iob1_to_iob2
from keras_bert.metrics import conll


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
    assert conll.extract_chunks(["B-PER", "E-PER", "B-PER", "E-PER"], iobes=True) == [("PER", 0, 1), ("PER", 2, 3)]
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
    assert result["per_type"]["ORG"]["predicted_chunks"] == 2 and result["per_type"]["ORG"]["true_chunks"] == 1
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


def _conlleval_loop(gold_sentences, guessed_sentences):
    """The counting loop of conlleval.pl, transcribed: chunks are matched while reading, token by token."""
    end, start = conll._end_of_chunk, conll._start_of_chunk
    correct_chunks = found_correct = found_guessed = 0
    in_correct = False
    last_correct, last_correct_type, last_guessed, last_guessed_type = "O", "", "O", ""
    lines = []
    for gold_sentence, guessed_sentence in zip(gold_sentences, guessed_sentences, strict=True):
        lines += list(zip(gold_sentence, guessed_sentence, strict=True)) + [("O", "O")]  # boundary
    for gold_tag, guessed_tag in lines:
        correct, correct_type = conll.split_tag(gold_tag)
        guessed, guessed_type = conll.split_tag(guessed_tag)
        gold_end = end(last_correct, correct, last_correct_type, correct_type, False)
        guessed_end = end(last_guessed, guessed, last_guessed_type, guessed_type, False)
        if in_correct:
            if gold_end and guessed_end and last_guessed_type == last_correct_type:
                in_correct = False
                correct_chunks += 1
            elif gold_end != guessed_end or guessed_type != correct_type:
                in_correct = False
        gold_start = start(last_correct, correct, last_correct_type, correct_type, False)
        guessed_start = start(last_guessed, guessed, last_guessed_type, guessed_type, False)
        if gold_start and guessed_start and guessed_type == correct_type:
            in_correct = True
        found_correct += gold_start
        found_guessed += guessed_start
        last_correct, last_correct_type, last_guessed, last_guessed_type = correct, correct_type, guessed, guessed_type
    return found_correct, found_guessed, correct_chunks + in_correct


def test_matches_conlleval_counting_loop_on_random_tags():
    rng = random.Random(0)
    tags = ["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-ORG", "E-PER", "S-LOC"]
    for _ in range(300):
        lengths = [rng.randint(1, 8) for _ in range(rng.randint(1, 4))]
        gold = [[rng.choice(tags) for _ in range(n)] for n in lengths]
        # Predictions mostly copy gold, so that many chunks match.
        pred = [[g if rng.random() < 0.7 else rng.choice(tags) for g in sentence] for sentence in gold]
        result = conll.conlleval(gold, pred)
        assert (result["true_chunks"], result["predicted_chunks"], result["correct_chunks"]) == _conlleval_loop(
            gold, pred), (gold, pred)
