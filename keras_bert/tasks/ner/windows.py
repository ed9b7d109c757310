"""A token classifier's raw text -> model inputs, for serving and training alike: `text_windows` tokenizes
each text with offsets and packs strided windows of its pieces (`keras_bert.text.windows`), so a text of any
length is read whole, and `word_starts` marks the first piece of each word. The served entities
(`entities.tagged_words`) run both in the graph; `training_windows` runs them on CoNLL sentences (their
tokens joined by spaces, as `task.NerTask.predict` serves them) and puts each token's tag on its word's
first piece in the one window `serve` reads that piece from (its max-context window).

A word is a whitespace token, what a CoNLL file labels (its reader splits lines with `str.split`): served,
"Tim Berners-Lee" is the two words "Tim" and "Berners-Lee", and "Paris," one word (the entities trim the
comma), whatever pieces BERT's basic tokenizer cuts them into.

    inputs, labels, weights = training_windows(sentences, preprocessor, tags, stride=None)
    model.fit(tf.data.Dataset.from_tensor_slices((inputs, labels, weights)).batch(32))
"""

import functools
import sys

import keras
import numpy as np
import tensorflow as tf

from keras_bert.text.ragged_ops import row_ids, shift_right
from keras_bert.text.windows import max_context_positions, piece_windows, window_stride

# Sentences per eager call of `text_windows` while building training windows.
_SENTENCES_PER_CALL = 1024
# Row number * this + byte offset sorts the (row, offset) pairs of a batch; texts are far shorter than 2**40.
_ROW_SCALE = 2**40


@functools.lru_cache(maxsize=1)
def _whitespace():
    """int32 [29]: the code points of `str.isspace`, sorted (what `str.split` splits at)."""
    return np.array([c for c in range(sys.maxunicode + 1) if chr(c).isspace()], np.int32)


def text_characters(text):
    """(code points, keys) of tf.string [b]: the characters as Python decodes the text (an invalid UTF-8 byte
    one U+FFFD each), ragged int32 [b, (chars)], and int64 [chars] sorted keys of their (row, byte offset):
    `tf.searchsorted(keys, byte_keys(rows, offsets))` is the flat index of the first character at or after
    each byte offset."""
    chars, starts = tf.strings.unicode_decode_with_offsets(text, "UTF-8", errors="replace")
    return chars, byte_keys(row_ids(starts.row_splits), starts.flat_values)


def byte_keys(rows, byte_offsets):
    """int64 keys of (row, byte offset) pairs, ordered as the pairs."""
    return rows * _ROW_SCALE + byte_offsets


def word_starts(text, starts, ends):
    """bool ragged [b, (pieces)]: whether each piece of tf.string `text` [b] begins a word (the module
    docstring's whitespace token): it is the first piece of its text, or whitespace (`str.isspace`) lies
    between it and the piece before. `starts` / `ends`: ragged int64 [b, (pieces)] byte spans of the pieces
    (`BertTokenizer.tokenize_with_offsets`)."""
    chars, keys = text_characters(text)
    spaces = _whitespace()
    found = tf.gather(spaces, tf.minimum(tf.searchsorted(spaces, chars.flat_values), len(spaces) - 1))
    # [chars + 1]: the whitespace characters before each character (and in the whole batch, last).
    spaces_before = tf.concat([tf.zeros([1], tf.int64),
                               tf.math.cumsum(tf.cast(tf.equal(found, chars.flat_values), tf.int64))], axis=0)
    splits = starts.row_splits
    row = row_ids(splits)
    first_in_row = tf.range(splits[-1]) == tf.gather(splits, row)
    # Whitespace characters from the previous piece's end to this piece's start (none when they overlap).
    previous_end = shift_right(ends.flat_values, tf.constant(0, tf.int64))
    gap_start = tf.searchsorted(keys, byte_keys(row, previous_end), out_type=tf.int64)
    gap_end = tf.searchsorted(keys, byte_keys(row, starts.flat_values), out_type=tf.int64)
    spaced = tf.gather(spaces_before, gap_end) - tf.gather(spaces_before, gap_start) > 0
    return starts.with_flat_values(first_in_row | spaced)


def text_windows(preprocessor, text, stride):
    """tf.string [b] -> (inputs, windows, ids, starts, ends): `inputs` the encoder dict of the packed windows
    (int32 [num_windows, seq], `preprocessor`'s packing), `windows` their `keras_bert.text.windows.Windows`
    (windows of `preprocessor.seq_length - 2` pieces, `stride` apart), `ids` the ragged [b, (pieces)]
    piece ids, `starts` / `ends` ragged int64 [b, (pieces)] the byte span of every piece in its text."""
    ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(text)
    windows = piece_windows(ids, preprocessor.seq_length - 2, stride)
    return preprocessor.packer(windows.pieces), windows, ids, starts, ends


def _first_piece_labels(sentences, starts, first, tag_ids):
    """int32 ragged [n, (pieces)] of `sentences` served joined by spaces (`starts`: each piece's byte offset;
    `first`: `word_starts` of the pieces): the tag id of a token at its word's first piece (a word is a
    token, as read), -1 on every other piece."""
    labels = np.full(starts.flat_values.shape[0], -1, np.int32)
    splits = starts.row_splits.numpy()
    offsets = starts.flat_values.numpy()
    first = np.flatnonzero(first.flat_values.numpy())
    for row, sentence in enumerate(sentences):
        token_ends = np.cumsum([len(token.encode("utf-8")) + 1 for token in sentence.tokens]) - 1
        pieces = first[np.searchsorted(first, splits[row]) : np.searchsorted(first, splits[row + 1])]
        token = np.searchsorted(token_ends, offsets[pieces], side="right")
        labels[pieces] = [tag_ids[sentence.tags[t]] for t in token]
    return tf.RaggedTensor.from_row_splits(labels, splits)


def training_windows(sentences, preprocessor, tags, stride=None):
    """The training windows of CoNLL `sentences` (`conll.ConllSentence`): what the token classifier's `serve`
    runs on each sentence's tokens joined by spaces (`text_windows`, `word_starts`), with their targets.

    Args:
      sentences: the sentences, every tag one of `tags`.
      preprocessor: the model's `BertPreprocessor` (tokenizer, packer, `seq_length` per window).
      tags: tag names in class-id order.
      stride: pieces between window starts (None: half a window), the served option of the same name.

    Returns:
      (inputs, labels, weights) over all windows in sentence order: inputs a dict of int32
      [num_windows, seq_length]; labels int32 (a token's tag id at its first piece, 0 elsewhere); weights
      float32, 1.0 exactly where a window carries a label: each token's first piece in the window that
      serves it, so every token with a piece is labelled once.

    Raises ValueError naming the sentence (guid, line) with a tag outside `tags`, or a stride that does not
    fit the windows.
    """
    stride = window_stride(stride, preprocessor.seq_length)
    tag_ids = {tag: index for index, tag in enumerate(tags)}
    for sentence in sentences:
        unknown = [tag for tag in sentence.tags if tag not in tag_ids]
        if unknown:
            raise ValueError(f"{sentence.guid} (line {sentence.line}): unknown tag {unknown[0]!r}; "
                             f"expected one of {list(tags)}")
    window_length = preprocessor.seq_length - 2
    parts = []
    for begin in range(0, len(sentences), _SENTENCES_PER_CALL):
        chunk = sentences[begin : begin + _SENTENCES_PER_CALL]
        text = tf.constant([" ".join(sentence.tokens) for sentence in chunk])
        inputs, windows, _, starts, ends = text_windows(preprocessor, text, stride)
        labels = _first_piece_labels(chunk, starts, word_starts(text, starts, ends), tag_ids)
        # The labels in the same windows as the pieces, kept where serve reads the piece.
        labels = piece_windows(labels, window_length, stride).pieces
        labels = labels.with_flat_values(tf.where(max_context_positions(windows).flat_values,
                                                  labels.flat_values, -1))
        labels = tf.pad(labels.to_tensor(-1, shape=[None, window_length]), [[0, 0], [1, 1]],
                        constant_values=-1).numpy()  # no label at [CLS] and [SEP]
        parts.append(({name: value.numpy() for name, value in inputs.items()}, labels))
    inputs, labels = keras.tree.map_structure(lambda *arrays: np.concatenate(arrays), *parts)
    return inputs, np.maximum(labels, 0), (labels >= 0).astype(np.float32)
