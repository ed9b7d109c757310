"""SQuAD answers in TF ops: the windows equal the original run_squad's, the decoding equals the original rule
on the spans it picks, answers are exact character spans, and bad input stays defined."""

import re
import string

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertConfig, BertEncoder, BertSpanLabeler
from keras_bert.tasks.squad import reader as squad
from keras_bert.tasks.squad.answers import AnswerRules, answer_questions, question_context_windows
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.data import squad_reference

SEQ_LENGTH = 32
PASSAGES = [
    "The bridge was built in 1895 by Steve Smith's company (near the old mill).",
    "Café Müller opened in Zürich; its owner, Renée, served crème brûlée and naïve tarts. "
    "東京 is far.",
    "Paris is the capital of France.\u202fIt has many museums, and the river Seine\u00a0flows.",
]
# Contexts reach 5x SEQ_LENGTH pieces; questions include an empty one and one cut to max_query_length.
CONTEXTS = [" ".join([PASSAGES[i % 3]] * (5 + 2 * i)) for i in range(4)]
QUESTIONS = ["When was the bridge built?", "Who served crème brûlée in Zürich, and when did Müller open?",
             "", "What is the capital?"]
RULES = AnswerRules(doc_stride=8, max_query_length=6, n_best_size=5, max_answer_length=6)


def vocabulary(texts):
    """Reserved tokens, punctuation, letters and digits (alone and as "##"), and the words of `texts`."""
    words = sorted({w for text in texts for w in re.findall(r"\w+", text.lower())})
    chars = string.ascii_lowercase + string.digits
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *string.punctuation, *chars,
             *(f"##{c}" for c in chars)]
    return vocab + [w for w in words if w not in vocab]


def span_labeler(texts, seq_length=SEQ_LENGTH, seed=1):
    """A random 1-layer, 16-wide BertSpanLabeler whose preprocessor knows the words of `texts`."""
    vocab = vocabulary(texts)
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary=vocab, lower_case=True), seq_length)
    keras.utils.set_random_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    return BertSpanLabeler(BertEncoder(config), preprocessor=preprocessor)


@pytest.fixture(scope="module")
def model():
    return span_labeler(PASSAGES + QUESTIONS)


def _examples(questions, contexts):
    return [squad.SquadExample(str(i), q, c, *squad.split_context(c))
            for i, (q, c) in enumerate(zip(questions, contexts, strict=True))]


def test_windows_are_the_original_run_squads(model):
    examples = _examples(QUESTIONS, CONTEXTS)
    tokenizer = model.preprocessor.tokenizer
    windows = squad_reference.windows_of(examples, tokenizer, SEQ_LENGTH, RULES.doc_stride,
                                         RULES.max_query_length, False)
    want, _ = squad_reference.feature_arrays(windows, tokenizer, SEQ_LENGTH)
    got, found = question_context_windows(model.preprocessor, tf.constant(QUESTIONS), tf.constant(CONTEXTS),
                                          RULES)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name].numpy(), value, err_msg=name)
    assert found["num_windows"].numpy().tolist() == [
        sum(w.example_index == i for w in windows) for i in range(len(examples))]
    assert min(found["doc_pieces"].numpy()[1:]) >= 5 * SEQ_LENGTH


@pytest.mark.parametrize("version_2", [False, True])
def test_same_spans_as_the_original_decoding(model, version_2):
    # ASCII lower-case contexts: get_final_text maps a span back exactly, so the texts must agree.
    contexts = [" ".join(["the bridge was built in 1895 by steve smith's company near the old mill."]
                         * (2 + i)) for i in range(3)]
    questions = ["when was the bridge built?", "who built it?", ""]
    rules = AnswerRules(doc_stride=8, max_query_length=6, n_best_size=5, max_answer_length=6,
                        version_2_with_negative=version_2)
    examples = _examples(questions, contexts)
    tokenizer = model.preprocessor.tokenizer
    windows = squad_reference.windows_of(examples, tokenizer, SEQ_LENGTH, rules.doc_stride,
                                         rules.max_query_length, False)
    inputs, _ = squad_reference.feature_arrays(windows, tokenizer, SEQ_LENGTH)
    logits = model(inputs, training=False)
    old = squad_reference.postprocess_predictions(examples, windows, logits["start_logits"].numpy(),
                                                  logits["end_logits"].numpy(), rules.n_best_size,
                                                  rules.max_answer_length, True, version_2)
    found = answer_questions(model, model.preprocessor, tf.constant(questions), tf.constant(contexts), rules)
    answers = [a.decode() for a in found["answer"].numpy()]
    # Where no span fits the rules the original answers the placeholder "empty"; the decoding answers "".
    assert answers == [old.predictions[str(i)].replace("empty", "") for i in range(3)]
    assert any(answers)
    for i in range(3):  # the n-best texts and logits too
        want = [(e["text"], e["start_logit"], e["end_logit"]) for e in old.nbest[str(i)]
                if e["text"] not in ("", "empty")]
        got = [(t.decode(), s, e) for t, s, e, v in zip(found["nbest_text"][i].numpy(),
                                                         found["nbest_start_logit"][i].numpy(),
                                                         found["nbest_end_logit"][i].numpy(),
                                                         found["nbest_valid"][i].numpy(), strict=True) if v]
        # The n-best lists distinct spans; the original distinct texts (a phrase repeated in the context is
        # one).
        seen = [t for t, _, _ in got]
        distinct = [g for g in got if seen.index(g[0]) == got.index(g)]
        count = min(len(distinct), len(want))
        assert (count >= 1) == bool(answers[i])
        assert [t for t, _, _ in distinct][:count] == [t for t, _, _ in want][:count]
        np.testing.assert_allclose([s for _, s, _ in distinct][:count], [s for _, s, _ in want][:count],
                                   atol=1e-5)
    if version_2:
        null_odds = (found["no_answer_score"] - found["score"]).numpy()
        np.testing.assert_allclose(null_odds, [old.null_odds[str(i)] for i in range(3)], atol=1e-5)


def test_answers_are_character_spans_of_non_ascii_contexts(model):
    found = answer_questions(model, model.preprocessor, tf.constant(QUESTIONS), tf.constant(CONTEXTS), RULES)
    for row, context in enumerate(CONTEXTS):
        start, end = found["answer_start"][row].numpy(), found["answer_end"][row].numpy()
        assert context[start:end] == found["answer"][row].numpy().decode() != ""
        for text, start, end, valid in zip(found["nbest_text"][row].numpy(),
                                           found["nbest_start"][row].numpy(),
                                           found["nbest_end"][row].numpy(),
                                           found["nbest_valid"][row].numpy(), strict=True):
            assert not valid or context[start:end] == text.decode()
    # Character offsets, not bytes: the non-ASCII passage has 2-3 byte characters before most answers.
    assert found["answer_end"][1].numpy() <= len(CONTEXTS[1]) < len(CONTEXTS[1].encode())


def test_bad_input_stays_defined(model):
    rules = AnswerRules(doc_stride=16, max_query_length=6, n_best_size=3, max_answer_length=4,
                        version_2_with_negative=True)
    long_context = ("Renée served crème brûlée in Zürich. " * 2800)[:100_000]
    questions = tf.constant([b"", b"who served?", b"who \xff\xfe served?", b"who served?"])
    contexts = tf.constant([b"Paris is the capital.", b"", b"Ren\xc3\xa9e \xff served \xc3 tarts",
                            long_context.encode()])
    found = {k: v.numpy()
             for k, v in answer_questions(model, model.preprocessor, questions, contexts, rules).items()}
    assert found["answer"][1] == b"" and found["answer_start"][1] == found["answer_end"][1] == 0
    assert found["has_answer"][1] == False  # noqa: E712  (numpy bool)
    # Invalid UTF-8 bytes count as one U+FFFD each, as Python's decode(errors="replace") reads them.
    replaced = b"Ren\xc3\xa9e \xff served \xc3 tarts".decode("utf-8", "replace")
    for row, context in ((0, "Paris is the capital."), (2, replaced), (3, long_context)):
        start, end = found["answer_start"][row], found["answer_end"][row]
        assert context[start:end] == found["nbest_text"][row][0].decode()
    assert found["num_windows"][3] > 1000 and np.all(np.isfinite(found["score"]))
    empty = answer_questions(model, model.preprocessor, tf.constant([], tf.string),
                             tf.constant([], tf.string), rules)
    assert empty["answer"].shape == empty["has_answer"].shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="`question` and `context` must have the same batch"):
        answer_questions(model, model.preprocessor, tf.constant(["a", "b"]), tf.constant(["a"]), rules)
    with pytest.raises(ValueError, match="max_query_length=29 leaves no context piece"):
        AnswerRules(max_query_length=29).check(SEQ_LENGTH)
