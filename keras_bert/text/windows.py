"""Windows over texts longer than the model: strided slices of each text's WordPieces, and for each piece
the window where it has the most context.

    windows = piece_windows(ids, window_length=seq_length - 2, stride=64)   # ragged [W, (<= window_length)]
    logits = model(packer(windows.pieces))                                  # one row per window
    per_piece = pick_max_context(windows, token_logits[:, 1:])              # ragged [batch, (pieces), C]
    owned = max_context_positions(windows)     # ragged bool [W, (length)]: where training labels a piece

A text of n pieces has `1 + ceil(max(0, n - window_length) / stride)` windows starting at 0, stride,
2 * stride, ... (the last one may be shorter); a text without pieces has one empty window. The
max-context rule is `run_squad`'s: the score of a piece in a window is min(pieces left of it, pieces right
of it) + 0.01 * window length, the first window wins ties. Core TF ops only, so it runs in a serving graph.
"""

import collections

import tensorflow as tf

Windows = collections.namedtuple("Windows", ["pieces", "row", "start", "row_splits"])
Windows.__doc__ = """Strided windows of a ragged batch of pieces.

    pieces: ragged [num_windows, (length)], the pieces of each window (same dtype as the input).
    row: int64 [num_windows], the input row each window comes from (rows in order, windows in order).
    start: int64 [num_windows], the index of each window's first piece within its row.
    row_splits: int64 [batch + 1], the input's row splits (pieces of row i are [splits[i], splits[i+1])).
"""


def default_stride(window_length):
    """The stride when none is given: half a window."""
    return max(1, window_length // 2)


def window_stride(stride, seq_length):
    """`stride` (None: `default_stride`) in pieces for windows of `seq_length - 2` pieces; ValueError if it
    does not fit."""
    window = seq_length - 2
    stride = stride or default_stride(window)
    if not 0 < stride <= window:
        raise ValueError(f"stride={stride}; expected 0 < stride <= {window} (the sequence length "
                         f"{seq_length} less [CLS] and [SEP])")
    return stride


def piece_windows(pieces, window_length, stride):
    """Windows of `window_length` pieces every `stride` pieces over each row of `pieces` (ragged [batch,
    (n)]): see the module docstring. Returns `Windows`."""
    if not 0 < stride <= window_length:
        raise ValueError(f"window stride {stride}; expected 0 < stride <= window length {window_length}")
    lengths = pieces.row_lengths()
    over = tf.maximum(lengths - window_length, 0)
    counts = 1 + (over + stride - 1) // stride
    row = tf.repeat(tf.range(pieces.nrows()), counts)
    start = tf.ragged.range(counts).flat_values * stride
    window_lengths = tf.clip_by_value(tf.gather(lengths, row) - start, 0, window_length)
    first = tf.gather(pieces.row_splits, row) + start  # each window's first piece in pieces.flat_values
    offsets = tf.ragged.range(first, first + window_lengths)
    windowed = tf.RaggedTensor.from_row_splits(tf.gather(pieces.flat_values, offsets.flat_values),
                                               offsets.row_splits, validate=False)
    return Windows(windowed, row, start, pieces.row_splits)


def _max_context_pairs(windows):
    """(window, position) of every window position of `windows` (int64 [pairs] each, in window order: the
    order of `windows.pieces.flat_values`) and, for every piece of the batch, the pair it is read from
    (int64 [pieces], the index of its max-context pair)."""
    positions = tf.ragged.range(windows.pieces.row_lengths())  # [W, (length)]
    length = tf.cast(windows.pieces.row_lengths(), tf.int64)
    pair_window = positions.value_rowids()
    pair_position = positions.flat_values
    pair_length = tf.gather(length, pair_window)
    piece = (tf.gather(windows.row_splits, tf.gather(windows.row, pair_window))
             + tf.gather(windows.start, pair_window) + pair_position)
    context = tf.minimum(pair_position, pair_length - 1 - pair_position)
    # One int64 key per (window, position) pair: 100 x run_squad's score (context + 0.01 * window length)
    # in exact integers, then the earlier pair on ties; the segment max over each piece's pairs names the
    # winning pair.
    num_pairs = tf.size(pair_position, out_type=tf.int64)
    key = (100 * context + pair_length) * num_pairs + (num_pairs - 1 - tf.range(num_pairs))
    best = tf.math.unsorted_segment_max(key, piece, windows.row_splits[-1])
    return pair_window, pair_position, num_pairs - 1 - best % tf.maximum(num_pairs, 1)


def pick_max_context(windows, values):
    """For every piece of the windowed batch, `values` at its position in its max-context window.

    Args:
        windows: `Windows` from `piece_windows`.
        values: dense [num_windows, >= window length, ...]: per window, one entry per window position
            (e.g. token logits without the [CLS] column).

    Returns ragged [batch, (pieces), ...]: row i has one entry per piece of input row i, in order.
    """
    pair_window, pair_position, best_pair = _max_context_pairs(windows)
    picked = tf.gather_nd(values, tf.stack([tf.gather(pair_window, best_pair),
                                            tf.gather(pair_position, best_pair)], axis=1))
    return tf.RaggedTensor.from_row_splits(picked, windows.row_splits, validate=False)


def max_context_positions(windows):
    """bool ragged [num_windows, (length)], like `windows.pieces`: True where the window is its piece's
    max-context window, the one `pick_max_context` reads it from (every piece is True in exactly one
    window)."""
    _, _, best_pair = _max_context_pairs(windows)
    num_pairs = tf.size(windows.pieces.flat_values, out_type=tf.int64)
    chosen = tf.scatter_nd(best_pair[:, None], tf.ones_like(best_pair, tf.int32), [num_pairs]) > 0
    return tf.RaggedTensor.from_row_splits(chosen, windows.pieces.row_splits, validate=False)
