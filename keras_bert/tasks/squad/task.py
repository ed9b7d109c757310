"""SQuAD v1.1 / v2.0 extractive question answering: `SquadTask`, the task for the driver
(`keras_bert.tasks.driver`): the training windows (`windows.training_arrays`: the windows of the span
labeler's `serve`, with the same settings), predictions with their files (predictions.json,
nbest_predictions.json, null_odds.json) from the span labeler's `serve` and the official EM/F1. The loss is
the model's (`BertSpanLabeler.task_loss`).

    task = SquadTask("train-v2.0.json", "dev-v2.0.json", SquadSettings(version_2_with_negative=True))
    examples = task.read("eval")                          # before training: bad files fail early
    num_windows, result = task.predict(model, examples, preprocessor=preprocessor)
    result.save(output_dir); scores = task.results(model, examples, (num_windows, result))
"""

import dataclasses

import numpy as np

from keras_bert.tasks.base import TRAIN, Task, TrainingData
from keras_bert.tasks.finetuning import served_batches, window_batches
from keras_bert.tasks.squad import answers as squad_answers
from keras_bert.tasks.squad import metrics as squad_metrics
from keras_bert.tasks.squad import reader as squad
from keras_bert.tasks.squad import windows
from keras_bert.tasks.squad.model import BertSpanLabeler
from keras_bert.text import BertPreprocessor
from keras_bert.textfiles import read_json


@dataclasses.dataclass(frozen=True)
class SquadSettings:
    """How questions and contexts are windowed and answers chosen (the original run_squad.py's flags).

    Attributes:
        max_seq_length: pieces per window ([CLS] question [SEP] context [SEP]).
        doc_stride: pieces between the starts of consecutive context windows.
        max_query_length: questions are cut to this many pieces.
        version_2_with_negative: SQuAD v2.0, questions may have no answer.
        n_best_size: candidates considered (and listed in nbest_predictions.json).
        max_answer_length: longest answer, in pieces.
        null_score_diff_threshold: v2.0: no answer when null score - best span score exceeds this.
    """

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    version_2_with_negative: bool = False
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0

    def answer_rules(self):
        """The `squad_answers.AnswerRules` of these settings."""
        return squad_answers.AnswerRules(
            doc_stride=self.doc_stride, max_query_length=self.max_query_length, n_best_size=self.n_best_size,
            max_answer_length=self.max_answer_length, version_2_with_negative=self.version_2_with_negative,
            null_score_diff_threshold=self.null_score_diff_threshold)


class SquadTask(Task):
    """SQuAD question answering for the driver (`keras_bert.tasks.driver.finetune`): trains on `train_file`
    in the windows `serve` cuts (questions whose answer is not at its offset skipped and counted), answers
    `predict_file` (scored with the official EM/F1 when evaluating; predictions.json, nbest_predictions.json,
    null_odds.json written either way), windows and answers as `settings` (a `SquadSettings`) say."""

    model_class = BertSpanLabeler

    def __init__(self, train_file=None, predict_file=None, settings=None):
        self.train_file, self.predict_file = train_file, predict_file
        self.settings = settings or SquadSettings()
        self.num_skipped = 0

    def splits(self, evaluate, predict):
        # One pass over predict_file: scored when evaluating, its prediction files written either way.
        return (["eval"] if evaluate else []), (["predict"] if predict and not evaluate else [])

    def read(self, split):
        version_2 = self.settings.version_2_with_negative
        if split != TRAIN:  # the questions to predict (answers not needed)
            return squad.read_squad_examples(self.predict_file, False, version_2)[0]
        examples, skipped = squad.read_squad_examples(self.train_file, True, version_2)
        if not examples:
            raise ValueError(f"{self.train_file}: no usable training questions ({len(skipped)} skipped)")
        self.num_skipped = len(skipped)
        return examples

    def dataset(self, examples, preprocessor, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        arrays = windows.training_arrays(examples, preprocessor, self.settings.answer_rules())
        batches, rows = window_batches(arrays, batch_size, training, seed, pad_to_multiple_of)
        return TrainingData(batches, rows, f"Training: {len(examples)} questions ({self.num_skipped} "
                            f"skipped: answer not at its offset), {rows} windows")

    def predict(self, model, examples, batch_size=32, preprocessor=None):
        """(number of windows, `squad.SquadPredictions`): every question of `examples` answered by a
        `BertSpanLabeler`'s `serve` (with `nbest=True`): what its export serves, windows cut in the graph by
        the tokenizer of `preprocessor` (default the model's) at the settings' `max_seq_length`, answers as
        character spans of the context. `.save(output_dir)` writes the prediction files."""
        settings, tokenizer = self.settings, (preprocessor or model.preprocessor).tokenizer
        preprocessor, rules = BertPreprocessor(tokenizer, settings.max_seq_length), settings.answer_rules()
        result, num_windows = squad.SquadPredictions({}, {}, {}), 0
        inputs = {"question": [e.question_text for e in examples],
                  "context": [e.context_text for e in examples]}
        for begin, found in served_batches(model, inputs, batch_size, preprocessor, answer_rules=rules,
                                           nbest=True):
            num_windows += int(found["num_windows"].sum())
            for row, example in enumerate(examples[begin : begin + batch_size]):
                result.predictions[example.qas_id] = found["answer"][row].decode("utf-8")
                result.nbest[example.qas_id] = _nbest_entries(found, row, settings)
                if settings.version_2_with_negative:
                    result.null_odds[example.qas_id] = _null_odds(found, row)
        return num_windows, result

    def results(self, model, examples, predictions):
        """The official v1.1 (exact_match, f1) or v2.0 (with HasAns/NoAns splits and the best null threshold)
        scores of the predictions against the answers in `predict_file`, num_questions and num_windows."""
        num_windows, result = predictions
        dataset = read_json(self.predict_file)["data"]  # `read` has checked its format
        if self.settings.version_2_with_negative:
            scores = squad_metrics.evaluate_v2(dataset, result.predictions, na_probs=result.null_odds)
        else:
            scores = squad_metrics.evaluate_v1(dataset, result.predictions)
        scores.update(num_questions=len(examples), num_windows=num_windows)
        return scores

    def write_predictions(self, split, examples, predictions, output_dir):
        return predictions[1].save(output_dir)


def _null_odds(found, row):
    """null_odds.json's value of one question: null score - best span score (0.0 without a span), summed
    in float64 as the served `no_answer_score` and `score` are."""
    null = float(found["null_start_logit"][row]) + float(found["null_end_logit"][row])
    best = float(found["nbest_start_logit"][row, 0]) + float(found["nbest_end_logit"][row, 0])
    return null - (best if found["nbest_valid"][row, 0] else 0.0)


def _nbest_entries(found, row, settings):
    """nbest_predictions.json entries of one question: its n-best spans, the null answer ("", v2.0) placed
    by its score after spans of equal score (kept even past n_best_size, as the original), probabilities
    by softmax over the listed entries."""
    entries = [{"text": text.decode("utf-8"), "start_logit": float(start), "end_logit": float(end)}
               for text, start, end, valid in zip(found["nbest_text"][row], found["nbest_start_logit"][row],
                                                  found["nbest_end_logit"][row], found["nbest_valid"][row],
                                                  strict=True) if valid]
    if settings.version_2_with_negative:
        null = {"text": "", "start_logit": float(found["null_start_logit"][row]),
                "end_logit": float(found["null_end_logit"][row])}
        place = sum(e["start_logit"] + e["end_logit"] >= null["start_logit"] + null["end_logit"]
                    for e in entries)
        entries = (entries[:place] + [null] + entries[place:])[: max(settings.n_best_size, place + 1)]
    if not entries:  # no span fits the rules: the served answer is "" with score 0.0
        entries = [{"text": "", "start_logit": 0.0, "end_logit": 0.0}]
    scores = np.asarray([e["start_logit"] + e["end_logit"] for e in entries])
    probabilities = np.exp(scores - scores.max())
    probabilities /= probabilities.sum()
    return [{"text": e["text"], "probability": float(p), "start_logit": e["start_logit"],
             "end_logit": e["end_logit"]} for e, p in zip(entries, probabilities, strict=True)]
