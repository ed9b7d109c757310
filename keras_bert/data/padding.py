"""Padding that is not computed: batches cut to their longest sequence, and sequences grouped by length.

Packed inputs are padded to `max_seq_length`, and the encoder's cost grows with the padded length. With
`pad_to_multiple_of=m`, each batch is cut to its longest row rounded up to a multiple of m (a row is never
cut: only padding goes), so a batch of short sentences runs at length 32 or 64 rather than 128. The
model's outputs for the real tokens are unchanged (padding is masked out of attention; position ids count
from 0 either way). Pre-training data, where most rows are long and a few short, is also grouped into
batches of similar length first (`bucket_by_length`), else almost every batch would keep its full length.

Pre-training batches also carry max_predictions_per_seq masked-LM slots per row, zero-weighted past a
row's real predictions (about 15% of its tokens): a batch of short rows keeps only as many slots as its
row with the most real predictions, rounded up to PREDICTION_MULTIPLE. Zero-weighted slots add nothing to
the loss, so it is unchanged; the MLM head (a [slots, vocab] matmul per row) computes fewer rows.

Each distinct batch length (and slot count) is a new input shape: an XLA train step compiles once for
each (at most max_seq_length / m lengths, each with one or two slot counts). The default multiple
(`default_multiple`) is 16, larger for a max_seq_length over 128, so a run meets at most MAX_LENGTHS lengths.

Fine-tuning data is grouped by length without buckets (`group_by_length`): windows of shuffled examples
sorted by length and cut into batches, so an epoch keeps its number of batches (the learning-rate schedule
counts them) and every batch is full.
"""

import tensorflow as tf

SEQUENCE_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
PREDICTION_FEATURES = ("masked_lm_positions", "masked_lm_ids", "masked_lm_weights")
PREDICTION_MULTIPLE = 4  # slots are cut to a multiple of this, so a batch length meets few slot counts
# By default batches are cut to a multiple of LENGTH_MULTIPLE, widened so max_seq_length has at most
# MAX_LENGTHS of them: each length compiles its own XLA step, and a compile costs tens of steps.
LENGTH_MULTIPLE = 16
MAX_LENGTHS = 8
# Batches sorted together by `group_by_length`: wide enough that most batches hold one length, narrow enough
# that the examples of a window are still a shuffle of the whole set.
GROUP_BATCHES = 16


def default_multiple(max_seq_length):
    """The multiple batches are cut to by default: LENGTH_MULTIPLE (16), or above 8 x 16 the multiple of 16
    that cuts `max_seq_length` into at most MAX_LENGTHS lengths (384 -> 48, 512 -> 64)."""
    return LENGTH_MULTIPLE * max(1, -(-int(max_seq_length) // (LENGTH_MULTIPLE * MAX_LENGTHS)))


def resolve_multiple(pad_to_multiple_of, max_seq_length):
    """`pad_to_multiple_of` as given, where None or "auto" is `default_multiple(max_seq_length)` and 0 pads
    every batch to max_seq_length; ValueError for anything else that is not an int >= 0."""
    if pad_to_multiple_of is None or pad_to_multiple_of == "auto":
        return default_multiple(max_seq_length)
    if (isinstance(pad_to_multiple_of, bool) or not isinstance(pad_to_multiple_of, int)
            or pad_to_multiple_of < 0):
        raise ValueError(f"pad_to_multiple_of={pad_to_multiple_of!r}; expected 'auto', 0 (pad to the "
                         "sequence length) or a positive int")
    return pad_to_multiple_of


def batch_lengths(max_seq_length, multiple):
    """The lengths a batch cut to `multiple` can have (multiple, 2 x multiple, ..., max_seq_length); just
    [max_seq_length] for multiple 0."""
    if not multiple:
        return [max_seq_length]
    return sorted({min(length, max_seq_length) for length in range(multiple, max_seq_length + multiple,
                                                                   multiple)})


def traced_as_written(function):
    """`function` for `Dataset.map` without AutoGraph's conversion: the pipeline functions here hold no
    Python control flow on tensors, and converting them (source parsed and rewritten, each function a
    `fit` calls) cost ~0.2 s before a run's first step."""
    return tf.autograph.experimental.do_not_convert(function)


def batch_length(input_mask, multiple):
    """The longest row of `input_mask` ([..., seq], 1 on tokens) rounded up to `multiple`, capped at seq."""
    seq = tf.shape(input_mask)[-1]
    longest = tf.reduce_max(tf.reduce_sum(tf.cast(input_mask, tf.int32), -1))
    return tf.minimum(seq, tf.maximum(1, -(-longest // multiple)) * multiple)


def prediction_slots(masked_lm_weights, multiple=PREDICTION_MULTIPLE):
    """The slots ([..., max_predictions] float weights, > 0 on real predictions) up to and including each
    row's last real prediction, the batch's maximum rounded up to `multiple`, capped at max_predictions."""
    width = tf.shape(masked_lm_weights)[-1]
    real = tf.cast(masked_lm_weights > 0, tf.int32)
    # A slot is needed if it or a later one holds a real prediction (real ones need not come first).
    needed = tf.reduce_sum(tf.cast(tf.cumsum(real, axis=-1, reverse=True) > 0, tf.int32), -1)
    return tf.minimum(width, tf.maximum(1, -(-tf.reduce_max(needed) // multiple)) * multiple)


def trim_padding(inputs, multiple, extra=()):
    """`inputs` (dict with `input_mask` [..., seq]) with its sequence inputs, and the `extra` tensors whose
    last axis is the sequence (e.g. per-token labels), cut to `batch_length(input_mask, multiple)`. When
    `inputs` holds `masked_lm_weights`, the masked-LM features ([..., max_predictions]) are cut to
    `prediction_slots(masked_lm_weights)`.

    Returns (inputs, *extra) when `extra` is given, else inputs.
    """
    length = batch_length(inputs["input_mask"], multiple)
    trimmed = {name: value[..., :length] if name in SEQUENCE_INPUTS else value
               for name, value in inputs.items()}
    if "masked_lm_weights" in inputs:
        slots = prediction_slots(inputs["masked_lm_weights"])
        trimmed.update({name: trimmed[name][..., :slots] for name in PREDICTION_FEATURES if name in trimmed})
    if not extra:
        return trimmed
    return (trimmed, *(value[..., :length] for value in extra))


def bucket_by_length(dataset, batch_size, max_seq_length, multiple, drop_remainder):
    """Batches `dataset` (elements: a dict of [max_seq_length] features with `input_mask`, or a tuple whose
    first item is one) so that each batch holds rows whose lengths fall in one bucket of width `multiple`:
    (0, m], (m, 2m], ..."""
    boundaries = list(range(multiple + 1, max_seq_length + 1, multiple))
    return dataset.bucket_by_sequence_length(
        lambda features, *labels: tf.reduce_sum(tf.cast(features["input_mask"], tf.int32)), boundaries,
        [batch_size] * (len(boundaries) + 1), drop_remainder=drop_remainder)


def group_by_length(windows, batch_size, num_batches=None, seed=None, shuffle=True):
    """Batches of `batch_size` in which rows of similar length go together: each element of `windows` (a
    window of packed examples, shuffled or in order: a dict with `input_mask` [n, ..., seq], or a tuple
    whose first item is one; n a multiple of batch_size but in the last) is sorted by its rows' real
    lengths and cut into batches, and, with `shuffle`, the batches are shuffled within GROUP_BATCHES of each
    other (`seed`, anew each epoch; without, each window's batches come shortest first).
    Every example once, in the batches `windows` would make unsorted: `num_batches` of them, when given, is
    the cardinality the result states."""

    def sort(*element):
        inputs = element[0]
        mask = tf.cast(inputs["input_mask"], tf.int32)
        lengths = tf.reduce_sum(mask, -1)
        if mask.shape.rank > 2:  # [n, choices, seq]: a row is as long as its longest choice
            lengths = tf.reduce_max(lengths, axis=list(range(1, mask.shape.rank - 1)))
        order = tf.argsort(lengths, stable=True)
        rows = tf.nest.map_structure(lambda value: tf.gather(value, order), element)
        return rows if len(rows) > 1 else rows[0]

    sorted_windows = windows.map(traced_as_written(sort), num_parallel_calls=tf.data.AUTOTUNE)
    batches = sorted_windows.unbatch().batch(batch_size)
    if num_batches is not None:
        batches = batches.apply(tf.data.experimental.assert_cardinality(num_batches))
    if not shuffle:
        return batches
    return batches.shuffle(GROUP_BATCHES, seed=seed, reshuffle_each_iteration=True)


def trim_dataset(dataset, multiple, per_token_labels=False):
    """Maps `trim_padding` over a dataset of batches: `inputs` dicts or `(inputs, *labels)` tuples; with
    `per_token_labels` the labels ([b, seq] each, e.g. NER tags and weights) are cut with the inputs."""
    if not multiple:
        return dataset

    def trim(inputs, *labels):
        if not labels:
            return trim_padding(inputs, multiple)
        if per_token_labels:
            return trim_padding(inputs, multiple, labels)
        return (trim_padding(inputs, multiple), *labels)

    return dataset.map(traced_as_written(trim), num_parallel_calls=tf.data.AUTOTUNE)
