"""Named entities served from a token classifier: raw `text` in, the entities `run_ner` would score out.

The graph tokenizes each text with offsets, runs the model on strided windows (`text.windows`: every piece
takes its logits from the window where it has the most context, so a text of any length is covered), tags
each word with the argmax at its first piece (a word: pieces with no character between them, i.e. a
whitespace-separated token such as a CoNLL token), reads conlleval's chunks off the word tags with
`metrics.conll.chunk_transition` tabulated over the model's tags, and returns them padded to the batch's
largest entity count:

    entity_text   tf.string [b, e]  exactly text[entity_start:entity_end] ("" on padding)
    entity_type   tf.string [b, e]  the chunk's type ("PER" of B-PER; "" on padding)
    entity_start  int64 [b, e]      character offsets into `text` as Python indexes the decoded str (invalid
    entity_end    int64 [b, e]      UTF-8 bytes count as one U+FFFD character each); -1 on padding
    entity_count  int32 [b]         entities of each text

Core TF ops only beside the tokenizer's tf-text ops.
"""

import numpy as np
import tensorflow as tf

from keras_bert.metrics.conll import chunk_transition, split_tag
from keras_bert.text.ragged_ops import row_ids, shift_right, splits_of_rows
from keras_bert.text.windows import pick_max_context, piece_windows

ENTITY_OUTPUTS = ("entity_text", "entity_type", "entity_start", "entity_end", "entity_count")
# Row number * this + byte offset sorts the (row, offset) pairs of a batch; texts are far shorter than 2**40.
_ROW_SCALE = 2**40


def uses_iobes(tags):
    """Whether the tag set is IOBES (has E- or S- tags), so chunks follow conlleval's E-/S- rules."""
    return any(split_tag(tag)[0] in ("E", "S") for tag in tags)


def transition_tables(tags, iobes):
    """(ends, starts) bool numpy [C + 1, C + 1] over (previous, current) tag ids: `chunk_transition`
    of the tag names, id C being the "O" outside the sentence (no chunk starts there)."""
    names = [*tags, "O"]
    ends = np.zeros((len(names), len(names)), bool)
    starts = np.zeros_like(ends)
    for i, previous in enumerate(names):
        for j, current in enumerate(names):
            ends[i, j], starts[i, j] = chunk_transition(previous, current, iobes)
    starts[:, -1] = False
    return ends, starts


def char_offsets(text, rows, byte_offsets):
    """Byte offsets into text[rows] -> character offsets (int64): the characters that start before them."""
    _, char_starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8", errors="replace")
    keys = row_ids(char_starts.row_splits) * _ROW_SCALE + char_starts.flat_values
    found = tf.searchsorted(keys, rows * _ROW_SCALE + byte_offsets, side="left", out_type=tf.int64)
    return found - tf.gather(char_starts.row_splits, rows)


def entity_outputs(model, tags, preprocessor, text, stride):
    """The outputs of the module docstring for `text` tf.string [b], with `model` (token ids -> logits
    [b, s, len(tags)]) on windows of `preprocessor.seq_length` moved by `stride` pieces."""
    tags = list(tags)
    num_tags = len(tags)
    ends_table, starts_table = (tf.constant(t) for t in transition_tables(tags, uses_iobes(tags)))
    types = tf.constant([split_tag(tag)[1] for tag in tags] + [""])

    ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(text)
    windows = piece_windows(ids, preprocessor.seq_length - 2, stride)
    logits = model(preprocessor.packer(windows.pieces), training=False)
    piece_tags = tf.argmax(pick_max_context(windows, logits[:, 1:]).flat_values, axis=-1, output_type=tf.int32)

    # Words: a piece starts one when it is first in its text or a character separates it from the last.
    splits = ids.row_splits
    piece_row = row_ids(splits)
    piece_index = tf.range(splits[-1])
    first_in_row = piece_index == tf.gather(splits, piece_row)
    word_first = first_in_row | (starts.flat_values > shift_right(ends.flat_values, tf.constant(-1, tf.int64)))
    first_piece = tf.where(word_first)[:, 0]
    word_row = tf.gather(piece_row, first_piece)
    num_words = tf.size(first_piece, out_type=tf.int64)
    word_tags = tf.gather(piece_tags, first_piece)
    word_start = tf.gather(starts.flat_values, first_piece)
    word_end = tf.math.unsorted_segment_max(ends.flat_values, tf.math.cumsum(tf.cast(word_first, tf.int64)) - 1,
                                            num_words)
    text_rows = tf.size(text, out_type=tf.int64)
    word_splits = splits_of_rows(word_row, text_rows)

    # Each text's word tags followed by the "O" past its end (id num_tags), as extract_chunks reads them.
    ext_splits = word_splits + tf.range(text_rows + 1)
    ext_row = row_ids(ext_splits)
    ext_index = tf.range(ext_splits[-1])
    ext_tags = tf.tensor_scatter_nd_update(tf.fill([ext_splits[-1]], num_tags),
                                           (tf.range(num_words) + word_row)[:, None], word_tags)
    row_start = ext_index == tf.gather(ext_splits, ext_row)
    previous = tf.where(row_start, num_tags, shift_right(ext_tags, num_tags))
    pairs = tf.stack([previous, ext_tags], axis=1)
    chunk_starts = tf.gather_nd(starts_table, pairs)
    boundaries = tf.where(tf.gather_nd(ends_table, pairs) | chunk_starts)[:, 0]
    # A chunk runs to the word before the next boundary; one whose row ends without a boundary is dropped.
    first = tf.where(chunk_starts)[:, 0]
    boundaries = tf.concat([boundaries, [ext_splits[-1]]], axis=0)
    after = tf.gather(boundaries, tf.searchsorted(boundaries, first, side="right", out_type=tf.int64))
    entity_row = tf.gather(ext_row, first)
    closed = tf.gather(tf.concat([ext_row, [-1]], axis=0), after) == entity_row
    first, after, entity_row = (tf.boolean_mask(t, closed) for t in (first, after, entity_row))
    byte_start = tf.gather(word_start, first - entity_row)
    byte_end = tf.gather(word_end, after - 1 - entity_row)

    # The entities of each text, grouped once for all five outputs.
    entity_splits = splits_of_rows(entity_row, text_rows)

    def per_row(values, default):
        return tf.RaggedTensor.from_row_splits(values, entity_splits, validate=False).to_tensor(default)

    counts = entity_splits[1:] - entity_splits[:-1]

    entity_text = tf.strings.substr(tf.gather(text, entity_row), byte_start, byte_end - byte_start, unit="BYTE")
    return {
        "entity_text": per_row(entity_text, ""),
        "entity_type": per_row(tf.gather(types, tf.gather(ext_tags, first)), ""),
        "entity_start": per_row(char_offsets(text, entity_row, byte_start), -1),
        "entity_end": per_row(char_offsets(text, entity_row, byte_end), -1),
        "entity_count": tf.cast(counts, tf.int32),
    }
