"""Named-entity recognition on CoNLL files: the tag set, predictions in conlleval's `token gold predicted`
format (from the token classifier's `serve`), and the entity-level scores with conlleval's chunk rules.
The training windows are `windows.training_windows` (those `serve` reads); the loss is the model's
(`BertTokenClassifier.task_loss`).

    train, tags = tag_list(train_file="eng.train")
    model = BertTokenClassifier(encoder, labels=tags); model.compile(optimizer)
    sentences = conll.read_conll_file("eng.testa", tag_list=tags)  # before training: bad files fail early
    sentences, predicted, eval_loss = predict_sentences(model, sentences, preprocessor, tags,
                                                        "eval_predictions.txt")
    results = eval_results(sentences, predicted, eval_loss)
"""

import numpy as np

from keras_bert.tasks.finetuning import served_batches
from keras_bert.tasks.ner import conll
from keras_bert.tasks.ner.metrics import conlleval


def tag_list(train_file=None, saved_tags=None):
    """(training sentences or None, the tag list): the tags of `train_file` ("O" first), else `saved_tags`
    (the labels.json of a fine-tuned model). Raises ValueError when neither is given."""
    if train_file:
        train = conll.read_conll_file(train_file)
        return train, conll.collect_tags(train)
    if saved_tags is None:
        raise ValueError("the tag set comes from a training file, or from the labels.json beside a "
                         "fine-tuned model.keras: neither was given")
    return None, saved_tags


def predict_sentences(model, sentences, preprocessor, tags, output_path, batch_size=32, stride=None):
    """Tags every word of `sentences` (read from a CoNLL file with `conll.read_conll_file`, before training,
    so a bad file fails early) with a `BertTokenClassifier` that has tag names (`model.labels`) and writes
    `output_path` (`token gold predicted` lines). Each sentence is served as its tokens joined by spaces
    (`model.serve` with `word_tags=True` and `preprocessor`, the decoding its export serves): a sentence of
    more than `preprocessor.seq_length - 2` pieces is read in windows `stride` pieces apart (default half a
    window), each piece taking the logits of the window where it has the most context (the windows
    `windows.training_windows` trains on), and a token takes the tag of its first piece ("O" when it has
    none); `tags[i]` names tag id i. Returns (sentences, predicted tags per sentence, the task loss over the
    tokens' first pieces)."""
    predicted, first_logits, first_labels = [], [], []
    tag_ids = {tag: index for index, tag in enumerate(tags)}
    texts = {"text": [" ".join(sentence.tokens) for sentence in sentences]}
    for begin, served in served_batches(model, texts, batch_size, preprocessor, signature="text",
                                        stride=stride, word_tags=True):
        for row, sentence in enumerate(sentences[begin : begin + batch_size]):
            words = _first_words(sentence.tokens, served["word_start"][row, : served["word_count"][row]])
            predicted.append(["O" if w is None else tags[served["word_tag_id"][row, w]] for w in words])
            first_logits.extend(served["word_logits"][row, w] for w in words if w is not None)
            first_labels.extend(tag_ids[tag] for tag, w in zip(sentence.tags, words, strict=True)
                                if w is not None)
    conll.write_conll_predictions(output_path, sentences, predicted)
    loss = (model.task_loss()[0](np.asarray(first_labels, np.int32), np.stack(first_logits)) if first_labels
            else 0.0)
    return sentences, predicted, float(loss)


def _first_words(tokens, word_starts):
    """For each of `tokens` (served joined by single spaces): the index of the first served word starting
    inside it (its first piece), or None when it has no piece; `word_starts` are character offsets."""
    token_ends = np.cumsum([len(token) + 1 for token in tokens]) - 1
    first = {}
    for word, token in enumerate(np.searchsorted(token_ends, word_starts, side="right")):
        first.setdefault(int(token), word)
    return [first.get(index) for index in range(len(tokens))]


def eval_results(sentences, predicted, eval_loss, iobes=False):
    """precision, recall, f1 (entities, conlleval's rules; `iobes`: E-/S- chunks), token accuracy,
    eval_loss, num_sentences and <type>/f1 per entity type."""
    scores = conlleval([list(s.tags) for s in sentences], predicted, iobes=iobes)
    results = {name: scores[name] for name in ("precision", "recall", "f1", "accuracy")}
    results.update(eval_loss=eval_loss, num_sentences=len(sentences),
                   **{f"{kind}/f1": value["f1"] for kind, value in scores["per_type"].items()})
    return results
