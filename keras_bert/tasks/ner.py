"""Named-entity recognition on CoNLL files: the tag set, predictions in conlleval's `token gold predicted`
format, and the entity-level scores with conlleval's chunk rules.

    train, tags = tag_list(train_file="eng.train")
    model = BertTokenClassifier(encoder, len(tags)); model.compile(optimizer, token_loss())
    sentences = conll.read_conll_file("eng.testa", tag_list=tags)       # before training: bad files fail early
    sentences, predicted, eval_loss = predict_sentences(model, sentences, lookup, tags, 128, "eval_predictions.txt")
    results = eval_results(sentences, predicted, eval_loss)
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.data import conll
from keras_bert.metrics.conll import conlleval
from keras_bert.text.packer import BertPacker
from keras_bert.text.windows import default_stride, pick_max_context, piece_windows


def tag_list(train_file=None, saved_tags=None):
    """(training sentences or None, the tag list): the tags of `train_file` ("O" first), else `saved_tags`
    (the labels.json of a fine-tuned model). Raises ValueError when neither is given."""
    if train_file:
        train = conll.read_conll_file(train_file)
        return train, conll.collect_tags(train)
    if saved_tags is None:
        raise ValueError("the tag set comes from a training file, or from the labels.json beside a fine-tuned "
                         "model.keras: neither was given")
    return None, saved_tags


def token_loss():
    """The loss to compile a `BertTokenClassifier` with; train with per-piece sample weights that are 1 only
    on each word's first piece (`features.ner_arrays`)."""
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def predict_sentences(model, sentences, lookup, tags, max_seq_length, output_path, batch_size=32, stride=None):
    """Tags every word of `sentences` (read from a CoNLL file with `conll.read_conll_file`, before training, so
    a bad file fails early) with a compiled `BertTokenClassifier` and writes
    `output_path` (`token gold predicted` lines). A sentence of more than `max_seq_length - 2` pieces is
    read in windows `stride` pieces apart (default half a window), each piece taking the logits of the
    window where it has the most context: the rule of the served NER graph (`models/entities.py`), so
    the served entities of the sentence's tokens joined by spaces are this file's chunks. Returns
    (sentences, predicted tags per sentence, the mean loss over the words' first pieces)."""
    pieces_per_word, piece_logits = _windowed_piece_logits(model, sentences, lookup, max_seq_length, stride,
                                                           batch_size)
    predicted, first_logits, first_labels = [], [], []
    tag_ids = {tag: index for index, tag in enumerate(tags)}
    for sentence, counts, logits in zip(sentences, pieces_per_word, piece_logits, strict=True):
        first = np.cumsum([0, *counts[:-1]])[np.asarray(counts) > 0]
        piece_tags = [tags[i] for i in np.argmax(logits, axis=-1)] if len(logits) else []
        predicted.append(conll.word_predictions(counts, piece_tags, "O"))
        first_logits.append(logits[first])
        first_labels.extend(tag_ids[tag] for tag, count in zip(sentence.tags, counts, strict=True) if count)
    conll.write_conll_predictions(output_path, sentences, predicted)
    loss = model.loss(np.asarray(first_labels, np.int32), np.concatenate(first_logits)) if first_labels else 0.0
    return sentences, predicted, float(loss)


def _windowed_piece_logits(model, sentences, lookup, max_seq_length, stride, batch_size):
    """(pieces per word, per sentence numpy logits [pieces, num_tags]) through `text.windows`."""
    lookup.ids([token for sentence in sentences for token in sentence.tokens])
    word_ids = [lookup.ids(list(sentence.tokens)) for sentence in sentences]
    rows = [[i for ids in words for i in ids] for words in word_ids]
    pieces = tf.RaggedTensor.from_row_lengths(np.asarray([i for row in rows for i in row], np.int32),
                                              np.asarray([len(row) for row in rows], np.int64))
    window = max_seq_length - 2
    windows = piece_windows(pieces, window, stride or default_stride(window))
    packed = BertPacker.from_tokenizer(lookup.tokenizer, max_seq_length)(windows.pieces)
    logits = model.predict({k: v.numpy() for k, v in packed.items()}, batch_size=batch_size, verbose=0)
    per_piece = pick_max_context(windows, tf.constant(logits[:, 1:]))
    return [[len(ids) for ids in words] for words in word_ids], [row.numpy() for row in per_piece]


def eval_results(sentences, predicted, eval_loss, iobes=False):
    """precision, recall, f1 (entities, conlleval's rules; `iobes`: E-/S- chunks), token accuracy,
    eval_loss, num_sentences and <type>/f1 per entity type."""
    scores = conlleval([list(s.tags) for s in sentences], predicted, iobes=iobes)
    results = {name: scores[name] for name in ("precision", "recall", "f1", "accuracy")}
    results.update(eval_loss=eval_loss, num_sentences=len(sentences),
                   **{f"{kind}/f1": value["f1"] for kind, value in scores["per_type"].items()})
    return results
