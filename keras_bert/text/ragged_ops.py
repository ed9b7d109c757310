"""Index arithmetic on the flat values of ragged string batches, shared by the splitter and the tokenizer.

Row ids and regrouping come from searchsorted on sorted ids: faster in tf.data than RaggedTensor's
value_rowids / from_value_rowids, and no Python per string.
"""

import tensorflow as tf


def utf8_length(code_points):
    """Bytes of each code point in UTF-8 (int64, same shape as `code_points`)."""
    cp = tf.cast(code_points, tf.int64)
    return (
        1 + tf.cast(cp >= 0x80, tf.int64) + tf.cast(cp >= 0x800, tf.int64) + tf.cast(cp >= 0x10000, tf.int64)
    )


def exclusive_cumsum(x):
    """[0, x0, x0 + x1, ...] without the total (1-D, same dtype)."""
    return tf.math.cumsum(x, exclusive=True)


def row_ids(row_splits):
    """The row of each value (int64 [n]), from int64 row splits [rows + 1]."""
    return tf.searchsorted(row_splits[1:], tf.range(row_splits[-1]), side="right", out_type=tf.int64)


def splits_of_rows(sorted_rows, nrows):
    """int64 row splits [nrows + 1] of values whose sorted int64 row ids are `sorted_rows`."""
    return tf.searchsorted(sorted_rows, tf.range(nrows + 1), side="left", out_type=tf.int64)


def ragged_from_rows(values, sorted_rows, nrows):
    """RaggedTensor [nrows, (x)] of 1-D `values` grouped by their sorted int64 row ids."""
    return tf.RaggedTensor.from_row_splits(values, splits_of_rows(sorted_rows, nrows), validate=False)


def shift_right(x, first):
    """x[i-1] for i > 0 and `first` at i = 0 (1-D, same dtype)."""
    return tf.concat([tf.fill([1], first), x[:-1]], axis=0)
