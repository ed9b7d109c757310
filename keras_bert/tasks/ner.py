"""Named-entity recognition on CoNLL files: the tag set, predictions in conlleval's `token gold predicted`
format, and the entity-level scores with conlleval's chunk rules.

    train, tags = tag_list(train_file="eng.train")
    model = BertTokenClassifier(encoder, len(tags)); model.compile(optimizer, token_loss())
    sentences = conll.read_conll_file("eng.testa", tag_list=tags)       # before training: bad files fail early
    sentences, predicted, eval_loss = predict_sentences(model, sentences, lookup, tags, 128, "eval_predictions.txt")
    results = eval_results(sentences, predicted, eval_loss)
"""

import keras

from keras_bert.data import conll, features
from keras_bert.metrics.conll import conlleval


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


def predict_sentences(model, sentences, lookup, tags, max_seq_length, output_path, batch_size=32):
    """Tags every word of `sentences` (read from a CoNLL file with `conll.read_conll_file`) with a compiled
    `BertTokenClassifier` and writes `output_path` (`token gold predicted` lines). Returns (sentences,
    predicted tags per sentence, the loss over the labeled pieces)."""
    inputs, labels, weights, pieces_per_word = features.ner_arrays(sentences, lookup, tags, max_seq_length)
    logits = model.predict(inputs, batch_size=batch_size, verbose=0)
    predicted = features.ner_word_tags(logits, pieces_per_word, tags)
    conll.write_conll_predictions(output_path, sentences, predicted)
    loss = model.loss(labels, logits, sample_weight=weights)
    return sentences, predicted, float(loss) * weights.size / max(weights.sum(), 1.0)


def eval_results(sentences, predicted, eval_loss, iobes=False):
    """precision, recall, f1 (entities, conlleval's rules; `iobes`: E-/S- chunks), token accuracy,
    eval_loss, num_sentences and <type>/f1 per entity type."""
    scores = conlleval([list(s.tags) for s in sentences], predicted, iobes=iobes)
    results = {name: scores[name] for name in ("precision", "recall", "f1", "accuracy")}
    results.update(eval_loss=eval_loss, num_sentences=len(sentences),
                   **{f"{kind}/f1": value["f1"] for kind, value in scores["per_type"].items()})
    return results
