"""SQuAD answers in TF ops: question + context strings -> doc-stride windows -> one model call ->
answer spans.

The one implementation of SQuAD prediction: the span labeler's `serve` and its export
(`keras_bert.tasks.squad.model`) run `answer_questions`, and `run_squad --do_predict`
(`keras_bert.tasks.squad.predict`) writes its files from `serve`, so the served answers are the
predictions.json answers by construction.

    rules = AnswerRules(doc_stride=128, max_query_length=64, version_2_with_negative=True)
    found = answer_questions(model, preprocessor, questions, contexts, rules)   # tf.string [batch] each
    found["answer"], found["answer_start"], found["answer_end"]                 # context[start:end] == answer

The windows (`question_context_windows`) are those of training too (`keras_bert.tasks.squad.windows`): the
question cut to `max_query_length` pieces, the context pieces in windows `doc_stride` apart, each packed
`[CLS] question [SEP] window [SEP]`, as the original run_squad's. Decoding keeps the original
`write_predictions` rule: the n-best start and end positions of every window, spans inside the context only,
starting where the window gives that token the most context, at most `max_answer_length` pieces; v2.0
compares the lowest [CLS] score (null) to the best span. An answer is the characters of the context its
first and last pieces came from (the tokenizer's offsets), not the original's `get_final_text` re-alignment,
which has no graph form; on the gold spans of a SQuAD-like set the two differ where that alignment fails
(benchmarks/squad_answer_text.py: 2 of 2,952 gold spans, docs/tasks.md).
Only core TF and tf-text ops: the function runs inside a TF Serving graph.
"""

import dataclasses

import tensorflow as tf

from keras_bert.models.buckets import model_outputs
from keras_bert.models.options import option


@dataclasses.dataclass(frozen=True)
class AnswerRules:
    """How windows are cut and answers chosen (run_squad's flags of the same names and defaults)."""

    doc_stride: int = option(128, "SQuAD: pieces between the starts of consecutive context windows.")
    max_query_length: int = option(64, "SQuAD: questions are cut to this many pieces.")
    n_best_size: int = option(20, "SQuAD: start and end candidates per window (and answers in "
                              "nbest_predictions.json).")
    max_answer_length: int = option(30, "SQuAD: longest answer, in pieces.")
    version_2_with_negative: bool = option(False, "SQuAD v2.0: questions may have no answer (has_answer "
                                           "output).")
    null_score_diff_threshold: float = option(0.0, "SQuAD v2.0: no answer when null score - best span score "
                                              "exceeds this.")

    def check(self, seq_length):
        """Raises ValueError naming the value that leaves no room for a window of `seq_length` pieces."""
        for name in ("doc_stride", "max_query_length", "n_best_size", "max_answer_length"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)}; expected a positive integer")
        if self.max_query_length + 4 > seq_length:
            raise ValueError(f"max_query_length={self.max_query_length} leaves no context piece in a window "
                             f"of seq_length={seq_length}: expected max_query_length <= seq_length - 4")


def valid_utf8(strings):
    """tf.string -> the same strings with invalid UTF-8 bytes replaced by U+FFFD (the string the offsets
    index, as Python's `bytes.decode("utf-8", "replace")` sees it)."""
    return tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD,
                                        replace_control_characters=False)


def _ceil_div(a, b):
    return -tf.math.floordiv(-a, b)


def question_context_windows(preprocessor, questions, contexts, rules):
    """The windows of a batch of questions and contexts, as training cuts them.

    Args:
      preprocessor: the `BertPreprocessor` of the model (its tokenizer and packer; `seq_length` per window).
      questions, contexts: tf.string [batch], valid UTF-8.
      rules: an `AnswerRules`.

    Returns:
      (inputs, windows): inputs the encoder dict of int32 [num_windows, seq_length]; windows a dict of int64
      [num_windows] `example` (row of the batch), `index` (window of that example), `doc_start` (first
      context piece), `doc_length`, `query_length`, and per example `num_windows`, `stride`, `room` (context
      pieces per window), `doc_pieces`; `piece_starts`, `piece_ends` ragged int64 [batch, (pieces)]: each
      context piece's byte span in its context.
    """
    tokenizer, seq_length = preprocessor.tokenizer, preprocessor.seq_length
    query = tokenizer(questions)[:, : rules.max_query_length]
    doc_ids, piece_starts, piece_ends = tokenizer.tokenize_with_offsets(contexts)
    query_length = tf.cast(query.row_lengths(), tf.int64)
    doc_pieces = tf.cast(doc_ids.row_lengths(), tf.int64)
    room = seq_length - query_length - 3
    stride = tf.minimum(tf.constant(rules.doc_stride, tf.int64), room)
    # As doc_spans: windows `stride` apart until one reaches the end; an empty context keeps one empty window.
    num_windows = 1 + _ceil_div(tf.maximum(doc_pieces - room, 0), stride)
    example = tf.repeat(tf.range(tf.size(num_windows, out_type=tf.int64)), num_windows)
    index = tf.ragged.range(num_windows).flat_values
    doc_start = index * tf.gather(stride, example)
    doc_length = tf.minimum(tf.gather(doc_pieces, example) - doc_start, tf.gather(room, example))
    first = tf.gather(doc_ids.row_splits, example) + doc_start
    window_ids = tf.gather(doc_ids.flat_values, tf.ragged.range(first, first + doc_length))
    inputs = preprocessor.packer((tf.gather(query, example), window_ids))
    windows = {"example": example, "index": index, "doc_start": doc_start, "doc_length": doc_length,
               "query_length": tf.gather(query_length, example), "num_windows": num_windows, "stride": stride,
               "room": room, "doc_pieces": doc_pieces, "piece_starts": piece_starts, "piece_ends": piece_ends}
    return inputs, windows


def _max_context(windows, doc_index):
    """Whether each window is the one giving context piece `doc_index` (int64 [num_windows, s]) the most
    context: score min(pieces left, pieces right) + 0.01 * window length, ties to the first window
    (the original run_squad's `_check_is_max_context`)."""
    example = windows["example"]
    stride = tf.gather(windows["stride"], example)[:, None, None]
    room = tf.gather(windows["room"], example)[:, None, None]
    last = tf.gather(windows["num_windows"] - 1, example)[:, None, None]
    pieces = tf.gather(windows["doc_pieces"], example)[:, None, None]
    position = doc_index[:, :, None]
    # Windows holding the piece are k_low..k_high; at most ceil(room / stride) + 1 of them.
    k_low = tf.maximum(_ceil_div(position - room + 1, stride), 0)
    k_high = tf.minimum(tf.math.floordiv(position, stride), last)
    # `most` is 1 for an empty batch
    most = tf.maximum(tf.reduce_max(_ceil_div(windows["room"], windows["stride"])), 0) + 1
    k = k_low + tf.range(most)[None, None, :]
    start = k * stride
    length = tf.minimum(pieces - start, room)
    score = (tf.cast(tf.minimum(position - start, start + length - 1 - position), tf.float64)
             + 0.01 * tf.cast(length, tf.float64))
    score = tf.where(k <= k_high, score, tf.constant(-1.0, tf.float64))
    best = tf.reduce_max(score, axis=-1, keepdims=True)
    first_best = tf.reduce_min(tf.where(score == best, k, tf.int64.max), axis=-1)
    return first_best == windows["index"][:, None]


def decode_answers(start_logits, end_logits, windows, contexts, rules):
    """Per-window logits -> the n-best answer spans of each question.

    Args:
      start_logits, end_logits: float [num_windows, seq_length], the span labeler's outputs on the windows of
        `question_context_windows`.
      windows: its window dict.
      contexts: tf.string [batch], the contexts the offsets index.
      rules: an `AnswerRules`.

    Returns:
      dict of [batch, k] (k = min(n_best_size, candidates)), best first: `nbest_text` tf.string,
      `nbest_start`, `nbest_end` int64 character offsets (Python indexes of the context string),
      `nbest_start_logit`, `nbest_end_logit` float64, `nbest_valid` bool (False past the question's
      candidates); and [batch] `null_start_logit`, `null_end_logit` float64 (the window with the lowest
      [CLS] score), `num_windows` int64.
    """
    start_logits = tf.cast(start_logits, tf.float64)
    end_logits = tf.cast(end_logits, tf.float64)
    seq_length = tf.shape(start_logits, out_type=tf.int64)[1]
    top = tf.minimum(tf.constant(rules.n_best_size, tf.int64), seq_length)
    start_values, start_positions = tf.math.top_k(start_logits, tf.cast(top, tf.int32))
    end_values, end_positions = tf.math.top_k(end_logits, tf.cast(top, tf.int32))
    start_positions = tf.cast(start_positions, tf.int64)
    end_positions = tf.cast(end_positions, tf.int64)

    offset = windows["query_length"][:, None] + 2  # [CLS] question [SEP]
    positions = tf.range(seq_length)[None, :]
    doc_index = windows["doc_start"][:, None] + positions - offset
    in_doc = (positions >= offset) & (positions < offset + windows["doc_length"][:, None])
    allowed_start = in_doc & _max_context(windows, doc_index)
    starts = start_positions[:, :, None]
    ends = end_positions[:, None, :]
    valid = (tf.gather(allowed_start, start_positions, batch_dims=1)[:, :, None]
             & tf.gather(in_doc, end_positions, batch_dims=1)[:, None, :]
             & (ends >= starts) & (ends - starts + 1 <= rules.max_answer_length))
    score = start_values[:, :, None] + end_values[:, None, :]
    score = tf.where(valid, score, tf.constant(-float("inf"), tf.float64))

    # Candidates of a question in the original's order (window, start rank, end rank); top_k keeps that
    # order among equal scores, as the original's stable sort.
    per_window = top * top
    num_windows = windows["num_windows"]
    scores = tf.RaggedTensor.from_row_lengths(tf.reshape(score, [-1]), num_windows * per_window)
    # One -inf column more so that k >= 1 for an empty batch.
    scores = tf.pad(scores.to_tensor(-float("inf")), [[0, 0], [0, 1]], constant_values=-float("inf"))
    k = tf.minimum(tf.constant(rules.n_best_size, tf.int32), tf.shape(scores)[1])
    best_scores, best = tf.math.top_k(scores, k)
    best = tf.cast(best, tf.int64)
    window_first = tf.cumsum(num_windows, exclusive=True)
    # Padding columns (a question with fewer than k candidates) are not valid; keep their indexes in range.
    last_window = tf.maximum(tf.size(windows["example"], out_type=tf.int64) - 1, 0)
    window = tf.minimum(window_first[:, None] + best // per_window, last_window)
    start_rank, end_rank = (best % per_window) // top, best % top
    start = tf.gather_nd(start_positions, tf.stack([window, start_rank], -1))
    end = tf.gather_nd(end_positions, tf.stack([window, end_rank], -1))
    nbest = {"nbest_valid": best_scores > -float("inf"),
             "nbest_start_logit": tf.gather_nd(start_values, tf.stack([window, start_rank], -1)),
             "nbest_end_logit": tf.gather_nd(end_values, tf.stack([window, end_rank], -1))}
    nbest.update(_character_spans(windows, window, start - tf.gather(offset[:, 0], window),
                                  end - tf.gather(offset[:, 0], window), contexts, nbest["nbest_valid"]))

    # v2.0 null: the window with the lowest start + end logit at [CLS], the first on ties.
    null = tf.RaggedTensor.from_row_lengths(start_logits[:, 0] + end_logits[:, 0], num_windows)
    null = null.to_tensor(float("inf"))
    lowest = tf.reduce_min(null, axis=1, keepdims=True)
    rank = tf.range(tf.shape(null, out_type=tf.int64)[1])[None, :]
    null_window = window_first + tf.reduce_min(tf.where(null == lowest, rank, tf.int64.max), axis=1)
    nbest.update(null_start_logit=tf.gather(start_logits[:, 0], null_window),
                 null_end_logit=tf.gather(end_logits[:, 0], null_window), num_windows=num_windows)
    return nbest


def _character_spans(windows, window, start, end, contexts, valid):
    """Window positions (relative to the window's first context piece) -> the context text and character
    offsets of pieces start..end; "" and 0, 0 where not `valid`."""
    first_piece = tf.gather(windows["doc_start"], window)
    example = tf.gather(windows["example"], window)
    row_start = tf.gather(windows["piece_starts"].row_splits, example)
    last = tf.maximum(tf.size(windows["piece_starts"].flat_values, out_type=tf.int64) - 1, 0)
    # Invalid candidates may point past the pieces: clamp, and blank them below.
    start_piece = tf.clip_by_value(row_start + first_piece + start, 0, last)
    end_piece = tf.clip_by_value(row_start + first_piece + end, 0, last)
    padded = tf.concat([windows["piece_starts"].flat_values, [0]], 0)
    byte_start = tf.where(valid, tf.gather(padded, start_piece), 0)
    byte_end = tf.where(valid,
                        tf.gather(tf.concat([windows["piece_ends"].flat_values, [0]], 0), end_piece), 0)
    context = tf.gather(contexts, example)
    text = tf.strings.substr(context, byte_start, byte_end - byte_start, unit="BYTE")
    char_start = tf.strings.length(
        tf.strings.substr(context, tf.zeros_like(byte_start), byte_start, unit="BYTE"), unit="UTF8_CHAR")
    char_start = tf.cast(char_start, tf.int64)
    return {"nbest_text": text, "nbest_start": char_start,
            "nbest_end": char_start + tf.cast(tf.strings.length(text, unit="UTF8_CHAR"), tf.int64)}


def best_answers(nbest, rules):
    """`decode_answers`' output -> one answer per question (what the span labeler serves), all [batch]:
    `answer` tf.string (= context[answer_start:answer_end]; "" when there is none), `answer_start`,
    `answer_end` int64, `score` float64 (start + end logit of the best span; 0.0 without one); v2.0 also
    `no_answer_score` (the null score) and `has_answer` bool (null score - score <= the threshold)."""
    found = nbest["nbest_valid"][:, 0]
    score = tf.where(found, nbest["nbest_start_logit"][:, 0] + nbest["nbest_end_logit"][:, 0], 0.0)
    answered = found
    out = {"score": score}
    if rules.version_2_with_negative:
        no_answer = nbest["null_start_logit"] + nbest["null_end_logit"]
        answered = found & (no_answer - score <= rules.null_score_diff_threshold)
        out.update(no_answer_score=no_answer, has_answer=answered)
    out.update(answer=tf.where(answered, nbest["nbest_text"][:, 0], ""),
               answer_start=tf.where(answered, nbest["nbest_start"][:, 0], 0),
               answer_end=tf.where(answered, nbest["nbest_end"][:, 0], 0))
    return out


def answer_questions(model, preprocessor, questions, contexts, rules):
    """Questions and contexts (tf.string [batch]; any length, invalid UTF-8 replaced) -> `decode_answers`'
    n-best dict plus `best_answers`' fields, after one call of the span labeler `model` on all windows.
    Raises InvalidArgumentError when `questions` and `contexts` differ in batch size."""
    questions, contexts = tf.reshape(questions, [-1]), tf.reshape(contexts, [-1])
    same = tf.debugging.assert_equal(
        tf.size(questions), tf.size(contexts),
        message="the inputs `question` and `context` must have the same batch size (one context per "
                "question)")
    with tf.control_dependencies([same]):
        questions, contexts = valid_utf8(questions), valid_utf8(contexts)
    inputs, windows = question_context_windows(preprocessor, questions, contexts, rules)
    logits = model_outputs(model, inputs, preprocessor)  # in length buckets when served
    nbest = decode_answers(logits["start_logits"], logits["end_logits"], windows, contexts, rules)
    return {**nbest, **best_answers(nbest, rules)}
