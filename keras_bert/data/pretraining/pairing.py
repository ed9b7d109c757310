"""Next-sentence pairs for all documents at once (the original's loop, vectorized in numpy), and packing
them into [CLS] A [SEP] B [SEP] rows.

The original `create_instances_from_document` runs per document in plain Python; its port, the reference
these functions are tested against, is tests/data/pretraining_reference.py.
"""

import numpy as np


def _other_documents(documents, num_documents, rng):
    """A random document for each entry of `documents`; the original's ten tries to draw a different one."""
    other = rng.integers(0, num_documents, len(documents))
    for _ in range(9):
        same = np.nonzero(other == documents)[0]
        if not same.size:
            break
        other[same] = rng.integers(0, num_documents, same.size)
    return other


def _truncation_cuts(a_length, b_length, max_num_tokens):
    """Tokens `truncate_seq_pair` removes from A and from B (int arrays): the longer side alone down to
    equal length (B on ties), then B and A in turn, until the pair fits."""
    excess = np.maximum(a_length + b_length - max_num_tokens, 0)
    lead = a_length - b_length
    cut_a, cut_b = np.clip(lead, 0, excess), np.clip(-lead, 0, excess)
    rest = excess - cut_a - cut_b
    return cut_a + rest // 2, cut_b + rest - rest // 2


def create_instance_spans(corpus, dupe_factor, max_seq_length, short_seq_prob, rng, documents=None):
    """`create_instances_from_document` for every document (or those listed in `documents`), `dupe_factor`
    times, vectorized in numpy.

    Each (pass, document) is one lane running the original's loop: a target length (max_seq_length - 3, or
    with probability `short_seq_prob` uniform in [2, max_seq_length - 3]); consecutive sentences gathered
    until they reach it (or the document ends); a split point uniform among the sentence boundaries; B the
    rest of the chunk, or (half the time, and always for a one-sentence chunk) sentences of a random other
    document from a random sentence on, up to the target, the chunk's unused sentences being put back for
    the next pair; then the pair truncated, one token at a time from the longer side (B on ties), each from
    the front or the back at random. All lanes advance one pair per numpy step. Segments are runs of
    consecutive sentences, so a pair is two token ranges of `corpus.tokens`. Truncation draws the number
    of front removals per side as Binomial(removed, 1/2), the distribution of the original's coin flips.

    Args:
        corpus: a `TokenizedCorpus` with at least 2 documents (random B segments come from all of them).
        rng: a `np.random.Generator`.
        documents: indices of the documents to cut into pairs (default: all).

    Returns: dict of int64 [n] `a_start`, `a_length`, `b_start`, `b_length` (offsets into corpus.tokens)
    and int32 [n] `next_sentence_labels` (1 = random next), in (step, lane) order: shuffle before use.
    """
    max_num_tokens = max_seq_length - 3
    if max_num_tokens < 2:
        raise ValueError(f"max_seq_length={max_seq_length}; expected >= 5 ([CLS] A [SEP] B [SEP], 2+ tokens)")
    if documents is None:
        documents = np.arange(corpus.num_documents)
    lane_document = np.tile(np.asarray(documents, np.int64), dupe_factor)
    target = _target_lengths(len(lane_document), max_num_tokens, short_seq_prob, rng)
    position = corpus.document_starts[lane_document]
    steps = []
    while len(lane_document):
        step, position, alive = _next_pairs(corpus, lane_document, target, position, rng)
        steps.append(step)
        lane_document, target, position = lane_document[alive], target[alive], position[alive]
    return _truncated_pairs(steps, max_num_tokens, rng)


def _target_lengths(n, max_num_tokens, short_seq_prob, rng):
    """int64 [n]: each lane's target length, `max_num_tokens` or with probability `short_seq_prob` uniform
    in [2, max_num_tokens]."""
    target = np.full(n, max_num_tokens, np.int64)
    short = np.nonzero(rng.random(n) < short_seq_prob)[0]
    target[short] = rng.integers(2, max_num_tokens + 1, len(short))
    return target


def _next_pairs(corpus, lane_document, target, position, rng):
    """One pair per lane from its sentence `position` on.

    Returns: ((a_start, a_length, b_start, b_length, is_random) before truncation, the lanes' next
    sentence positions, bool: the lanes whose document has sentences left).
    """
    starts, document_starts = corpus.sentence_starts, corpus.document_starts
    last = document_starts[lane_document + 1] - 1
    # The chunk: sentences from `position` until their tokens reach the target, or the document's end.
    chunk_end = np.minimum(np.searchsorted(starts, starts[position] + target, "left") - 1, last)
    chunk_size = chunk_end - position + 1
    a_sentences = rng.integers(1, np.maximum(chunk_size, 2))  # uniform in [1, chunk_size - 1], or 1
    is_random = (chunk_size == 1) | (rng.random(len(position)) < 0.5)
    a_start, a_end = starts[position], starts[position + a_sentences]
    b_start, b_end = a_end.copy(), starts[chunk_end + 1]
    lanes = np.nonzero(is_random)[0]
    if len(lanes):
        target_b = target[lanes] - (a_end[lanes] - a_start[lanes])
        b_start[lanes], b_end[lanes] = _random_segments(corpus, lane_document[lanes], target_b, rng)
    position = np.where(is_random, position + a_sentences, chunk_end + 1)
    return (a_start, a_end - a_start, b_start, b_end - b_start, is_random), position, position <= last


def _random_segments(corpus, documents, target_b, rng):
    """(start, end) token offsets of random B segments: whole sentences of a random document other than
    each of `documents`, from a random sentence on until B reaches `target_b` (at least one sentence)."""
    starts, document_starts = corpus.sentence_starts, corpus.document_starts
    other = _other_documents(documents, corpus.num_documents, rng)
    first = document_starts[other]
    sentence = first + rng.integers(0, document_starts[other + 1] - first)
    end = np.searchsorted(starts, starts[sentence] + target_b, "left") - 1
    end = np.clip(end, sentence, document_starts[other + 1] - 1)
    return starts[sentence], starts[end + 1]


def _truncated_pairs(steps, max_num_tokens, rng):
    """The pairs of all steps, truncated to `max_num_tokens`, as `create_instance_spans` returns them."""
    a_start, a_length, b_start, b_length, is_random = (np.concatenate(column)
                                                       for column in zip(*steps, strict=True))
    cut_a, cut_b = _truncation_cuts(a_length, b_length, max_num_tokens)
    front_a, front_b = rng.binomial(cut_a, 0.5), rng.binomial(cut_b, 0.5)
    return {"a_start": a_start + front_a, "a_length": a_length - cut_a, "b_start": b_start + front_b,
            "b_length": b_length - cut_b, "next_sentence_labels": is_random.astype(np.int32)}


def with_special_tokens(tokens, max_seq_length, cls_id, sep_id):
    """`tokens` (int32 [T]) followed by [CLS], [SEP] and max_seq_length zeros: what `pack_spans` gathers
    from."""
    return np.concatenate([tokens, np.array([cls_id, sep_id], np.int32), np.zeros(max_seq_length, np.int32)])


def pack_spans(tokens, spans, max_seq_length, cls_id=None, sep_id=None):
    """Token ranges (from `create_instance_spans`) -> dict of numpy int32 arrays [n, max_seq_length]:
    `input_ids` ([CLS] a [SEP] b [SEP], 0-padded), `input_mask`, `segment_ids`, and
    `next_sentence_labels` [n].

    `tokens`: the corpus tokens; or, with cls_id and sep_id None, `with_special_tokens(tokens, ...)` (made
    once for many calls: it copies the corpus).
    """
    if cls_id is not None:
        tokens = with_special_tokens(tokens, max_seq_length, cls_id, sep_id)
    cls_at = len(tokens) - max_seq_length - 2  # then [SEP], then the zeros
    n = len(spans["a_start"])
    a_length, b_length = spans["a_length"], spans["b_length"]
    # Each row is six runs, [CLS] A [SEP] B [SEP] padding: one gather whose index counts up along each run.
    one = np.ones(n, np.int64)
    lengths = np.stack([one, a_length, one, b_length, one, max_seq_length - 3 - a_length - b_length],
                       1).ravel()
    sources = np.stack([one * cls_at, spans["a_start"], one * (cls_at + 1), spans["b_start"],
                        one * (cls_at + 1), one * (cls_at + 2)], 1).ravel()
    run_start = np.cumsum(lengths) - lengths
    index = np.repeat(sources - run_start, lengths) + np.arange(n * max_seq_length)
    column = np.arange(max_seq_length)[None, :]
    end = (a_length + b_length + 2)[:, None]  # column of the last [SEP]
    return {"input_ids": tokens.take(index).reshape(n, max_seq_length),
            "input_mask": (column <= end).astype(np.int32),
            "segment_ids": ((column > (a_length + 1)[:, None]) & (column <= end)).astype(np.int32),
            "next_sentence_labels": np.asarray(spans["next_sentence_labels"], np.int32)}


