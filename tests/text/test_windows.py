"""Strided windows over pieces and the max-context choice, against the original run_squad rule."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.text.windows import max_context_positions, pick_max_context, piece_windows
from tests.data.squad_reference import is_max_context


@pytest.mark.parametrize("num_pieces, window, stride",
                         [(766, 510, 255), (1000, 510, 255), (37, 8, 3), (5, 8, 4)])
def test_each_piece_comes_from_the_window_run_squad_would_pick(num_pieces, window, stride):
    pieces = tf.RaggedTensor.from_row_lengths(tf.range(num_pieces, dtype=tf.int32), [num_pieces])
    windows = piece_windows(pieces, window, stride)
    starts = windows.start.numpy().tolist()
    lengths = windows.pieces.row_lengths().numpy().tolist()
    # values[w, p] = w: the output names the window each piece was read from.
    values = tf.repeat(tf.range(len(starts))[:, None], window, axis=1)
    chosen = pick_max_context(windows, values)[0].numpy()
    spans = list(zip(starts, lengths, strict=True))
    expected = [next(w for w in range(len(spans)) if is_max_context(spans, w, p)) for p in range(num_pieces)]
    np.testing.assert_array_equal(chosen, expected)
    # Where training labels a piece: True exactly at the window position it is read from.
    owned = max_context_positions(windows).to_list()
    assert owned == [[expected[start + i] == w for i in range(length)]
                     for w, (start, length) in enumerate(spans)]
