"""Raw text -> model inputs in tf.data, with THE `BertTokenizer` / `BertPacker` of the text package (no
second tokenizer): strings go into tf.data and a `BertPreprocessor` runs inside `ds.map`, as it will in the
exported serving graph. Sentence (pair) classification's examples are here; every other task builds its
training inputs in its folder with the function its `serve` runs (`keras_bert/tasks/<task>/`).

Raw text is {"text": ..., "text_b": ...} everywhere (`TEXT_KEYS`: fit, the recipes, `serve`, the export);
`text_dataset` is the one raw text -> model inputs path of `fit` / `evaluate` / `predict` and the recipes,
with the model's `text_inputs` (`text_inputs`, what `serve` runs per batch). Every model input is a dict of
int32 `input_word_ids`, `input_mask`, `input_type_ids`.

    preprocessor = BertPreprocessor(tokenizer, seq_length=128)
    train = classification_dataset(examples, preprocessor, label_list, batch_size=32, shuffle=True)
    model.fit(train, ...)
"""

import functools

import numpy as np
import tensorflow as tf

from keras_bert.data import padding
from keras_bert.data.options import steady

TEXT_KEYS = ("text", "text_b")  # raw text's keys in every path

# ------------------------------------------------------------------------------------------------------------
# Sentence (pair) classification
# ------------------------------------------------------------------------------------------------------------


def label_ids(values, label_list, names=None, owner="the task's"):
    """Label names `values` (str or bytes) as int32 ids, their indexes in `label_list`: the one mapping of
    `classification_labels` and a model's `label_ids` (its `fit(y=names)`). Raises ValueError naming the
    first unknown label and its example (`names[i]`, default its index i) and `owner` labels."""
    index = {str(name): i for i, name in enumerate(label_list or ())}
    ids = []
    for position, value in enumerate(values):
        value = value.decode("utf-8") if isinstance(value, bytes) else str(value)
        if value not in index:
            raise ValueError(f"label {value!r} (example {position if names is None else names[position]}) is "
                             f"not one of {owner} labels {list(label_list or ())}")
        ids.append(index[value])
    return np.asarray(ids, np.int32)


def classification_labels(examples, label_list=None, is_regression=False):
    """Label array of `examples`: int32 class ids (`label_ids`: index in `label_list`) or float32 values
    (regression); None when no example has a label. Raises ValueError naming the example on an unknown or
    missing label."""
    labels = [example.label for example in examples]
    if all(label is None for label in labels):
        return None
    missing = next((example.guid for example in examples if example.label is None), None)
    if missing is not None:
        raise ValueError(f"example {missing} has no label while others have one")
    if is_regression:
        return np.asarray([float(label) for label in labels], np.float32)
    return label_ids(labels, label_list, [example.guid for example in examples])


def classification_texts(examples):
    """{"text": [n] (, "text_b": [n])} of `ClassificationExample`s (all single sentences, or all pairs): what
    `text_dataset`, `model.serve` and the export take. Raises ValueError naming an example without the
    text_b the others have."""
    if not examples:
        raise ValueError("no examples to build a dataset from")
    pairs = [example.text_b is not None for example in examples]
    if any(pairs) and not all(pairs):
        missing = next(example.guid for example in examples if example.text_b is None)
        raise ValueError(f"example {missing} has no text_b while other examples are pairs")
    texts = {"text": [example.text_a for example in examples]}
    if pairs[0]:
        texts["text_b"] = [example.text_b for example in examples]
    return texts


def classification_dataset(examples, preprocessor, label_list=None, is_regression=False, batch_size=32,
                           shuffle=False, seed=0, with_labels=True, pad_to_multiple_of=0):
    """A tf.data.Dataset of batches for `BertClassifier`: `text_dataset` of `classification_texts(examples)`.

    Args:
      examples: `ClassificationExample`s (all single sentences, or all pairs).
      preprocessor: a `BertPreprocessor` (tokenizer + packer), applied per batch inside `ds.map`.
      label_list: class names in id order (classification); ignored for regression.
      batch_size: examples per batch (the last batch may be smaller).
      shuffle: shuffle all examples (reshuffled each epoch) with `seed`.
      with_labels: yield `(inputs, labels)` (labels int32 [b] or float32 [b, 1]); False: inputs only.
      pad_to_multiple_of: 0, or cut each batch's padding to a multiple of this (`keras_bert.data.padding`);
        shuffled batches then also group examples of similar length.

    Returns:
      dataset of dicts of int32 [b, seq_length] (and labels), in example order unless shuffled.
    """
    texts = classification_texts(examples)
    labels = classification_labels(examples, label_list, is_regression) if with_labels else None
    if with_labels and labels is None:
        raise ValueError("with_labels=True but the examples have no labels")
    if labels is not None and is_regression:
        labels = labels[:, None]
    return text_dataset(texts, functools.partial(text_inputs, preprocessor),
                        () if labels is None else (labels,), batch_size, shuffle, seed, pad_to_multiple_of)


# ------------------------------------------------------------------------------------------------------------
# Raw text -> model inputs: the one path of fit / evaluate / predict, the recipes (and, per batch, `serve`)
# ------------------------------------------------------------------------------------------------------------


def text_inputs(preprocessor, texts):
    """{"text": tf.string [b] (, "text_b": [b])} -> the encoder input dict packed by `preprocessor`, the
    function a model's `text_inputs` (and so its `serve` and export) runs on each batch."""
    if "text_b" in texts:
        return preprocessor((texts["text"], texts["text_b"]))
    return preprocessor(texts["text"])


def text_dataset(texts, featurize, targets=(), batch_size=32, shuffle=False, seed=None, pad_to_multiple_of=0,
                 group=False):
    """The batches of raw `texts` ({"text": [n] (, "text_b": [n] or [n, choices])} of strings) as model
    inputs: `(featurize(texts of a batch), *targets of the batch)`, or the inputs alone without `targets`
    (arrays of n rows: labels, sample weights), in order unless `shuffle` (all of them, reshuffled each
    epoch, with `seed`). `featurize` runs in a parallel `ds.map` (a model's `text_inputs`). With
    `pad_to_multiple_of`, each batch's padding is cut to a multiple of it and shuffled batches (with
    `group`, unshuffled ones too: an evaluation, whose metrics do not depend on the order) group texts of
    similar length (`padding.group_by_length`: as many batches, each full)."""
    num_examples = len(texts["text"])
    dataset = tf.data.Dataset.from_tensor_slices((texts, *targets) if targets else texts)
    if shuffle:
        dataset = dataset.shuffle(max(num_examples, 1), seed=seed, reshuffle_each_iteration=True)

    def inputs(texts, *rest):
        return (featurize(texts), *rest) if rest else featurize(texts)

    if pad_to_multiple_of and (shuffle or group):  # packed a window at a time, sorted by length within it
        windows = dataset.batch(batch_size * padding.GROUP_BATCHES).map(
            padding.traced_as_written(inputs), num_parallel_calls=tf.data.AUTOTUNE)
        dataset = padding.group_by_length(windows, batch_size, -(-num_examples // batch_size), seed, shuffle)
        return featurized(dataset, None, pad_to_multiple_of)
    return featurized(dataset.batch(batch_size), inputs, pad_to_multiple_of)


def featurized(batches, featurize, pad_to_multiple_of=0):
    """`batches` mapped by `featurize` (None: already model inputs) in parallel, cut to `pad_to_multiple_of`
    (0: unchanged), prefetched and `steady` (no autotune stall when Keras drops the iterator)."""
    if featurize is not None:
        batches = batches.map(padding.traced_as_written(featurize), num_parallel_calls=tf.data.AUTOTUNE)
    return steady(padding.trim_dataset(batches, pad_to_multiple_of).prefetch(tf.data.AUTOTUNE))
