"""What users hand to `fit` / `evaluate` / `predict`, told apart and made ready: texts (a list, an array, a
tensor, a text pair, a dict of "text" / "text_b"), datasets of them, arrays of token ids, class ids."""

import keras
import numpy as np
import tensorflow as tf

from keras_bert import compat
from keras_bert.data.features import TEXT_KEYS
from keras_bert.training.defaults import FINETUNING

# Keras' batch size when `fit` / `evaluate` / `predict` are given none.
DEFAULT_BATCH_SIZE = FINETUNING.batch_size  # keras_bert/training/defaults.py


def is_str_sequence(value):
    """True for a str, a list/tuple of str, a numpy array of str/bytes/objects or a tf.string tensor."""
    if isinstance(value, (str, bytes)):
        return True
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value.dtype == tf.string
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "USO" and (value.dtype.kind != "O" or value.size == 0
                                             or isinstance(value.flat[0], (str, bytes)))
    if isinstance(value, list):
        return len(value) > 0 and all(is_str_sequence(item) for item in value[:4])
    return False


def spec_is_text(spec):
    if isinstance(spec, dict):
        return any(spec_is_text(value) for key, value in spec.items() if key in TEXT_KEYS)
    if isinstance(spec, (tuple, list)):
        return len(spec) > 0 and all(spec_is_text(item) for item in spec)
    return isinstance(spec, (tf.TensorSpec, tf.RaggedTensorSpec)) and spec.dtype == tf.string


def text_features(x):
    """The texts of a user's `x` as {"text": ..., "text_b": ...} (text_b only for pairs), or None when `x`
    is not text (token-id dicts, numbers)."""
    if isinstance(x, dict):
        keys = set(x)
        if "text" in keys and keys <= set(TEXT_KEYS) and is_str_sequence(x["text"]):
            return dict(x)
        return None
    if isinstance(x, tuple) and len(x) == 2 and not isinstance(x[0], (str, bytes)):
        if is_str_sequence(x[0]) and is_str_sequence(x[1]):
            return {"text": x[0], "text_b": x[1]}
        return None
    if is_str_sequence(x):
        return {"text": x}
    return None


def element_text(element):
    """A dataset element's text part as the {"text", "text_b"} dict (tf tensors)."""
    if isinstance(element, dict):
        return {key: element[key] for key in TEXT_KEYS if key in element}
    if isinstance(element, (tuple, list)):
        return {"text": element[0], "text_b": element[1]}
    return {"text": element}


def no_examples(x):
    """True for an empty list or array of texts (alone, as a text pair, or in a dict of texts)."""
    if isinstance(x, dict):
        x = x.get("text")
    if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], (list, np.ndarray)):
        x = x[0]
    return isinstance(x, (list, np.ndarray)) and len(x) == 0


def refuse_no_examples(x, what):
    if no_examples(x):
        raise ValueError(f"{what}: there is nothing to {what}: x holds no examples")


def class_ids(y, num_classes):
    """Class ids `y` (int or float numpy) as int32, after a check that each is an integer in [0, num_classes);
    ValueError naming the first value that is not (1.0 is class 1; 0.9, NaN and 7.0 of 3 classes are
    refused)."""
    flat = y.ravel()
    with np.errstate(invalid="ignore"):
        bad = (~np.isfinite(flat) | (flat != np.floor(flat)) if flat.dtype.kind == "f"
               else np.zeros(flat.shape, bool))
        bad |= (flat < 0) | (flat >= num_classes)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise ValueError(f"label {flat[index].item()!r} (example {index}) is not a class id: expected an "
                         f"integer in [0, {num_classes})")
    return y.astype(np.int32) if y.dtype.kind == "f" else y


def as_string_array(value):
    if isinstance(value, (tf.Tensor, tf.RaggedTensor)):
        return value
    if isinstance(value, (str, bytes)):
        value = [value]
    return np.asarray(value, dtype=object)


def array_dataset(x, y=None, sample_weight=None, batch_size=None, shuffle=False, class_weight=None,
                   steps=None):
    """Arrays (what Keras' ArrayDataAdapter takes: numpy, tensors, dicts of them) as the dataset Keras itself
    builds from them (same batches, per-epoch shuffling, class and sample weights), for fit / evaluate /
    predict to make `steady`: inside Keras it would keep tf.data's autotuning and stall when dropped
    (keras_bert/data/options.py). None for anything else, or where this Keras lacks that adapter."""
    if x is None or isinstance(x, (tf.data.Dataset, tf.distribute.DistributedDataset)):
        return None
    return compat.keras_array_dataset(x, y, sample_weight=sample_weight, batch_size=batch_size, steps=steps,
                                      shuffle=shuffle, class_weight=class_weight)


def steps_per_epoch(x, batch_size):
    """Batches in an epoch of `x` (a dataset of known cardinality, or arrays), else None."""
    if isinstance(x, tf.data.Dataset):
        cardinality = int(x.cardinality().numpy())
        return cardinality if cardinality > 0 else None
    leaves = keras.tree.flatten(x) if x is not None else []
    try:
        num_examples = len(leaves[0])
    except (IndexError, TypeError):
        return None
    return -(-num_examples // (batch_size or DEFAULT_BATCH_SIZE))
