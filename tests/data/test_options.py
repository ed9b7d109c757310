"""keras_bert.data.options: the datasets keras_bert builds and iterates run without tf.data's autotune
thread (whose sleep stalled the end of fit / predict calls); an explicit setting is kept."""

import numpy as np
import tensorflow as tf

from keras_bert.data import options
from keras_bert.data.features import classification_dataset
from keras_bert.data.options import steady
from keras_bert.tasks.classification.reader import ClassificationExample
from keras_bert.text import BertPreprocessor, BertTokenizer


def _with_autotune(dataset, enabled):
    explicit = tf.data.Options()
    explicit.autotune.enabled = enabled
    return dataset.with_options(explicit)


def test_steady_turns_autotune_off_and_keeps_an_explicit_choice():
    dataset = tf.data.Dataset.range(10).map(lambda x: x * 2, num_parallel_calls=tf.data.AUTOTUNE)
    assert dataset.options().autotune.enabled is None  # tf.data's default: on
    quiet = steady(dataset)
    assert quiet.options().autotune.enabled is False
    assert list(quiet.as_numpy_iterator()) == list(range(0, 20, 2))  # same elements, same order
    assert steady(_with_autotune(dataset, True)).options().autotune.enabled is True
    assert options.autotune_set(_with_autotune(dataset, False))
    not_a_dataset = np.zeros((2, 3))
    assert steady(not_a_dataset) is not_a_dataset


def test_pipelines_come_steady(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad"]) + "\n")
    preprocessor = BertPreprocessor(BertTokenizer(str(vocab)), seq_length=8)
    examples = [ClassificationExample(guid=str(i), text_a="good" if i % 2 else "bad", label=str(i % 2))
                for i in range(6)]
    dataset = classification_dataset(examples, preprocessor, label_list=["0", "1"], batch_size=2)
    assert dataset.options().autotune.enabled is False
