"""SQuAD training windows: the windows the span labeler's `serve` cuts (`answers.question_context_windows`:
the question cut to `max_query_length` pieces, the context in windows `doc_stride` pieces apart, packed by
the model's preprocessor), run on training questions, with the original run_squad's targets: the answer's
first and last pieces where the window holds the whole answer, else [CLS] (position 0) for both.

An answer's pieces are those whose characters overlap the answer's (`answer_start` and the answer text):
the tightest piece span holding it, where the original found the tightest one whose pieces spell the
tokenized answer (`_improve_answer_span`); the two agree wherever the answer starts and ends on piece
boundaries (tests/tasks/test_trained_as_served.py).

    inputs, targets = training_arrays(examples, preprocessor, rules)
    model.fit(tf.data.Dataset.from_tensor_slices((inputs, targets)).batch(32))
"""

import keras
import numpy as np
import tensorflow as tf

from keras_bert.tasks.squad.answers import question_context_windows

# Questions per eager call of `question_context_windows` while building training windows.
_QUESTIONS_PER_CALL = 1024


def _answer_pieces(example, starts, ends):
    """(first, last) context piece of the training answer of `example` (`starts` / `ends`: its context's
    pieces' byte spans), or None without an answer or when no piece overlaps it."""
    if example.is_impossible or example.answer_start < 0:
        return None
    begin = len(example.context_text[: example.answer_start].encode("utf-8"))
    end = begin + len(example.answer_text.encode("utf-8"))
    first = int(np.searchsorted(ends, begin, side="right"))  # the first piece ending after the answer starts
    last = int(np.searchsorted(starts, end, side="left")) - 1  # the last piece starting before it ends
    return (first, last) if first <= last else None


def training_arrays(examples, preprocessor, rules):
    """The training windows of `examples` (`reader.SquadExample`s read for training) as `serve` cuts them.

    Args:
      examples: the questions, with their training answers (`answer_start`, `answer_text`).
      preprocessor: the model's `BertPreprocessor` (`seq_length` pieces per window).
      rules: an `answers.AnswerRules` (its `doc_stride` and `max_query_length`, as served).

    Returns:
      (inputs, targets) over all windows in question order: inputs a dict of int32 [num_windows,
      seq_length]; targets `start_logits`, `end_logits` int32 [num_windows], the answer's first and last
      positions in the window, 0 ([CLS]) where the window does not hold the whole answer or there is none.
    """
    rules.check(preprocessor.seq_length)
    parts = []
    for begin in range(0, len(examples), _QUESTIONS_PER_CALL):
        chunk = examples[begin : begin + _QUESTIONS_PER_CALL]
        questions = tf.constant([example.question_text for example in chunk])
        contexts = tf.constant([example.context_text for example in chunk])
        inputs, windows = question_context_windows(preprocessor, questions, contexts, rules)
        splits = windows["piece_starts"].row_splits.numpy()
        starts, ends = windows["piece_starts"].flat_values.numpy(), windows["piece_ends"].flat_values.numpy()
        answers = [_answer_pieces(e, starts[splits[i] : splits[i + 1]], ends[splits[i] : splits[i + 1]])
                   for i, e in enumerate(chunk)]
        found = np.asarray([a is not None for a in answers])
        first, last = (np.asarray([a[k] if a else 0 for a in answers], np.int64) for k in (0, 1))
        example = windows["example"].numpy()
        doc_start = windows["doc_start"].numpy()
        inside = (found[example] & (doc_start <= first[example])
                  & (last[example] < doc_start + windows["doc_length"].numpy()))
        offset = windows["query_length"].numpy() + 2 - doc_start  # [CLS] question [SEP]
        targets = {"start_logits": np.where(inside, first[example] + offset, 0).astype(np.int32),
                   "end_logits": np.where(inside, last[example] + offset, 0).astype(np.int32)}
        parts.append(({name: value.numpy() for name, value in inputs.items()}, targets))
    return keras.tree.map_structure(lambda *arrays: np.concatenate(arrays), *parts)
