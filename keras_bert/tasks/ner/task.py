"""Named-entity recognition on CoNLL files: `NerTask`, the task for the driver (`keras_bert.tasks.driver`):
the tag set, predictions in conlleval's `token gold predicted` format (from the token classifier's `serve`),
and the entity-level scores with conlleval's chunk rules. The training windows are
`windows.training_windows` (those `serve` reads); the loss is the model's (`BertTokenClassifier.task_loss`).

    task = NerTask("eng.train", "eng.testa")
    task.prepare()                                   # the tags of the training file, "O" first
    sentences = task.read("eval")                    # before training: bad files fail early
    predictions = task.predict(model, sentences, preprocessor=preprocessor)
    results = task.results(model, sentences, predictions)
    task.write_predictions("eval", sentences, predictions, output_dir)   # eval_predictions.txt
"""

import numpy as np

from keras_bert.tasks.base import PREDICT, TRAIN, Task, TrainingData, prediction_path
from keras_bert.tasks.finetuning import served_batches, window_batches
from keras_bert.tasks.ner import conll
from keras_bert.tasks.ner.metrics import conlleval
from keras_bert.tasks.ner.model import BertTokenClassifier
from keras_bert.tasks.ner.windows import training_windows


class NerTask(Task):
    """Named-entity recognition on CoNLL files, for the driver (`keras_bert.tasks.driver.finetune`): the tags
    of `train_file` ("O" first), else `saved_tags` (a fine-tuned model's labels.json); `eval_file` scored
    (`iobes`: E-/S- chunk rules), `predict_file` predicted; sentences longer than a window read in windows
    `stride` pieces apart (None: half a window), in training as served. Predictions: eval_predictions.txt /
    test_predictions.txt (`token gold predicted` lines, the input of conlleval.pl)."""

    model_class = BertTokenClassifier

    def __init__(self, train_file=None, eval_file=None, predict_file=None, saved_tags=None, iobes=False,
                 stride=None):
        self.files = {TRAIN: train_file, "eval": eval_file, PREDICT: predict_file}
        self.saved_tags, self.iobes, self.stride = saved_tags, iobes, stride
        self.train, self.tags = None, None

    def prepare(self):
        """The tag list: the tags of the training file ("O" first, its sentences kept for `read`), else the
        saved tags. Raises ValueError when neither is given."""
        if self.files[TRAIN]:
            self.train = conll.read_conll_file(self.files[TRAIN])
            self.tags = conll.collect_tags(self.train)
        elif self.saved_tags is None:
            raise ValueError("the tag set comes from a training file, or from the labels.json beside a "
                             "fine-tuned model.keras: neither was given")
        else:
            self.tags = self.saved_tags

    @property
    def labels(self):
        return self.tags

    def read(self, split):
        if split == TRAIN:
            return self.train
        return conll.read_conll_file(self.files[split], tag_list=self.tags)

    def dataset(self, examples, preprocessor, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        batches, rows = window_batches(training_windows(examples, preprocessor, self.tags, self.stride),
                                       batch_size, training, seed, pad_to_multiple_of, per_token_labels=True)
        return TrainingData(batches, rows, f"Training: {len(examples)} sentences, {rows} windows")

    def predict(self, model, examples, batch_size=32, preprocessor=None):
        """(predicted tags per sentence, the task loss over the tokens' first pieces). Each sentence is served
        as its tokens joined by spaces (`model.serve` with `word_tags=True`, the decoding its export serves):
        a sentence of more than `preprocessor.seq_length - 2` pieces is read in windows `stride` pieces
        apart, each piece taking the logits of the window where it has the most context, and a token takes
        the tag of its first piece ("O" when it has none)."""
        if model.labels is None:  # a saved tagger without tag names: served entities and word tags need them
            model.labels = list(self.tags)
        predicted, first_logits, first_labels = [], [], []
        tag_ids = {tag: index for index, tag in enumerate(self.tags)}
        texts = {"text": [" ".join(sentence.tokens) for sentence in examples]}
        for begin, served in served_batches(model, texts, batch_size, preprocessor, signature="text",
                                            stride=self.stride, word_tags=True):
            for row, sentence in enumerate(examples[begin : begin + batch_size]):
                words = _first_words(sentence.tokens, served["word_start"][row, : served["word_count"][row]])
                predicted.append(["O" if w is None else self.tags[served["word_tag_id"][row, w]]
                                  for w in words])
                first_logits.extend(served["word_logits"][row, w] for w in words if w is not None)
                first_labels.extend(tag_ids[tag] for tag, w in zip(sentence.tags, words, strict=True)
                                    if w is not None)
        loss = (model.task_loss()[0](np.asarray(first_labels, np.int32), np.stack(first_logits))
                if first_labels else 0.0)
        return predicted, float(loss)

    def results(self, model, examples, predictions):
        """precision, recall, f1 (entities, conlleval's rules), token accuracy, eval_loss, num_sentences and
        <type>/f1 per entity type."""
        predicted, eval_loss = predictions
        scores = conlleval([list(s.tags) for s in examples], predicted, iobes=self.iobes)
        results = {name: scores[name] for name in ("precision", "recall", "f1", "accuracy")}
        results.update(eval_loss=eval_loss, num_sentences=len(examples),
                       **{f"{kind}/f1": value["f1"] for kind, value in scores["per_type"].items()})
        return results

    def write_predictions(self, split, examples, predictions, output_dir):
        path = prediction_path(output_dir, split, ".txt", predict_name="test_predictions")
        conll.write_conll_predictions(path, examples, predictions[0])
        return [path]


def _first_words(tokens, word_starts):
    """For each of `tokens` (served joined by single spaces): the index of the first served word starting
    inside it (its first piece), or None when it has no piece; `word_starts` are character offsets."""
    token_ends = np.cumsum([len(token) + 1 for token in tokens]) - 1
    first = {}
    for word, token in enumerate(np.searchsorted(token_ends, word_starts, side="right")):
        first.setdefault(int(token), word)
    return [first.get(index) for index in range(len(tokens))]
