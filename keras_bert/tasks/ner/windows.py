"""A token classifier's raw text -> model inputs, for serving and training alike: `text_windows` tokenizes
each text with offsets and packs strided windows of its pieces (`keras_bert.text.windows`), so a text of any
length is read whole. The served entities (`entities.tagged_words`) run it in the graph; `training_windows`
runs it on CoNLL sentences (their tokens joined by spaces, as `task.predict_sentences` serves them) and puts
each token's tag on its first piece in the one window `serve` reads that piece from (its max-context window).

    inputs, labels, weights = training_windows(sentences, preprocessor, tags, stride=None)
    model.fit(tf.data.Dataset.from_tensor_slices((inputs, labels, weights)).batch(32))
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.text.windows import max_context_positions, piece_windows, window_stride

# Sentences per eager call of `text_windows` while building training windows.
_SENTENCES_PER_CALL = 1024


def text_windows(preprocessor, text, stride):
    """tf.string [b] -> (inputs, windows, ids, starts, ends): `inputs` the encoder dict of the packed windows
    (int32 [num_windows, seq], `preprocessor`'s packing), `windows` their `keras_bert.text.windows.Windows`
    (windows of `preprocessor.seq_length - 2` pieces, `stride` apart), `ids` the ragged [b, (pieces)]
    piece ids, `starts` / `ends` ragged int64 [b, (pieces)] the byte span of every piece in its text."""
    ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(text)
    windows = piece_windows(ids, preprocessor.seq_length - 2, stride)
    return preprocessor.packer(windows.pieces), windows, ids, starts, ends


def _first_piece_labels(sentences, starts, tag_ids):
    """int32 ragged [n, (pieces)] of `sentences` served joined by spaces (`starts`: each piece's byte offset):
    the tag id of a token at its first piece, -1 on every other piece."""
    labels = np.full(starts.flat_values.shape[0], -1, np.int32)
    splits = starts.row_splits.numpy()
    offsets = starts.flat_values.numpy()
    for row, sentence in enumerate(sentences):
        token_ends = np.cumsum([len(token.encode("utf-8")) + 1 for token in sentence.tokens]) - 1
        token = np.searchsorted(token_ends, offsets[splits[row] : splits[row + 1]], side="right")
        first = np.flatnonzero(np.diff(token, prepend=-1))
        labels[splits[row] + first] = [tag_ids[sentence.tags[t]] for t in token[first]]
    return tf.RaggedTensor.from_row_splits(labels, splits)


def training_windows(sentences, preprocessor, tags, stride=None):
    """The training windows of CoNLL `sentences` (`conll.ConllSentence`): what the token classifier's `serve`
    runs on each sentence's tokens joined by spaces (`text_windows`), with their targets.

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
        inputs, windows, _, starts, _ = text_windows(
            preprocessor, tf.constant([" ".join(sentence.tokens) for sentence in chunk]), stride)
        # The labels in the same windows as the pieces, kept where serve reads the piece.
        labels = piece_windows(_first_piece_labels(chunk, starts, tag_ids), window_length, stride).pieces
        labels = labels.with_flat_values(tf.where(max_context_positions(windows).flat_values,
                                                  labels.flat_values, -1))
        labels = tf.pad(labels.to_tensor(-1, shape=[None, window_length]), [[0, 0], [1, 1]],
                        constant_values=-1).numpy()  # no label at [CLS] and [SEP]
        parts.append(({name: value.numpy() for name, value in inputs.items()}, labels))
    inputs, labels = keras.tree.map_structure(lambda *arrays: np.concatenate(arrays), *parts)
    return inputs, np.maximum(labels, 0), (labels >= 0).astype(np.float32)
