"""Every prediction file of the fine-tuning tasks is what `serve` answers for the same inputs; the serve
options those files need (SQuAD n-best lists, NER per-word tags) are served by an export as by eager serve."""

import csv
import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertEncoder, BertMultipleChoice, BertTokenClassifier
from keras_bert.export import ExportError, export_saved_model
from keras_bert.tasks.classification import task as classification
from keras_bert.tasks.multiple_choice.swag import SwagExample
from keras_bert.tasks.multiple_choice.task import MultipleChoiceTask
from keras_bert.tasks.ner.conll import read_conll_file
from keras_bert.tasks.ner.task import NerTask
from keras_bert.tasks.squad import task as squad_task
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.data.test_squad_answers import CONTEXTS, PASSAGES, QUESTIONS, SEQ_LENGTH, span_labeler
from tests.export.test_answers import SENTENCES, TAGS, WORDS


@pytest.fixture(scope="module")
def preprocessor(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(WORDS) + "\n")
    return BertPreprocessor(BertTokenizer(str(path), lower_case=True), 16)


@pytest.fixture
def tagger(preprocessor, tiny_config):
    model = BertTokenClassifier(BertEncoder(tiny_config), labels=TAGS, preprocessor=preprocessor)
    head = model.weights[-2]  # a large tag kernel: random tags vary from word to word
    head.assign(np.random.default_rng(0).normal(0, 3, head.shape).astype("float32"))
    return model


def _ner_task(stride=None):
    """A NerTask of the tags TAGS (as a fine-tuned model's labels.json gives them)."""
    task = NerTask(saved_tags=TAGS, stride=stride)
    task.prepare()
    return task


def _conll(path, sentences):
    path.write_text("\n\n".join("\n".join(f"{t} {TAGS[i % 5]}" for i, t in enumerate(s)) for s in sentences)
                    + "\n")
    return read_conll_file(str(path), tag_list=TAGS)


def test_classifier_dev_predictions_are_served(preprocessor, tiny_config, tmp_path):
    data = tmp_path / "dev.csv"
    data.write_text("text,label\nthe quick fox,pos\na lazy dog,neg\nhello world,pos\nwhat is paris,neg\n"
                    "the dog jumps over the fox,pos\n")
    task = classification.custom_task(str(data), eval_file=str(data))
    model = BertClassifier(BertEncoder(tiny_config), labels=task.label_list, preprocessor=preprocessor)
    examples = task.evals[0][1]
    logits, predictions = task.served(model, examples, batch_size=2)
    served = model.serve({"text": [e.text_a for e in examples]})
    np.testing.assert_array_equal(predictions, served["label_id"])
    np.testing.assert_allclose(logits, served["logits"], atol=1e-6)
    path = task.write_predictions("eval", examples, predictions, str(tmp_path))
    with open(path, encoding="utf-8") as f:
        assert [row[1] for row in csv.reader(f, delimiter="\t")][1:] == [s.decode() for s in served["label"]]
    results = task.eval_results(model, examples, logits, predictions)
    labels = np.array([task.label_list.index(e.label) for e in examples])
    log_probs = served["logits"] - np.log(np.exp(served["logits"]).sum(-1, keepdims=True))
    assert results["eval_loss"] == pytest.approx(-log_probs[np.arange(5), labels].mean(), rel=1e-5)
    assert results["accuracy"] == pytest.approx(np.mean(served["label_id"] == labels))


def test_multiple_choice_predictions_are_served(preprocessor, tiny_config, tmp_path):
    examples = [SwagExample(f"s{i}", "the quick fox", "jumps",
                            ["over the dog", "a world", "is paris", "lazy ."], i % 4) for i in range(3)]
    model = BertMultipleChoice(BertEncoder(tiny_config), 4, preprocessor=preprocessor)
    task = MultipleChoiceTask(eval_file="val.csv")
    answers = task.predict(model, examples, batch_size=2)
    (path,) = task.write_predictions("eval", examples, answers, str(tmp_path))
    assert path == str(tmp_path / "eval_predictions.csv")
    served = model.serve({"text": ["the quick fox"] * 3,
                          "text_b": [[f"jumps {e}" for e in examples[0].endings]] * 3})
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    assert [int(row[1]) for row in rows] == served["choice"].tolist()
    np.testing.assert_allclose([[float(p) for p in row[2:]] for row in rows], served["probabilities"],
                               atol=1e-6)
    results = task.results(model, examples, answers)
    assert results["accuracy"] == pytest.approx(np.mean(served["choice"] == [0, 1, 2]))


def test_ner_predictions_are_the_served_word_tags(tagger, preprocessor, tmp_path):
    sentences = _conll(tmp_path / "test.conll", SENTENCES)
    task = _ner_task(stride=5)
    predicted, loss = predictions = task.predict(tagger, sentences, batch_size=4, preprocessor=preprocessor)
    (path,) = task.write_predictions("predict", sentences, predictions, str(tmp_path))
    served = tagger.serve({"text": [" ".join(s.tokens) for s in sentences]}, stride=5, word_tags=True)
    assert path == str(tmp_path / "test_predictions.txt")
    with open(path, encoding="utf-8") as f:
        lines = [line.split(" ") for line in f.read().splitlines() if line]
    # Every token of these sentences is one served word.
    assert served["word_count"].tolist() == [len(s.tokens) for s in sentences]
    want = [tag.decode() for row, count in zip(served["word_tag"], served["word_count"], strict=True)
            for tag in row[:count]]
    assert [line[2] for line in lines] == [tag for tags in predicted for tag in tags] == want
    assert len(set(want)) >= 3 and loss > 0
    text = " ".join(sentences[0].tokens)
    spans = zip(served["word_start"][0], served["word_end"][0], strict=True)
    assert [text[s:e] for s, e in spans][: len(sentences[0].tokens)] == list(sentences[0].tokens)


def test_ner_words_are_whitespace_tokens(tagger):
    # A word is a whitespace token, the unit a CoNLL file labels and training tags (test_ner_words.py); an
    # entity is its words' span less the punctuation at its edges.
    text = "Zoë is the lazy dog, hello world."
    served = tagger.serve({"text": [text]}, word_tags=True)
    spans = zip(served["word_start"][0], served["word_end"][0], strict=True)
    assert [text[s:e] for s, e in spans] == ["Zoë", "is", "the", "lazy", "dog,", "hello", "world."]
    entities = tagger.serve({"text": [text]})
    assert entities["entity_count"][0] > 0
    starts, ends = set(served["word_start"][0].tolist()), set(served["word_end"][0].tolist())
    for i in range(entities["entity_count"][0]):  # from a word's start to a word's end less its "," or "."
        start, end = entities["entity_start"][0][i], entities["entity_end"][0][i]
        assert start in starts and (end in ends or (end + 1 in ends and text[end] in ",."))
        assert entities["entity_text"][0][i].decode() == text[start:end]


def test_ner_token_without_pieces_is_tagged_o(tagger, preprocessor, tmp_path):
    # "\u200b" (a format character) has no piece: "O", and no loss term (nor a training label).
    sentences = _conll(tmp_path / "test.conll", [["the", "\u200b", "fox"]])
    predicted, _ = _ner_task().predict(tagger, sentences, preprocessor=preprocessor)
    served = tagger.serve({"text": ["the \u200b fox"]}, word_tags=True)
    assert served["word_count"].tolist() == [2] and served["word_start"][0].tolist() == [0, 6]
    tags = [t.decode() for t in served["word_tag"][0]]
    assert predicted == [[tags[0], "O", tags[1]]]


def test_squad_prediction_files_are_served(tmp_path):
    model = span_labeler(PASSAGES + QUESTIONS, seed=2)
    paragraphs = [{"context": c,
                   "qas": [{"id": f"q{i}", "question": q, "answers": [], "is_impossible": True}]}
                  for i, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS, strict=True))]
    (tmp_path / "dev.json").write_text(json.dumps({"version": "v2.0",
                                                   "data": [{"title": "t", "paragraphs": paragraphs}]}))
    settings = squad_task.SquadSettings(max_seq_length=SEQ_LENGTH, version_2_with_negative=True, doc_stride=8,
                                        max_query_length=6, n_best_size=5, max_answer_length=6)
    task = squad_task.SquadTask(predict_file=str(tmp_path / "dev.json"), settings=settings)
    examples = task.read("eval")
    _, result = task.predict(model, examples, 3)
    served = model.serve({"question": QUESTIONS, "context": CONTEXTS}, answer_rules=settings.answer_rules(),
                         nbest=True)
    assert [result.predictions[f"q{i}"] for i in range(4)] == [a.decode() for a in served["answer"]]
    np.testing.assert_allclose([result.null_odds[f"q{i}"] for i in range(4)],
                               served["no_answer_score"] - served["score"], atol=1e-5)
    for row in range(4):
        spans = [t.decode() for t, valid in zip(served["nbest_text"][row], served["nbest_valid"][row],
                                                strict=True)
                 if valid]
        assert [e["text"] for e in result.nbest[f"q{row}"] if e["text"]][: len(spans)] == spans
        for text, start, end in zip(served["nbest_text"][row], served["nbest_start"][row],
                                    served["nbest_end"][row], strict=True):
            assert CONTEXTS[row][start:end] == text.decode()


def test_options_that_do_not_apply_are_refused(tagger, preprocessor, tiny_config):
    classifier = BertClassifier(BertEncoder(tiny_config), num_classes=2, preprocessor=preprocessor)
    with pytest.raises(ValueError, match=r"nbest=True applies to a span labeler .* BertClassifier"):
        classifier.serve({"text": ["a"]}, nbest=True)
    with pytest.raises(ValueError, match=r"word_tags=True applies to a token classifier .* BertClassifier"):
        classifier.serve({"text": ["a"]}, word_tags=True)
    with pytest.raises(ValueError, match=r"nbest=True applies .* BertTokenClassifier"):
        tagger.serve({"text": ["a"]}, nbest=True)
    with pytest.raises(ExportError, match="word_tags=True applies"):
        export_saved_model(classifier, "/nonexistent/never_written", word_tags=True)


@pytest.mark.slow
def test_export_serves_word_tags_and_nbest_as_eager_serve(tagger, tmp_path):
    span = span_labeler(PASSAGES + QUESTIONS, seed=2)
    rules = squad_task.SquadSettings(max_seq_length=SEQ_LENGTH, doc_stride=8, max_query_length=6,
                                     n_best_size=5, max_answer_length=6).answer_rules()
    texts = [" ".join(s) for s in SENTENCES] + ["", "naïve \u200b dog"]
    for model, inputs, options in ((tagger, {"text": texts}, {"stride": 5, "word_tags": True}),
                                   (span, {"question": QUESTIONS, "context": CONTEXTS},
                                    {"answer_rules": rules, "nbest": True})):
        eager = model.serve(inputs, **options)
        loaded = tf.saved_model.load(export_saved_model(model, tmp_path / type(model).__name__, **options))
        exported = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in inputs.items()})
        assert {"word_tag", "nbest_text"} & set(exported) and set(exported) == set(eager)
        for name, value in eager.items():
            if value.dtype.kind == "f":
                np.testing.assert_allclose(exported[name].numpy(), value, atol=1e-5, err_msg=name)
            else:
                np.testing.assert_array_equal(exported[name].numpy(), value, err_msg=name)
