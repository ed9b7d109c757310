"""The original run_squad.py's post-processing, kept as the reference that tasks.squad.answers (what
run_squad and the served span labeler decode with: answers as character spans) is tested and measured
against: per-window start/end logits -> the n best WordPiece spans -> `get_final_text`, which re-aligns the
detokenized prediction onto the whitespace words of the context (docs/tasks.md says where the two differ).
"""

import collections
import math

import numpy as np

from keras_bert.tasks.squad.reader import SquadPredictions
from keras_bert.text.unicode_rules import basic_tokenize


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
