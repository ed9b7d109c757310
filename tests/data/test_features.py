"""Featurizers: the same tokenizer/packer as the text package, answer windows, first-piece NER labels."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import features
from keras_bert.data.classification import ClassificationExample
from keras_bert.data.conll import ConllSentence
from keras_bert.tasks.multiple_choice.swag import SwagExample
from keras_bert.tasks.squad import windows
from keras_bert.tasks.squad.reader import SquadExample, split_context
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import write_vocab

TEXTS = ["The quick brown fox jumped over the lazy dog.", "Unaffable foxes, quickly!",
         "Dogs sleep all day long."]


@pytest.fixture
def tokenizer(tmp_path):
    return BertTokenizer(write_vocab(tmp_path / "vocab.txt",
                                     ["the quick brown fox over lazy dog sleep day"])[0])


def test_classification_dataset_is_the_preprocessor_in_example_order(tokenizer):
    preprocessor = BertPreprocessor(tokenizer, 16)
    examples = [ClassificationExample(f"x-{i}", a, b, label)
                for i, (a, b, label) in enumerate(zip(TEXTS, TEXTS[::-1], ["b", "a", "b"], strict=True))]
    batches = list(features.classification_dataset(examples, preprocessor, ["a", "b"], batch_size=2))
    assert [len(labels) for _, labels in batches] == [2, 1]
    np.testing.assert_array_equal(np.concatenate([labels for _, labels in batches]), [1, 0, 1])
    expected = preprocessor((tf.constant(TEXTS), tf.constant(TEXTS[::-1])))
    for name in expected:
        np.testing.assert_array_equal(np.concatenate([inputs[name] for inputs, _ in batches]), expected[name])
    # Segment b is present: type ids 1 after the first [SEP].
    assert np.asarray(expected["input_type_ids"]).max() == 1


def test_a_reader_dataset_and_fit_on_raw_text_are_one_path(tokenizer):
    """classification_dataset (the recipes) and a model's text_dataset (fit on raw text) give the same
    batches in the same shuffled order, with the same label ids and the same unknown-label line."""
    from keras_bert import BertClassifier, BertConfig, BertEncoder

    preprocessor = BertPreprocessor(tokenizer, 16)
    labels = ["b", "a", "b", "a", "a"]
    texts = [*TEXTS, "lazy day", "quick dog"]
    examples = [ClassificationExample(f"x-{i}", a, b, label)
                for i, (a, b, label) in enumerate(zip(texts, texts[::-1], labels, strict=True))]
    assert sorted(features.classification_texts(examples)) == sorted(features.TEXT_KEYS)
    model = BertClassifier(BertEncoder(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=8,
                                                  num_hidden_layers=1, num_attention_heads=2,
                                                  intermediate_size=16, max_position_embeddings=16)),
                           labels=["a", "b"], preprocessor=preprocessor)
    ours = features.classification_dataset(examples, preprocessor, ["a", "b"], batch_size=2, shuffle=True,
                                           seed=4, pad_to_multiple_of=16)
    fit = model.text_dataset((texts, texts[::-1]), labels, batch_size=2, shuffle=True, seed=4)
    for _ in range(2):  # reshuffled alike each epoch
        for (inputs, ids), (fit_inputs, fit_ids) in zip(ours, fit, strict=True):
            np.testing.assert_array_equal(ids, fit_ids)
            for name in inputs:
                np.testing.assert_array_equal(inputs[name], fit_inputs[name])
    with pytest.raises(ValueError, match=r"label 'c' \(example 1\) is not one of the model's labels"):
        model.label_ids(["a", "c"])


def test_classification_dataset_errors_name_the_example(tokenizer):
    preprocessor = BertPreprocessor(tokenizer, 16)
    with pytest.raises(ValueError,
                       match=r"label 'c' \(example x-1\) is not one of the task's labels \['a', 'b'\]"):
        features.classification_dataset([ClassificationExample("x-0", "a", label="a"),
                                         ClassificationExample("x-1", "b", label="c")], preprocessor,
                                        ["a", "b"])
    with pytest.raises(ValueError, match="x-0 has no text_b"):
        features.classification_dataset([ClassificationExample("x-0", "a", label="a"),
                                         ClassificationExample("x-1", "b", "c", label="a")], preprocessor,
                                        ["a"])


def test_regression_labels_are_float_columns(tokenizer):
    examples = [ClassificationExample("s-0", "a", "b", 2.5), ClassificationExample("s-1", "c", "d", 0.25)]
    (_, labels), = features.classification_dataset(examples, BertPreprocessor(tokenizer, 8),
                                                   is_regression=True)
    np.testing.assert_allclose(labels, [[2.5], [0.25]])


def test_multiple_choice_rows_are_the_pairs(tokenizer):
    preprocessor = BertPreprocessor(tokenizer, 12)
    example = SwagExample("v/0", "The dog sleeps.", "Then it",
                          ("jumps.", "runs over.", "eats.", "sleeps all day."), 3)
    (inputs, labels), = features.multiple_choice_dataset([example, example], preprocessor, batch_size=4)
    assert inputs["input_word_ids"].shape == (2, 4, 12)
    np.testing.assert_array_equal(labels, [3, 3])
    a, b = zip(*example.choice_pairs(), strict=True)
    expected = preprocessor((tf.constant(a), tf.constant(b)))["input_word_ids"]
    np.testing.assert_array_equal(inputs["input_word_ids"][1], expected)


def test_lookup_gives_the_tokenizer_pieces(tokenizer):
    lookup = features.WordPieceLookup(tokenizer, batch_size=2)
    words = ["Unaffable", "fox", "dogs", "fox", ""]
    pieces = lookup(words)
    assert pieces[1] == ["fox"] and pieces[4] == []
    assert pieces[0] == [tokenizer.id_to_token(i) for i in tokenizer(tf.constant(["Unaffable"])).to_list()[0]]
    assert "".join(p.removeprefix("##") for p in pieces[0]) == "unaffable"


def _squad_example(context, question, answer):
    doc_tokens, char_to_word = split_context(context)
    start = context.index(answer)
    return SquadExample("q1", question, context, doc_tokens, char_to_word, [answer], answer, start,
                        char_to_word[start], char_to_word[start + len(answer) - 1])


def test_squad_windows_cover_a_long_context_and_point_at_the_answer(tokenizer):
    context = " ".join(["the lazy dog sleeps all day."] * 12) + " The quick brown fox jumped over the dog."
    example = _squad_example(context, "Who jumped?", "quick brown fox")
    lookup = features.WordPieceLookup(tokenizer)
    found = windows.squad_features([example], lookup, max_seq_length=32, doc_stride=10, max_query_length=8,
                                    is_training=True)
    assert len(found) > 3  # the context is longer than one window
    with_answer = [f for f in found if f.start_position > 0]
    assert with_answer, "the last windows contain the answer"
    for feature in with_answer:
        assert feature.tokens[feature.start_position : feature.end_position + 1] == ["quick", "brown", "fox"]
    assert all(f.start_position == f.end_position == 0 for f in found if f not in with_answer)
    inputs, targets = windows.squad_arrays(found, lookup, 32)
    row = found.index(with_answer[0])
    assert inputs["input_word_ids"][row, targets["start_logits"][row]] == tokenizer.token_to_id("quick")
    assert inputs["input_mask"][row].sum() == len(found[row].tokens)
    assert inputs["input_type_ids"][row].sum() == found[row].segment_ids.count(1)


def test_ner_labels_on_first_pieces_and_truncation(tokenizer):
    sentence = ConllSentence("s-0", ("Unaffable", "fox", "sleeps"), ("B-PER", "O", "O"), 1)
    lookup = features.WordPieceLookup(tokenizer)
    tags = ["O", "B-PER"]
    inputs, labels, weights, counts = features.ner_arrays([sentence], lookup, tags, max_seq_length=16)
    first = len(lookup(["Unaffable"])[0])
    assert counts == [[first, 1, len(lookup(["sleeps"])[0])]]
    np.testing.assert_array_equal(np.flatnonzero(weights[0]), [1, 1 + first, 2 + first])
    assert labels[0, 1] == 1 and labels[0, 1 + first] == 0
    # A sequence too short for the last words: only the first word keeps its label, [SEP] still closes it.
    inputs, _, weights, counts = features.ner_arrays([sentence], lookup, tags, max_seq_length=first + 2)
    assert weights[0].sum() == 1 and inputs["input_word_ids"][0, -1] == tokenizer.sep_id
    with pytest.raises(ValueError, match=r"s-0 \(line 1\): unknown tag 'B-PER'"):
        features.ner_arrays([sentence], lookup, ["O"], 16)
