"""Each task trains on what it serves: the model inputs its `Task.dataset` (what the driver trains on) yields
for a training example equal those `serve()` runs the model on for the same raw text, on texts longer than
the sequence (windows for NER and SQuAD, truncation for classification and multiple choice); the training
targets sit where serving reads them."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertEncoder, BertMultipleChoice, BertTokenClassifier
from keras_bert.models import serving
from keras_bert.tasks.classification.reader import ClassificationExample
from keras_bert.tasks.classification.task import ClassificationTask
from keras_bert.tasks.multiple_choice.swag import SwagExample
from keras_bert.tasks.multiple_choice.task import MultipleChoiceTask
from keras_bert.tasks.ner.conll import ConllSentence
from keras_bert.tasks.ner.task import NerTask
from keras_bert.tasks.squad.reader import SquadExample, split_context
from keras_bert.tasks.squad.task import SquadSettings, SquadTask
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.data import squad_reference
from tests.data.test_squad_answers import CONTEXTS, PASSAGES, QUESTIONS, RULES, SEQ_LENGTH, span_labeler
from tests.export.test_answers import SENTENCES, TAGS, WORDS

LONG = "the quick brown fox jumps over the lazy dog . " * 3  # 30 pieces, twice the sequence of 16


@pytest.fixture(scope="module")
def preprocessor(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(WORDS) + "\n")
    return BertPreprocessor(BertTokenizer(str(path), lower_case=True), 16)


def served_inputs(monkeypatch, model, inputs, **options):
    """The encoder inputs `model.serve(inputs, fixed_length=True, **options)` runs the model on (numpy
    dicts, the model's runs concatenated): recorded inside the served graph, at the model's call."""
    seen = []
    call = model.served_call

    def recording(features):
        names = sorted(features)

        def keep(*values):
            seen.append({name: value.numpy() for name, value in zip(names, values, strict=True)})
            return 0

        kept = tf.py_function(keep, [features[name] for name in names], tf.int32)
        with tf.control_dependencies([kept]):
            return call({name: tf.identity(value) for name, value in features.items()})

    monkeypatch.setattr(model, "served_call", recording)
    monkeypatch.setitem(serving._TRACED, model, {})  # traced afresh, with the recording call
    model.serve(inputs, fixed_length=True, **options)
    return {name: np.concatenate([run[name] for run in seen]) for name in seen[0]}


def trained_batch(task, examples, preprocessor, rows):
    """The one batch (numpy) of `task.dataset(examples, preprocessor)` in order, full length, checking that
    it counts `rows` rows (examples, or windows)."""
    data = task.dataset(examples, preprocessor, batch_size=256, training=False)
    assert data.num_examples == rows
    (batch,) = list(data.batches)
    return tf.nest.map_structure(lambda value: value.numpy(), batch)


def assert_same_inputs(trained, served):
    assert sorted(trained) == sorted(served)
    for name, value in trained.items():
        np.testing.assert_array_equal(np.asarray(value), served[name], err_msg=name)


def test_ner_trains_on_the_windows_it_serves(monkeypatch, preprocessor, tiny_config):
    sentences = [ConllSentence(f"s-{i}", tuple(tokens), tuple(TAGS[j % 5] for j in range(len(tokens))), i)
                 for i, tokens in enumerate([*SENTENCES, ["the", "\u200b", "fox"]])]
    tagger = BertTokenClassifier(BertEncoder(tiny_config), labels=TAGS, preprocessor=preprocessor)
    task = NerTask(saved_tags=TAGS, stride=5)
    task.prepare()
    # 7 sentences, one window each but the long one: 54 pieces in 1 + ceil((54 - 14) / 5) = 9 windows of 14.
    inputs, labels, weights = trained_batch(task, sentences, preprocessor, rows=15)
    served = served_inputs(monkeypatch, tagger, {"text": [" ".join(s.tokens) for s in sentences]}, stride=5)
    assert_same_inputs(inputs, served)
    assert len(labels) == 15 and inputs["input_mask"].sum() == 11 + 3 + 10 + 1 + 8 + 2 + 9 * 14 + 2 * 15

    # Each token with a piece is labelled once, with its tag, at its first piece, in the window serving reads
    # it from (windows in order: the pieces each window serves follow those of the windows before it).
    tokenizer = preprocessor.tokenizer
    tag_ids = {tag: i for i, tag in enumerate(TAGS)}
    first_pieces, tags = [], []
    for sentence in sentences:
        for token, tag in zip(sentence.tokens, sentence.tags, strict=True):
            pieces = tokenizer(tf.constant([token])).to_list()[0]
            if pieces:  # "\u200b" has none: no label, as serving tags it "O" without a logit
                first_pieces.append(pieces[0])
                tags.append(tag_ids[tag])
    assert set(np.unique(weights)) == {0.0, 1.0}
    labelled = weights == 1.0
    np.testing.assert_array_equal(labels[labelled], tags)
    np.testing.assert_array_equal(inputs["input_word_ids"][labelled], first_pieces)
    assert not labels[~labelled].any()


def _squad_example(index, question, context, answer, occurrence):
    """A training example whose answer is the `occurrence`-th `answer` in `context` (None: no answer)."""
    doc_tokens, char_to_word = split_context(context)
    if answer is None:
        return SquadExample(str(index), question, context, doc_tokens, char_to_word, is_impossible=True)
    start = -1
    for _ in range(occurrence + 1):
        start = context.index(answer, start + 1)
    return SquadExample(str(index), question, context, doc_tokens, char_to_word, [answer], answer, start,
                        char_to_word[start], char_to_word[start + len(answer) - 1])


def test_squad_trains_on_the_windows_it_serves(monkeypatch):
    model = span_labeler(PASSAGES + QUESTIONS)
    # Answers inside a word's pieces ("Smith's" -> "smith"), after "(" glued to a word, with accents, CJK,
    # across the narrow no-break space, and none.
    answers = [("Steve Smith", 2), ("crème brûlée", 4), ("France.\u202fIt", 6), (None, 0)]
    examples = [_squad_example(i, q, c, *a) for i, (q, c, a) in enumerate(zip(QUESTIONS, CONTEXTS, answers,
                                                                               strict=True))]
    examples.append(_squad_example(4, "Where is the mill?", CONTEXTS[0], "near the old mill", 3))
    settings = SquadSettings(max_seq_length=SEQ_LENGTH, doc_stride=RULES.doc_stride,
                             max_query_length=RULES.max_query_length)
    inputs, targets = trained_batch(SquadTask(settings=settings), examples, model.preprocessor, rows=108)
    served = served_inputs(monkeypatch, model, {"question": [e.question_text for e in examples],
                                                "context": [e.context_text for e in examples]},
                           answer_rules=RULES)
    assert_same_inputs(inputs, served)
    # The original run_squad's targets (word span, tightened to the tokenized answer) on the same windows.
    tokenizer = model.preprocessor.tokenizer
    reference = squad_reference.windows_of(examples, tokenizer, SEQ_LENGTH, RULES.doc_stride,
                                           RULES.max_query_length, True)
    want_inputs, want = squad_reference.feature_arrays(reference, tokenizer, SEQ_LENGTH)
    assert_same_inputs(want_inputs, inputs)
    for name in ("start_logits", "end_logits"):
        np.testing.assert_array_equal(targets[name], want[name], err_msg=name)
    # 108 windows; those holding the whole answer point at its pieces, the others (no answer too) at [CLS].
    start, end = targets["start_logits"], targets["end_logits"]
    assert len(start) == 108
    ids = inputs["input_word_ids"]
    found = [" ".join(tokenizer.id_to_token(int(i)) for i in ids[w, start[w] : end[w] + 1]).replace(" ##", "")
             for w in np.flatnonzero(start)]
    assert found == (["steve smith"] * 3 + ["creme brulee"] * 2 + ["france . it"] * 4
                     + ["near the old mill"] * 2)
    assert not end[start == 0].any()


def test_classifier_trains_on_what_it_serves(monkeypatch, preprocessor, tiny_config):
    texts = [LONG, "hello world", LONG[::-1], "what is paris ?"]
    examples = [ClassificationExample(f"x-{i}", a, b, "pos" if i % 2 else "neg")
                for i, (a, b) in enumerate(zip(texts, texts[::-1], strict=True))]
    model = BertClassifier(BertEncoder(tiny_config), labels=["neg", "pos"], preprocessor=preprocessor)
    task = ClassificationTask("custom", ["neg", "pos"], is_regression=False)
    inputs, labels = trained_batch(task, examples, preprocessor, rows=4)
    served = served_inputs(monkeypatch, model, {"text": texts, "text_b": texts[::-1]}, signature="text_pair")
    assert_same_inputs(inputs, served)
    np.testing.assert_array_equal(labels, [0, 1, 0, 1])
    # Every pair is cut to 16 pieces as served, closed by [SEP].
    assert inputs["input_mask"].sum(axis=1).tolist() == [16] * 4
    assert (inputs["input_word_ids"][:, -1] == preprocessor.tokenizer.sep_id).all()


def test_multiple_choice_trains_on_what_it_serves(monkeypatch, preprocessor, tiny_config):
    endings = ("jumps over the dog", "is a world", LONG, "sleeps .")
    examples = [SwagExample(f"v/{i}", context, "then it", endings, i % 4)
                for i, context in enumerate([LONG, "the lazy dog", "hello world"])]
    model = BertMultipleChoice(BertEncoder(tiny_config), 4, preprocessor=preprocessor)
    inputs, labels = trained_batch(MultipleChoiceTask(), examples, preprocessor, rows=3)
    served = served_inputs(monkeypatch, model, {"text": [e.context_sentence for e in examples],
                                                "text_b": [[f"then it {e}" for e in endings]] * 3},
                           signature="text_pair")
    # Served as [b * choices, seq] rows (the model flattens the choices), trained as [b, choices, seq].
    assert_same_inputs(*({name: np.reshape(value, [-1, 16]) for name, value in found.items()}
                         for found in (inputs, served)))
    np.testing.assert_array_equal(labels, [0, 1, 2])
    assert inputs["input_word_ids"].shape == (3, 4, 16)
    # "the lazy dog" and "then it ..." ("then", "it": [UNK]); the long ending cut to 16.
    assert inputs["input_mask"].sum(axis=2)[1].tolist() == [13, 11, 16, 10]
