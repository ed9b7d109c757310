"""The original run_squad.py's windows and post-processing, kept as the reference that tasks.squad (what
run_squad trains on and the served span labeler decodes with: the in-graph windows, answers as character
spans) is tested and measured against: `make_squad_features` cuts each example's whitespace words into
WordPieces and windows in Python with their training targets; per-window start/end logits -> the n best
WordPiece spans -> `get_final_text`, which re-aligns the detokenized prediction onto the whitespace words of
the context (docs/tasks.md says where the two differ).
"""

import collections
import dataclasses
import math

import numpy as np
import tensorflow as tf

from keras_bert.tasks.squad.reader import SquadPredictions
from keras_bert.text.unicode_rules import basic_tokenize


def tokenize_words(tokenizer):
    """The `tokenize` callable of `make_squad_features`: list of str -> the WordPiece strings of each, from
    `tokenizer` (a `BertTokenizer`)."""
    return lambda strings: [[tokenizer.id_to_token(i) for i in ids]
                            for ids in tokenizer(tf.constant(list(strings), tf.string)).to_list()]


@dataclasses.dataclass
class SquadFeature:
    """One window of one example, as the model sees it: `[CLS] query [SEP] doc window [SEP]`.

    Attributes:
      example_index: position of the example in the examples list.
      doc_span_index: which window of that example.
      tokens: the WordPiece strings of the packed sequence (unpadded).
      segment_ids: 0 for [CLS] query [SEP], 1 for the window and its [SEP] (len(tokens) ints).
      token_to_orig_map: packed position -> word index in `example.doc_tokens` (window tokens only).
      token_is_max_context: packed position -> whether this window is the one where that token has the most
        context on both sides (only there may an answer start).
      start_position, end_position: training target positions in `tokens`; 0 ([CLS]) when the answer is not
        inside this window or the question has no answer.
    """

    example_index: int
    doc_span_index: int
    tokens: list
    segment_ids: list
    token_to_orig_map: dict
    token_is_max_context: dict
    start_position: int = 0
    end_position: int = 0

    @property
    def is_impossible(self):
        return self.start_position == 0 and self.end_position == 0


def doc_spans(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """Windows `[(start, length), ...]` covering `num_doc_tokens` tokens, each at most `max_tokens_for_doc`
    long, starting `doc_stride` tokens apart (the last one ends at the document's end)."""
    if max_tokens_for_doc <= 0:
        raise ValueError(f"no room for document tokens: max_tokens_for_doc={max_tokens_for_doc} "
                         "(increase max_seq_length or decrease max_query_length)")
    if doc_stride <= 0:
        raise ValueError(f"doc_stride must be positive, got {doc_stride}")
    spans, start = [], 0
    while start < num_doc_tokens:
        length = min(num_doc_tokens - start, max_tokens_for_doc)
        spans.append((start, length))
        if start + length == num_doc_tokens:
            break
        start += min(length, doc_stride)
    return spans


def is_max_context(spans, span_index, position):
    """Whether window `span_index` gives document token `position` the most context.

    The score of a window is min(tokens left, tokens right) + 0.01 * window length; ties go to the first.
    """
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if start <= position <= end:
            score = min(position - start, end - position) + 0.01 * length
            if best_score is None or score > best_score:
                best_score, best_index = score, index
    return span_index == best_index


def _improve_answer_span(sub_tokens, start, end, tokenized_answer):
    # The word-level span may be wider than the answer in WordPieces ("(1895)" vs "1895"): find the tightest.
    target = " ".join(tokenized_answer)
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if " ".join(sub_tokens[new_start : new_end + 1]) == target:
                return new_start, new_end
    return start, end


def make_squad_features(example, example_index, tokenize, max_seq_length, doc_stride, max_query_length,
                        is_training, cls_token="[CLS]", sep_token="[SEP]"):
    """Splits one example into windows of at most `max_seq_length` tokens.

    Args:
      example: a `SquadExample`.
      example_index: its position in the examples list (stored in each feature).
      tokenize: callable list[str] -> list[list[str]] (WordPieces of each string), e.g. the text tokenizer.
      max_seq_length, doc_stride, max_query_length: as the recipe flags (the query is truncated to
        `max_query_length` pieces; windows overlap so that each starts `doc_stride` pieces after the last).
      is_training: set `start_position`/`end_position` of each feature.

    Returns:
      list of `SquadFeature` (at least one).
    """
    query_tokens = tokenize([example.question_text])[0][:max_query_length]
    pieces_per_word = tokenize(example.doc_tokens)
    sub_tokens, sub_to_word, word_to_first_sub = [], [], []
    for word_index, pieces in enumerate(pieces_per_word):
        word_to_first_sub.append(len(sub_tokens))
        sub_tokens.extend(pieces)
        sub_to_word.extend([word_index] * len(pieces))
    if not sub_tokens:
        raise ValueError(f"question {example.qas_id}: the context has no tokens after tokenization")

    answer_start = answer_end = None
    if is_training and not example.is_impossible:
        answer_start = word_to_first_sub[example.start_position]
        if example.end_position < len(example.doc_tokens) - 1:
            answer_end = word_to_first_sub[example.end_position + 1] - 1
        else:
            answer_end = len(sub_tokens) - 1
        answer_start, answer_end = _improve_answer_span(
            sub_tokens, answer_start, answer_end, [p for ps in tokenize([example.answer_text]) for p in ps])

    spans = doc_spans(len(sub_tokens), max_seq_length - len(query_tokens) - 3, doc_stride)
    doc_offset = len(query_tokens) + 2  # [CLS] query [SEP]
    features = []
    for span_index, (span_start, span_length) in enumerate(spans):
        tokens = [cls_token, *query_tokens, sep_token]
        token_to_orig_map, token_is_max_context = {}, {}
        for i in range(span_length):
            position = span_start + i
            token_to_orig_map[len(tokens)] = sub_to_word[position]
            token_is_max_context[len(tokens)] = is_max_context(spans, span_index, position)
            tokens.append(sub_tokens[position])
        tokens.append(sep_token)
        feature = SquadFeature(
            example_index=example_index,
            doc_span_index=span_index,
            tokens=tokens,
            segment_ids=[0] * doc_offset + [1] * (span_length + 1),
            token_to_orig_map=token_to_orig_map,
            token_is_max_context=token_is_max_context,
        )
        span_end = span_start + span_length - 1
        if answer_start is not None and span_start <= answer_start and answer_end <= span_end:
            feature.start_position = answer_start - span_start + doc_offset
            feature.end_position = answer_end - span_start + doc_offset
        features.append(feature)
    return features



def _strip_spaces(text):
    # The text without spaces, and for each of its characters the position in `text`.
    kept, positions = [], []
    for i, ch in enumerate(text):
        if ch != " ":
            kept.append(ch)
            positions.append(i)
    return "".join(kept), positions


def get_final_text(pred_text, orig_text, do_lower_case):
    """Maps a detokenized prediction back onto the original text.

    `pred_text` is the prediction rebuilt from WordPieces ("steve smith's" after lower-casing and splitting
    punctuation: "steve smith ' s" joined without "##"); `orig_text` is the span of original words it came
    from ("Steve Smith's."). The prediction is located in the basic-tokenized `orig_text`, and the two texts
    are aligned character by character ignoring spaces, giving the original span ("Steve Smith's"). When
    that fails (the prediction is not found, or normalization changed the length, e.g. some accents or
    ligatures), `orig_text` is returned whole.
    """
    tokenized = " ".join(basic_tokenize(orig_text, do_lower_case))
    start = tokenized.find(pred_text)
    if start == -1 or not pred_text:
        return orig_text
    end = start + len(pred_text) - 1
    orig_stripped, orig_positions = _strip_spaces(orig_text)
    tok_stripped, tok_positions = _strip_spaces(tokenized)
    if len(orig_stripped) != len(tok_stripped):
        return orig_text
    # Position in `tokenized` -> position in the space-free text, which is shared with `orig_text`.
    tok_to_stripped = {position: i for i, position in enumerate(tok_positions)}
    if start not in tok_to_stripped or end not in tok_to_stripped:
        return orig_text
    return orig_text[orig_positions[tok_to_stripped[start]] : orig_positions[tok_to_stripped[end]] + 1]


def _top_indices(logits, n):
    # Highest first; equal logits keep position order.
    return np.argsort(-np.asarray(logits, dtype=np.float64), kind="stable")[:n].tolist()


def _softmax(scores):
    peak = max(scores)
    exps = [math.exp(s - peak) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _detokenize(pieces):
    text = " ".join(pieces).replace(" ##", "").replace("##", "")
    return " ".join(text.split())


def postprocess_predictions(examples, features, start_logits, end_logits, n_best_size=20,
                            max_answer_length=30, do_lower_case=True, version_2_with_negative=False,
                            null_score_diff_threshold=0.0):
    """Turns per-window start/end logits into answer texts, as the original `write_predictions`.

    Args:
      examples: the `SquadExample`s.
      features: the `SquadFeature`s of all windows (`feature.example_index` indexes `examples`).
      start_logits, end_logits: per feature, a 1-D float sequence of at least `len(feature.tokens)` values
        (padded positions past the tokens are ignored), e.g. rows of a [num_features, seq_length] array.
      n_best_size: candidates kept per side and in the n-best list.
      max_answer_length: longest answer, in WordPieces.
      do_lower_case: how the tokenizer normalized text (for `get_final_text`).
      version_2_with_negative: consider "no answer", scored by the [CLS] logits of the window where that
        score is lowest; answer "" when (null score - best span score) > `null_score_diff_threshold`.

    Returns:
      `SquadPredictions`.

    Spans are skipped when they end before they start, are longer than `max_answer_length`, touch a
    position outside the document window, or start where the window is not the token's max-context window.
    """
    if len(features) != len(start_logits) or len(features) != len(end_logits):
        raise ValueError(f"{len(features)} features but {len(start_logits)} start and {len(end_logits)} "
                         "end logit rows")
    features_by_example = collections.defaultdict(list)
    for feature_index, feature in enumerate(features):
        features_by_example[feature.example_index].append(feature_index)

    result = SquadPredictions({}, {}, {})
    for example_index, example in enumerate(examples):
        if example_index not in features_by_example:
            raise ValueError(f"question {example.qas_id} (example {example_index}) has no features")
        candidates = []  # (score, start_logit, end_logit, feature_index, start, end); start 0 = null
        null = None  # (score, start_logit, end_logit, feature_index) of the lowest null score
        for feature_index in features_by_example[example_index]:
            feature = features[feature_index]
            starts, ends = start_logits[feature_index], end_logits[feature_index]
            if version_2_with_negative:
                null_score = float(starts[0]) + float(ends[0])
                if null is None or null_score < null[0]:
                    null = (null_score, float(starts[0]), float(ends[0]), feature_index)
            for start in _top_indices(starts, n_best_size):
                for end in _top_indices(ends, n_best_size):
                    if (start >= len(feature.tokens) or end >= len(feature.tokens)
                            or start not in feature.token_to_orig_map or end not in feature.token_to_orig_map
                            or not feature.token_is_max_context.get(start, False)
                            or end < start or end - start + 1 > max_answer_length):
                        continue
                    score = float(starts[start]) + float(ends[end])
                    candidates.append((score, float(starts[start]), float(ends[end]), feature_index, start,
                                       end))
        if null is not None:
            candidates.append((null[0], null[1], null[2], null[3], 0, 0))
        candidates.sort(key=lambda candidate: candidate[0], reverse=True)

        nbest, seen = [], set()
        for _, start_logit, end_logit, feature_index, start, end in candidates:
            if len(nbest) >= n_best_size:
                break
            if start > 0:
                feature = features[feature_index]
                words = example.doc_tokens[feature.token_to_orig_map[start] :
                                           feature.token_to_orig_map[end] + 1]
                text = get_final_text(_detokenize(feature.tokens[start : end + 1]), " ".join(words),
                                      do_lower_case)
            else:
                text = ""
            if text in seen:
                continue
            seen.add(text)
            nbest.append({"text": text, "start_logit": start_logit, "end_logit": end_logit})
        if null is not None and "" not in seen:
            nbest.append({"text": "", "start_logit": null[1], "end_logit": null[2]})
        # As the original: never an empty n-best list, and (v2.0) always a non-null candidate to compare.
        if not any(entry["text"] for entry in nbest):
            nbest.append({"text": "empty", "start_logit": 0.0, "end_logit": 0.0})

        probabilities = _softmax([entry["start_logit"] + entry["end_logit"] for entry in nbest])
        result.nbest[example.qas_id] = [
            {"text": entry["text"], "probability": probability, "start_logit": entry["start_logit"],
             "end_logit": entry["end_logit"]}
            for entry, probability in zip(nbest, probabilities, strict=True)
        ]
        best_non_null = next(entry for entry in nbest if entry["text"])
        if not version_2_with_negative:
            result.predictions[example.qas_id] = nbest[0]["text"]
            continue
        score_diff = null[0] - best_non_null["start_logit"] - best_non_null["end_logit"]
        result.null_odds[example.qas_id] = score_diff
        result.predictions[example.qas_id] = ("" if score_diff > null_score_diff_threshold
                                              else best_non_null["text"])
    return result


def feature_arrays(features, tokenizer, seq_length):
    """`SquadFeature`s -> (inputs, targets) as the original wrote its TFRecords: inputs a dict of int32
    [n, seq_length] (ids of `tokenizer`, zero padding); targets `start_logits`, `end_logits` int32 [n]."""
    inputs = {name: np.zeros((len(features), seq_length), np.int32)
              for name in ("input_word_ids", "input_mask", "input_type_ids")}
    for row, feature in enumerate(features):
        length = len(feature.tokens)
        inputs["input_word_ids"][row, :length] = [tokenizer.token_to_id(token) for token in feature.tokens]
        inputs["input_mask"][row, :length] = 1
        inputs["input_type_ids"][row, :length] = feature.segment_ids
    targets = {"start_logits": np.asarray([f.start_position for f in features], np.int32),
               "end_logits": np.asarray([f.end_position for f in features], np.int32)}
    return inputs, targets


def windows_of(examples, tokenizer, seq_length, doc_stride, max_query_length, is_training):
    """The `SquadFeature`s of all `examples` (`make_squad_features` with `tokenizer`'s pieces), in order."""
    tokenize = tokenize_words(tokenizer)
    return [window for index, example in enumerate(examples)
            for window in make_squad_features(example, index, tokenize, seq_length, doc_stride,
                                              max_query_length, is_training)]
