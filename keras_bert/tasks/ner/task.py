"""Named-entity recognition on CoNLL files: the tag set, predictions in conlleval's `token gold predicted`
format (from the token classifier's `serve`), and the entity-level scores with conlleval's chunk rules.
The training windows are `windows.training_windows` (those `serve` reads); the loss is the model's
(`BertTokenClassifier.task_loss`). `NerTask` is the task for the driver (`keras_bert.tasks.driver`).

    train, tags = tag_list(train_file="eng.train")
    model = BertTokenClassifier(encoder, labels=tags); model.compile(optimizer)
    sentences = conll.read_conll_file("eng.testa", tag_list=tags)  # before training: bad files fail early
    sentences, predicted, eval_loss = predict_sentences(model, sentences, preprocessor, tags,
                                                        "eval_predictions.txt")
    results = eval_results(sentences, predicted, eval_loss)
"""

import os

import numpy as np
import tensorflow as tf

from keras_bert.data import padding
from keras_bert.tasks.base import TRAIN, Task, TrainingData
from keras_bert.tasks.finetuning import check_num_classes, served_batches
from keras_bert.tasks.ner import conll
from keras_bert.tasks.ner.metrics import conlleval
from keras_bert.tasks.ner.model import BertTokenClassifier
from keras_bert.tasks.ner.windows import training_windows


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
    predicted, loss = tag_sentences(model, sentences, preprocessor, tags, batch_size, stride)
    conll.write_conll_predictions(output_path, sentences, predicted)
    return sentences, predicted, loss


def tag_sentences(model, sentences, preprocessor, tags, batch_size=32, stride=None):
    """(predicted tags per sentence, the task loss over the tokens' first pieces): `predict_sentences`
    without its file."""
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
    loss = (model.task_loss()[0](np.asarray(first_labels, np.int32), np.stack(first_logits)) if first_labels
            else 0.0)
    return predicted, float(loss)


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


class NerTask(Task):
    """Named-entity recognition on CoNLL files, for the driver (`keras_bert.tasks.driver.finetune`): the tags
    of `train_file` ("O" first), else `saved_tags` (a fine-tuned model's labels.json); `eval_file` scored
    (`iobes`: E-/S- chunk rules), `predict_file` predicted; sentences longer than a window read in windows
    `stride` pieces apart, in training as served. Predictions: eval_predictions.txt / test_predictions.txt."""

    model_class = BertTokenClassifier

    def __init__(self, train_file=None, eval_file=None, predict_file=None, saved_tags=None, iobes=False,
                 stride=None):
        self.files = {TRAIN: train_file, "eval": eval_file, "predict": predict_file}
        self.saved_tags, self.iobes, self.stride = saved_tags, iobes, stride
        self.train, self.tags = None, None

    def prepare(self):
        self.train, self.tags = tag_list(self.files[TRAIN], self.saved_tags)

    @property
    def labels(self):
        return self.tags

    def check_model(self, model):
        check_num_classes(model, self.tags)

    def read(self, split):
        if split == TRAIN:
            return self.train
        return conll.read_conll_file(self.files[split], tag_list=self.tags)

    def dataset(self, examples, preprocessor, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        inputs, labels, weights = training_windows(examples, preprocessor, self.tags, self.stride)
        dataset = tf.data.Dataset.from_tensor_slices((inputs, labels, weights))
        if training:
            dataset = dataset.shuffle(len(labels), seed=seed)
        batches = padding.trim_dataset(dataset.batch(batch_size), pad_to_multiple_of, per_token_labels=True)
        summary = f"Training: {len(examples)} sentences, {len(labels)} windows"
        return TrainingData(batches, len(labels), summary)

    def predict(self, model, examples, batch_size=32, preprocessor=None):
        if model.labels is None:  # a saved tagger without tag names: served entities and word tags need them
            model.labels = list(self.tags)
        return tag_sentences(model, examples, preprocessor, self.tags, batch_size, self.stride)

    def results(self, model, examples, predictions):
        return eval_results(examples, *predictions, iobes=self.iobes)

    def write_predictions(self, split, examples, predictions, output_dir):
        path = os.path.join(output_dir, f"{'test' if split == 'predict' else split}_predictions.txt")
        conll.write_conll_predictions(path, examples, predictions[0])
        return [path]
