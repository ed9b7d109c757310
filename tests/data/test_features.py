"""Classification examples -> model inputs: the same tokenizer/packer as the text package and `fit`."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import features
from keras_bert.tasks.classification.reader import ClassificationExample
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
