"""Pre-training data: corpus reading, NSP instances, static masking, TFRecords, and a streaming path.

Corpus format (the original's): UTF-8 text files, one sentence per line, a blank line between documents.

Two ways to feed `BertPretrainer`:
  * `create_pretraining_examples` + `write_examples` (or, for a whole corpus, `tokenize_corpus` +
    `write_pretraining_data`) build TFRecords with the original feature names (`input_ids`, `input_mask`,
    `segment_ids`, `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`),
    masked once ("static"); `tfrecord_dataset` reads them back. No Python loop per sentence, pair or
    token: the corpus is three flat arrays (`TokenizedCorpus`), the original's NSP loop runs for all
    documents at once in numpy (`create_instance_spans`), and records are encoded in numpy (`tfrecord`).
  * `text_dataset` streams straight from text files (or a TFDS text dataset) and masks afresh each epoch.
Both yield dicts with the model's names: `input_word_ids`, `input_mask`, `input_type_ids` plus the labels.
"""

import collections
import concurrent.futures
import glob
import os
import random
import re
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from keras_bert.data import padding, tfrecord
from keras_bert.text.masking import MaskedLMMasker

# Original TFRecord feature name -> model input name.
FEATURE_TO_INPUT = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
    "masked_lm_positions": "masked_lm_positions",
    "masked_lm_ids": "masked_lm_ids",
    "masked_lm_weights": "masked_lm_weights",
    "next_sentence_labels": "next_sentence_labels",
}

# Sentence boundary for prose given as paragraphs (TFDS text): end punctuation, space, capital/quote/digit.
_SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def expand_patterns(patterns, flag="input_files"):
    """Comma-separated file names/globs (str or list) -> sorted list of files. Raises if one matches none."""
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    files = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern.strip()))
        if not matched:
            raise FileNotFoundError(f"--{flag}: no file matches {pattern!r}")
        files.extend(matched)
    if not files:
        raise ValueError(f"--{flag} is empty; expected comma-separated files or globs")
    return files


def read_documents(files, stats=None):
    """Yields documents (lists of sentence str) from corpus files: a blank line ends a document.

    Lines are stripped; documents without any sentence are skipped and counted in `stats["empty_files"]`
    (files with no text). Non-UTF-8 bytes raise `UnicodeDecodeError`-derived ValueError naming file:line.
    """
    stats = {} if stats is None else stats
    for path in files:
        document, seen_text = [], False
        with open(path, "rb") as f:
            for line_number, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise ValueError(f"{path}:{line_number}: not valid UTF-8 ({e.reason} at byte {e.start} of the "
                                     "line); the corpus must be UTF-8 text") from None
                if line:
                    document.append(line)
                    seen_text = True
                elif document:
                    yield document
                    document = []
        if document:
            yield document  # a file's end also ends its last document
        if not seen_text:
            stats["empty_files"] = stats.get("empty_files", 0) + 1


def split_sentences(text):
    """A paragraph-form document (str) -> list of sentences (rule-based: . ! ? then a capital)."""
    sentences = []
    for paragraph in text.splitlines():
        sentences.extend(s.strip() for s in _SENTENCE_BOUNDARY.split(paragraph) if s.strip())
    return sentences


def tfds_documents(name, data_dir=None, text_key="text", split="train"):
    """Yields documents (lists of sentences) from a TFDS text dataset the user has already prepared."""
    import tensorflow_datasets as tfds

    try:
        dataset = tfds.load(name, data_dir=data_dir, split=split, download=False)
    except Exception as e:  # noqa: BLE001 - re-raised with the flags that name the dataset
        raise ValueError(f"--tfds_name={name!r} (--tfds_data_dir={data_dir!r}) could not be loaded: {e}") from e
    for example in dataset.as_numpy_iterator():
        if text_key not in example:
            raise ValueError(f"--tfds_text_key={text_key!r} is not a feature of {name}; it has {sorted(example)}")
        sentences = split_sentences(example[text_key].decode("utf-8", "replace"))
        if sentences:
            yield sentences


class TokenizedCorpus(NamedTuple):
    """A tokenized corpus as three flat arrays (no Python object per sentence).

    Sentence s is tokens[sentence_starts[s]:sentence_starts[s + 1]]; document d is sentences
    document_starts[d] .. document_starts[d + 1] - 1. Every sentence and every document is non-empty.
    """

    tokens: np.ndarray  # int32 [num_tokens]
    sentence_starts: np.ndarray  # int64 [num_sentences + 1]
    document_starts: np.ndarray  # int64 [num_documents + 1]

    @property
    def num_documents(self):
        return len(self.document_starts) - 1

    @classmethod
    def from_documents(cls, documents):
        """From documents as lists of token-id sequences; empty sentences and documents are dropped."""
        documents = [[np.asarray(s, np.int32) for s in d] for d in documents]
        lengths = np.array([len(s) for d in documents for s in d], np.int64)
        tokens = np.concatenate([s for d in documents for s in d] or [np.zeros(0, np.int32)])
        return _corpus_from_lengths(tokens, lengths, [len(d) for d in documents])

    @classmethod
    def empty(cls):
        return cls(np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64))

    def append(self, other):
        """This corpus followed by the documents of `other`."""
        return TokenizedCorpus(np.concatenate([self.tokens, other.tokens]),
                               np.concatenate([self.sentence_starts, other.sentence_starts[1:] + len(self.tokens)]),
                               np.concatenate([self.document_starts,
                                               other.document_starts[1:] + self.document_starts[-1]]))

    def last_documents(self, n):
        """The corpus of the last `n` documents."""
        if n >= self.num_documents:
            return self
        sentence = self.document_starts[-n - 1]
        token = self.sentence_starts[sentence]
        return TokenizedCorpus(self.tokens[token:], self.sentence_starts[sentence:] - token,
                               self.document_starts[-n - 1:] - sentence)

    def to_documents(self):
        """Lists of int32 arrays, one list per document (as `tokenize_documents` returns them)."""
        sentences = np.split(self.tokens, self.sentence_starts[1:-1])
        bounds = self.document_starts.tolist()
        return [sentences[start:end] for start, end in zip(bounds[:-1], bounds[1:], strict=True)]


def _corpus_from_lengths(tokens, sentence_lengths, document_sizes):
    """TokenizedCorpus from concatenated tokens, tokens per sentence and sentences per document."""
    keep = sentence_lengths > 0
    document_of = np.repeat(np.arange(len(document_sizes)), document_sizes)[keep]
    per_document = np.bincount(document_of, minlength=len(document_sizes))
    sentence_starts = np.zeros(keep.sum() + 1, np.int64)
    np.cumsum(sentence_lengths[keep], out=sentence_starts[1:])
    document_starts = np.zeros(np.count_nonzero(per_document) + 1, np.int64)
    np.cumsum(per_document[per_document > 0], out=document_starts[1:])
    return TokenizedCorpus(tokens.astype(np.int32, copy=False), sentence_starts, document_starts)


def _ids_and_lengths(ragged):
    return ragged.flat_values, ragged.row_lengths()


def tokenize_corpus(documents, tokenizer, batch_lines=4096, parallel=True):
    """Tokenizes documents (lists of sentence str) with the tf-text tokenizer into a `TokenizedCorpus`.

    Sentences go through the tokenizer in batches of `batch_lines`: with `parallel`, in a tf.data map over all
    cores (the tf-text ops release the GIL; the map is traced once per call, worth it for a corpus); else
    eagerly, one batch after another (for the small chunks a stream tokenizes). Sentences that give no
    word pieces and documents left empty are dropped.
    """
    document_sizes, lines = [], []
    for document in documents:
        document_sizes.append(len(document))
        lines.extend(document)
    lines = tf.constant(lines, tf.string)
    if parallel and len(lines) > batch_lines:
        dataset = tf.data.Dataset.from_tensor_slices(lines).batch(batch_lines)
        dataset = dataset.map(lambda batch: _ids_and_lengths(tokenizer(batch)), num_parallel_calls=tf.data.AUTOTUNE)
        parts = list(dataset.prefetch(tf.data.AUTOTUNE).as_numpy_iterator())
    else:
        parts = [[t.numpy() for t in _ids_and_lengths(tokenizer(lines[start:start + batch_lines]))]
                 for start in range(0, max(len(lines), 1), batch_lines)]
    tokens = np.concatenate([values for values, _ in parts])
    lengths = np.concatenate([lengths for _, lengths in parts])
    return _corpus_from_lengths(tokens, lengths, document_sizes)


def tokenize_documents(documents, tokenizer, batch_lines=8192):
    """Tokenizes documents (lists of sentences) in large batches with the tf-text tokenizer, eagerly.

    Returns a list of documents, each a list of int32 numpy arrays (one per sentence); sentences that give
    no word pieces and documents left empty are dropped.
    """
    return tokenize_corpus(documents, tokenizer, batch_lines, parallel=False).to_documents()


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Truncates the longer of two lists in place, one token at a time, from the front or back at random."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob, rng):
    """NSP segment pairs from one document, the original `create_pretraining_data.py` loop in plain Python.

    The pipelines use `create_instance_spans` (the same algorithm for all documents at once, in numpy); this
    one is the reference it is tested against and the baseline of benchmarks/create_pretraining_data.py.

    Args:
        all_documents: list of documents, each a list of sentences (sequences of token ids).
        document_index: the document to cut into pairs.
        max_seq_length: packed length including [CLS] and two [SEP]s.
        short_seq_prob: probability of a shorter random target length (to reduce train/test mismatch).
        rng: a `random.Random`.

    Returns: list of (tokens_a, tokens_b, is_random_next) with lists of ids; half of the B segments (and
    all of those from a one-chunk document) come from a random other document.
    """
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances, current_chunk, current_length, i = [], [], 0, 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            a_end = rng.randint(1, len(current_chunk) - 1) if len(current_chunk) >= 2 else 1
            tokens_a = [t for s in current_chunk[:a_end] for t in s]
            tokens_b = []
            if len(current_chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                # Ten tries for another document, as the original (a one-document corpus is refused earlier).
                for _ in range(10):
                    random_index = rng.randint(0, len(all_documents) - 1)
                    if random_index != document_index:
                        break
                random_document = all_documents[random_index]
                for sentence in random_document[rng.randint(0, len(random_document) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                # The unused segments go back to the document for the next pair.
                i -= len(current_chunk) - a_end
            else:
                is_random_next = False
                tokens_b = [t for s in current_chunk[a_end:] for t in s]
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                instances.append((tokens_a, tokens_b, is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances


def check_documents(documents, source):
    """Raises if NSP is impossible: fewer than two non-empty documents (a list or a TokenizedCorpus)."""
    count = documents.num_documents if isinstance(documents, TokenizedCorpus) else len(documents)
    if count < 2:
        raise ValueError(
            f"{source}: found {count} document(s) with text; next-sentence prediction needs at least 2 "
            "(documents are separated by blank lines)")


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
    starts, document_starts = corpus.sentence_starts, corpus.document_starts
    if documents is None:
        documents = np.arange(corpus.num_documents)
    lane_document = np.tile(np.asarray(documents, np.int64), dupe_factor)
    target = np.full(len(lane_document), max_num_tokens, np.int64)
    short = np.nonzero(rng.random(len(lane_document)) < short_seq_prob)[0]
    target[short] = rng.integers(2, max_num_tokens + 1, len(short))
    position = document_starts[lane_document]
    steps = []
    while len(lane_document):
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
            other = _other_documents(lane_document[lanes], corpus.num_documents, rng)
            first = document_starts[other]
            sentence = first + rng.integers(0, document_starts[other + 1] - first)
            target_b = target[lanes] - (a_end[lanes] - a_start[lanes])
            # Whole sentences until B reaches its target (at least one), within that document.
            end = np.searchsorted(starts, starts[sentence] + target_b, "left") - 1
            end = np.clip(end, sentence, document_starts[other + 1] - 1)
            b_start[lanes], b_end[lanes] = starts[sentence], starts[end + 1]
        steps.append((a_start, a_end - a_start, b_start, b_end - b_start, is_random))
        position = np.where(is_random, position + a_sentences, chunk_end + 1)
        alive = position <= last
        lane_document, target, position = lane_document[alive], target[alive], position[alive]
    a_start, a_length, b_start, b_length, is_random = (np.concatenate(column) for column in zip(*steps, strict=True))
    cut_a, cut_b = _truncation_cuts(a_length, b_length, max_num_tokens)
    front_a, front_b = rng.binomial(cut_a, 0.5), rng.binomial(cut_b, 0.5)
    return {"a_start": a_start + front_a, "a_length": a_length - cut_a, "b_start": b_start + front_b,
            "b_length": b_length - cut_b, "next_sentence_labels": is_random.astype(np.int32)}


def with_special_tokens(tokens, max_seq_length, cls_id, sep_id):
    """`tokens` (int32 [T]) followed by [CLS], [SEP] and max_seq_length zeros: what `pack_spans` gathers from."""
    return np.concatenate([tokens, np.array([cls_id, sep_id], np.int32), np.zeros(max_seq_length, np.int32)])


def pack_spans(tokens, spans, max_seq_length, cls_id=None, sep_id=None):
    """Token ranges (from `create_instance_spans`) -> dict of numpy int32 arrays [n, max_seq_length]:
    `input_ids` ([CLS] a [SEP] b [SEP], 0-padded), `input_mask`, `segment_ids`, and `next_sentence_labels` [n].

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
    lengths = np.stack([one, a_length, one, b_length, one, max_seq_length - 3 - a_length - b_length], 1).ravel()
    sources = np.stack([one * cls_at, spans["a_start"], one * (cls_at + 1), spans["b_start"], one * (cls_at + 1),
                        one * (cls_at + 2)], 1).ravel()
    run_start = np.cumsum(lengths) - lengths
    index = np.repeat(sources - run_start, lengths) + np.arange(n * max_seq_length)
    column = np.arange(max_seq_length)[None, :]
    end = (a_length + b_length + 2)[:, None]  # column of the last [SEP]
    return {"input_ids": tokens.take(index).reshape(n, max_seq_length),
            "input_mask": (column <= end).astype(np.int32),
            "segment_ids": ((column > (a_length + 1)[:, None]) & (column <= end)).astype(np.int32),
            "next_sentence_labels": np.asarray(spans["next_sentence_labels"], np.int32)}


def _choose_tokens(candidate, budget, rng):
    """(rows, columns) of `budget` (capped by the candidates) candidate positions per row, uniformly at
    random: row-major, columns ascending within a row."""
    n, seq = candidate.shape
    width = min(int(budget.max(initial=1)), seq)
    # Random 31-bit keys that end in the column number (distinct, so no ties); non-candidates last.
    bits = max(1, (seq - 1).bit_length())
    keys = (rng.integers(0, 1 << 32, (n, seq), dtype=np.uint32) >> (bits + 1) << bits).view(np.int32)
    keys |= np.arange(seq, dtype=np.int32)
    keys[~candidate] = np.iinfo(np.int32).max
    smallest = np.sort(np.partition(keys, width - 1, axis=1)[:, :width] if width < seq else keys, axis=1)
    taken = (smallest != np.iinfo(np.int32).max) & (np.arange(width)[None, :] < budget[:, None])
    columns = np.where(taken, smallest & ((1 << bits) - 1), seq)
    columns.sort(axis=1)
    taken = columns < seq
    return np.nonzero(taken)[0], columns[taken]


def _choose_words(candidate, budget, continuation, rng):
    """Bool [n, seq]: whole words chosen as the original: a candidate "##" piece joins the last candidate
    group; the groups are shuffled and taken in turn, skipping one that would pass the budget, until full."""
    n, seq = candidate.shape
    leader = candidate & ~(continuation & (np.cumsum(candidate, axis=1) > 1))
    group = np.cumsum(leader, axis=1) - 1
    num_groups = leader.sum(axis=1)
    index = np.arange(n)[:, None] * seq + group
    group_size = np.bincount(index[candidate], minlength=n * seq).reshape(n, seq)
    keys = rng.random((n, seq), dtype=np.float32)
    keys[np.arange(seq)[None, :] >= num_groups[:, None]] = 2.0
    order = np.argsort(keys, axis=1)
    sizes = np.take_along_axis(group_size, order, 1)
    used, taken = np.zeros(n, np.int64), np.zeros((n, seq), bool)
    rows = np.nonzero(num_groups > 0)[0]
    for rank in range(seq):
        if not len(rows):
            break
        size = sizes[rows, rank]
        fits = used[rows] + size <= budget[rows]
        used[rows[fits]] += size[fits]
        taken[rows[fits], rank] = True
        rows = rows[(used[rows] < budget[rows]) & (rank + 1 < num_groups[rows])]
    taken_group = np.zeros((n, seq), bool)
    np.put_along_axis(taken_group, order, taken, axis=1)
    return candidate & np.take_along_axis(taken_group, np.where(candidate, group, 0), 1)


def mask_tokens(features, max_predictions_per_seq, masked_lm_prob, vocab_size, mask_id, special_ids,
                np_rng, word_start=None):
    """The original's `create_masked_lm_predictions`, vectorized over a batch of packed instances (numpy).

    Per row, min(max_predictions_per_seq, max(1, round(length * masked_lm_prob))) positions (length counts
    [CLS] and [SEP], as the original) among the non-special ones, uniformly at random; with `word_start`
    (bool [vocab_size], False for "##" pieces) whole words as the original: a "##" piece joins the last
    candidate word, words are taken in random order, one that would pass the budget is skipped. Each
    chosen position becomes [MASK] 80%, stays 10%, a uniformly random vocab id 10%. Special ids ([UNK]
    included) are never chosen, as in `MaskedLMMasker`; the original only excludes [CLS] and [SEP].

    Returns `features` plus `masked_lm_positions`, `masked_lm_ids` (int32), `masked_lm_weights` (float32)
    [n, max_predictions_per_seq], positions ascending and 0-padded; `input_ids` is a masked copy.
    """
    input_ids = features["input_ids"]
    n, seq = input_ids.shape
    is_special = np.zeros(max(vocab_size, max(special_ids) + 1, int(input_ids.max(initial=0)) + 1), bool)
    is_special[list(special_ids)] = True
    real = features["input_mask"] > 0
    candidate = real & ~is_special[input_ids]
    budget = np.minimum(max_predictions_per_seq,
                        np.maximum(1, np.round(real.sum(axis=1) * masked_lm_prob).astype(np.int64)))
    if word_start is None:
        rows, columns = _choose_tokens(candidate, budget, np_rng)
    else:
        rows, columns = np.nonzero(_choose_words(candidate, budget, ~np.asarray(word_start)[input_ids], np_rng))
    originals = input_ids[rows, columns]
    action = np_rng.random(len(rows))
    random_ids = np_rng.integers(0, vocab_size, len(rows))
    masked = input_ids.copy()
    masked[rows, columns] = np.where(action < 0.8, mask_id, np.where(action < 0.9, originals, random_ids))
    count = np.bincount(rows, minlength=n)
    slot = np.arange(len(rows)) - (np.cumsum(count) - count)[rows]
    positions = np.zeros((n, max_predictions_per_seq), np.int32)
    ids = np.zeros((n, max_predictions_per_seq), np.int32)
    weights = np.zeros((n, max_predictions_per_seq), np.float32)
    positions[rows, slot], ids[rows, slot], weights[rows, slot] = columns, originals, 1.0
    return dict(features, input_ids=masked, masked_lm_positions=positions, masked_lm_ids=ids,
                masked_lm_weights=weights)


def _statistic_counts(examples, mask_id):
    """Counts behind `example_statistics` (they add up over batches of examples)."""
    weights = examples["masked_lm_weights"] > 0
    rows = np.nonzero(weights)[0]
    shown = examples["input_ids"][rows, examples["masked_lm_positions"][weights]]
    original = examples["masked_lm_ids"][weights]
    return {"examples": len(examples["input_ids"]), "random_next": int(examples["next_sentence_labels"].sum()),
            "real_tokens": int(examples["input_mask"].sum()), "masked": len(shown),
            "mask_token": int(np.sum(shown == mask_id)), "kept": int(np.sum((shown == original) & (shown != mask_id))),
            "random_token": int(np.sum((shown != original) & (shown != mask_id)))}


def _fractions(counts):
    masked = max(counts["masked"], 1)
    return {
        "random_next_fraction": counts["random_next"] / max(counts["examples"], 1),
        "masked_fraction": counts["masked"] / max(counts["real_tokens"], 1),
        "mask_token_fraction": counts["mask_token"] / masked,
        "kept_fraction": counts["kept"] / masked,
        "random_token_fraction": counts["random_token"] / masked,
    }


def example_statistics(examples, mask_id=None):
    """Checks on built examples (dict of numpy arrays, original names): fraction of random-next pairs,
    masked tokens per real token, and among masked positions the fractions replaced by [MASK], kept, and
    replaced by another token. `mask_id` defaults to the most frequent replacement id."""
    if mask_id is None:
        weights = examples["masked_lm_weights"] > 0
        shown = examples["input_ids"][np.nonzero(weights)[0], examples["masked_lm_positions"][weights]]
        mask_id = int(np.bincount(shown).argmax()) if len(shown) else 0
    return _fractions(_statistic_counts(examples, mask_id))


def word_start_table(vocab):
    """bool [len(vocab)]: True for tokens that start a word (not "##" continuations)."""
    return np.array([not token.startswith("##") for token in vocab], bool)


class _ExampleBuilder:
    """What `create_pretraining_examples` and `write_pretraining_data` share: the shuffled NSP spans of the
    whole corpus, cut into chunks of `chunk_size` examples, each packed and masked with its own seed."""

    def __init__(self, documents, max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                 dupe_factor, vocab_size, cls_id, sep_id, mask_id, special_ids, seed, word_start, source,
                 chunk_size):
        self.corpus = (documents if isinstance(documents, TokenizedCorpus)
                       else TokenizedCorpus.from_documents(documents))
        check_documents(self.corpus, source)
        rng = np.random.default_rng(seed)
        spans = create_instance_spans(self.corpus, dupe_factor, max_seq_length, short_seq_prob, rng)
        order = rng.permutation(len(spans["a_start"]))  # the original shuffles all instances
        self.spans = {name: values[order] for name, values in spans.items()}
        self.size = len(order)
        self.num_chunks = max(1, -(-self.size // chunk_size))
        self.chunk_size, self.seed, self.max_seq_length = chunk_size, seed, max_seq_length
        self.tokens = with_special_tokens(self.corpus.tokens, max_seq_length, cls_id, sep_id)
        self.word_start = word_start
        self.mask_args = (max_predictions_per_seq, masked_lm_prob, vocab_size, mask_id, special_ids)

    def build(self, chunk):
        """The examples of chunk `chunk` (dict of numpy arrays, original names)."""
        start = chunk * self.chunk_size
        spans = {name: values[start:start + self.chunk_size] for name, values in self.spans.items()}
        features = pack_spans(self.tokens, spans, self.max_seq_length)
        rng = np.random.default_rng([self.seed, chunk])
        return mask_tokens(features, *self.mask_args, rng, self.word_start)


def create_pretraining_examples(documents, max_seq_length, max_predictions_per_seq, masked_lm_prob,
                                short_seq_prob, dupe_factor, vocab_size, cls_id, sep_id, mask_id, special_ids,
                                seed, word_start=None, source="corpus", chunk_size=8192):
    """Tokenized documents -> static-masked examples, shuffled: dict of numpy arrays (original names).

    `documents`: a `TokenizedCorpus` or lists of token-id sequences. `dupe_factor` passes over the documents,
    each with fresh pairs (`create_instance_spans`) and masks (`mask_tokens`), as the original. The same
    arguments give the examples `write_pretraining_data` writes, in the same order.
    """
    builder = _ExampleBuilder(documents, max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                              dupe_factor, vocab_size, cls_id, sep_id, mask_id, special_ids, seed, word_start,
                              source, chunk_size)
    parts = [builder.build(chunk) for chunk in range(builder.num_chunks)]
    return {name: np.concatenate([part[name] for part in parts]) for name in FEATURE_TO_INPUT}


def write_examples(examples, path):
    """Writes a dict of numpy arrays (original names) as one TFRecord file of tf.train.Example; returns count.

    Written to `path + ".tmp"` and renamed, so a reader never sees half a file.
    """
    return tfrecord.write_examples_file({name: examples[name] for name in FEATURE_TO_INPUT}, path)


def write_pretraining_data(corpus, outputs, max_seq_length, max_predictions_per_seq, masked_lm_prob,
                           short_seq_prob, dupe_factor, vocab_size, cls_id, sep_id, mask_id, special_ids, seed,
                           word_start=None, source="corpus", threads=None, chunk_size=8192):
    """Builds the pre-training examples of a whole corpus and writes them as TFRecord shards.

    The arguments are those of `create_pretraining_examples` (`corpus` a `TokenizedCorpus`). Its examples,
    in its order, are split into len(outputs) consecutive runs, one per file; so the records do not depend
    on the number of outputs or of `threads`, and every shard's random B segments come from all documents.
    Chunks of `chunk_size` examples are packed, masked and encoded (`tfrecord.encode_examples`) by `threads`
    threads (default: one per CPU; the numpy work releases the GIL) while this thread writes them in order.

    Returns: one dict per output: `output`, `examples`, and the `example_statistics` of its examples.
    """
    builder = _ExampleBuilder(corpus, max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                              dupe_factor, vocab_size, cls_id, sep_id, mask_id, special_ids, seed, word_start,
                              source, chunk_size)
    bounds = np.linspace(0, builder.size, len(outputs) + 1).astype(np.int64)

    def work(chunk):
        """Encoded records of one chunk, cut where output files change: [(shard, buffer, offsets, counts)]."""
        examples = builder.build(chunk)
        buffer, offsets = tfrecord.encode_examples({name: examples[name] for name in FEATURE_TO_INPUT})
        start, stop = chunk * chunk_size, chunk * chunk_size + len(offsets) - 1
        parts = []
        for shard in range(np.searchsorted(bounds, start, "right") - 1, len(outputs)):
            first, last = max(bounds[shard], start) - start, min(bounds[shard + 1], stop) - start
            if first < last:
                part = {name: values[first:last] for name, values in examples.items()}
                parts.append((shard, buffer, offsets[first:last + 1], _statistic_counts(part, mask_id)))
            if bounds[shard + 1] >= stop:
                break
        return parts

    threads = threads or os.cpu_count() or 1
    totals = [collections.Counter() for _ in outputs]
    writer, pending = tfrecord.ShardedRecordWriter(outputs), collections.deque()

    def write_next():
        for shard, buffer, offsets, counts in pending.popleft().result():
            writer.write(shard, buffer, offsets)
            totals[shard].update(counts)

    with writer, concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for chunk in range(builder.num_chunks):
            pending.append(pool.submit(work, chunk))
            if len(pending) > 2 * threads:  # bounded look-ahead: encoded chunks wait in memory
                write_next()
        while pending:
            write_next()
    return [dict(_fractions(counts), output=path, examples=counts["examples"])
            for path, counts in zip(outputs, totals, strict=True)]


def _parse_spec(max_seq_length, max_predictions_per_seq):
    spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
            for name in ("input_ids", "input_mask", "segment_ids")}
    for name in ("masked_lm_positions", "masked_lm_ids"):
        spec[name] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64)
    spec["masked_lm_weights"] = tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32)
    spec["next_sentence_labels"] = tf.io.FixedLenFeature([1], tf.int64)
    return spec


def _to_model_names(features):
    """Original feature dict (int64) -> model input dict (int32; weights float32; labels [batch])."""
    out = {}
    for name, tensor in features.items():
        if name == "next_sentence_labels":
            tensor = tf.reshape(tensor, [-1])
        out[FEATURE_TO_INPUT[name]] = tf.cast(tensor, tf.float32 if name == "masked_lm_weights" else tf.int32)
    return out


def tfrecord_dataset(file_patterns, batch_size, max_seq_length, max_predictions_per_seq, is_training=True,
                     seed=None, input_context=None, pad_to_multiple_of=0):
    """Reads pre-training TFRecords (the original's features) into batched dicts of model inputs.

    Args:
        file_patterns: comma-separated files/globs or a list.
        batch_size: examples per batch (per input pipeline).
        max_seq_length, max_predictions_per_seq: the lengths the records were written with.
        is_training: repeat forever and shuffle (files and examples); else one pass in order.
        input_context: a `tf.distribute.InputContext` to shard by input pipeline.
        pad_to_multiple_of: 0, or batch rows of similar length and cut padding to a multiple of this
            (`keras_bert.data.padding`); seq is then the batch's length.

    Returns: `tf.data.Dataset` of dicts: `input_word_ids`, `input_mask`, `input_type_ids` int32 [b, seq],
    `masked_lm_positions`, `masked_lm_ids` int32 [b, max_pred], `masked_lm_weights` float32 [b, max_pred],
    `next_sentence_labels` int32 [b].
    """
    files = expand_patterns(file_patterns)
    num_shards, shard_id = ((input_context.num_input_pipelines, input_context.input_pipeline_id)
                            if input_context else (1, 0))
    # Enough files: each pipeline reads its own; else all read everything and keep every n-th example.
    shard_files = len(files) >= num_shards
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shard_files:
        dataset = dataset.shard(num_shards, shard_id)
    if is_training:
        dataset = dataset.shuffle(len(files), seed=seed).repeat()
        dataset = dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(4, len(files)),
                                     num_parallel_calls=tf.data.AUTOTUNE, deterministic=seed is not None)
        dataset = dataset.shuffle(10_000, seed=seed)
    else:
        dataset = tf.data.TFRecordDataset(dataset)
    if not shard_files:
        dataset = dataset.shard(num_shards, shard_id)
    spec = _parse_spec(max_seq_length, max_predictions_per_seq)
    if pad_to_multiple_of:  # parse in batches, then regroup by length
        dataset = dataset.batch(1024).map(lambda records: tf.io.parse_example(records, spec),
                                          num_parallel_calls=tf.data.AUTOTUNE).unbatch()
        dataset = padding.bucket_by_length(dataset, batch_size, max_seq_length, pad_to_multiple_of, is_training)
        dataset = dataset.map(lambda features: padding.trim_padding(_to_model_names(features), pad_to_multiple_of),
                              num_parallel_calls=tf.data.AUTOTUNE)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=is_training)
        dataset = dataset.map(lambda records: _to_model_names(tf.io.parse_example(records, spec)),
                              num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def shuffled(items, buffer_size, rng):
    """`items` (an iterable) in a random order through a buffer of `buffer_size`, as tf.data's shuffle: each
    item read replaces a randomly chosen buffered one, which is yielded; the rest come out shuffled at the end.
    With a buffer at least as large as the input, a uniform permutation; 0: the input order."""
    if buffer_size <= 0:
        yield from items
        return
    buffer = []
    for item in items:
        if len(buffer) < buffer_size:
            buffer.append(item)
            continue
        index = rng.integers(buffer_size)
        yield buffer[index]
        buffer[index] = item
    rng.shuffle(buffer)
    yield from buffer


def text_dataset(documents_fn, tokenizer, batch_size, max_seq_length, max_predictions_per_seq,
                 masked_lm_prob=0.15, short_seq_prob=0.1, whole_word_mask=False, seed=0, is_training=True,
                 document_buffer=1000, chunk_documents=256, input_context=None, source="text_dataset corpus",
                 pad_to_multiple_of=0, document_shuffle_buffer=10_000):
    """Streams pre-training batches from raw documents, with fresh NSP pairs and masks every epoch.

    A Python generator reads the documents in a shuffled order, tokenizes them in chunks and cuts them into
    packed, unmasked NSP pairs (with `create_instance_spans`, as the TFRecord path, B segments drawn from a
    rolling document buffer); the batches are then masked by `MaskedLMMasker` in a parallel tf.data map
    (dynamic masking: a new mask for every batch of every epoch, reproducible from `seed`).

    Args:
        documents_fn: a callable returning an iterable of documents (lists of sentence str), e.g.
            `lambda: read_documents(files)` or `lambda: tfds_documents(name, data_dir, text_key)`.
        tokenizer: a `keras_bert.text.BertTokenizer` (tf-text; runs on chunks of `chunk_documents`).
        batch_size, max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob: as the
            TFRecord path; whole_word_mask masks all pieces of a word together.
        seed: int (or None: not reproducible) for the pairs, the example order and the masks.
        document_buffer: how many recent documents the random NSP segments are drawn from.
        document_shuffle_buffer: documents are read in a random order through a buffer of this many (the
            original shuffles all documents; files often hold related documents next to each other, which
            would make the random B segments related to A); 0 keeps the file order.
        is_training: repeat forever (a new epoch re-pairs and re-masks with a new seed).
        input_context: a `tf.distribute.InputContext`; each input pipeline reads every n-th document.
        source: names the input in errors (e.g. the flag and its value).
        pad_to_multiple_of: as `tfrecord_dataset`.

    Returns: the same element structure as `tfrecord_dataset`. Iterating raises (as a tf.errors.
    InvalidArgumentError carrying the message) if a pass finds fewer than two documents with text.
    """
    masker = MaskedLMMasker(tokenizer.vocab_size, tokenizer.mask_id, tokenizer.special_ids,
                            max_predictions_per_seq, masked_lm_prob, whole_word_mask=whole_word_mask,
                            vocab=tokenizer.vocab if whole_word_mask else None)
    num_shards, shard_id = ((input_context.num_input_pipelines, input_context.input_pipeline_id)
                            if input_context else (1, 0))

    def generate(epoch):
        rng = np.random.default_rng(None if seed is None else [seed, epoch, shard_id])
        buffer, chunk = TokenizedCorpus.empty(), []

        def instances_from(chunk):
            # The newest `document_buffer` documents; random B segments come from any of them.
            nonlocal buffer
            tokenized = tokenize_corpus(chunk, tokenizer, parallel=False)
            buffer = buffer.append(tokenized).last_documents(max(document_buffer, tokenized.num_documents))
            if buffer.num_documents < 2 or not tokenized.num_documents:
                return None
            spans = create_instance_spans(buffer, 1, max_seq_length, short_seq_prob, rng, documents=np.arange(
                buffer.num_documents - tokenized.num_documents, buffer.num_documents))
            order = rng.permutation(len(spans["a_start"]))
            return pack_spans(buffer.tokens, {k: v[order] for k, v in spans.items()}, max_seq_length,
                              tokenizer.cls_id, tokenizer.sep_id)

        def own_documents():
            for index, document in enumerate(documents_fn()):
                if index % num_shards == shard_id:
                    yield document

        for document in shuffled(own_documents(), document_shuffle_buffer, rng):
            chunk.append(document)
            if len(chunk) == chunk_documents or (buffer.num_documents < 2 and len(chunk) == 2):
                features = instances_from(chunk)
                chunk = []
                if features is not None:
                    yield features
        if chunk:
            features = instances_from(chunk)
            if features is not None:
                yield features
        check_documents(buffer, source)

    signature = {
        "input_ids": tf.TensorSpec([None, max_seq_length], tf.int32),
        "input_mask": tf.TensorSpec([None, max_seq_length], tf.int32),
        "segment_ids": tf.TensorSpec([None, max_seq_length], tf.int32),
        "next_sentence_labels": tf.TensorSpec([None], tf.int32),
    }
    epochs = tf.data.Dataset.range(2**62 if is_training else 1)
    dataset = epochs.flat_map(
        lambda epoch: tf.data.Dataset.from_generator(generate, args=(epoch,), output_signature=signature))
    # The generator (Python, serial) runs ahead while the steps below shuffle, batch and mask.
    dataset = dataset.prefetch(2).unbatch()
    if is_training:
        dataset = dataset.shuffle(4 * batch_size + 1000, seed=seed)
    if pad_to_multiple_of:
        dataset = padding.bucket_by_length(dataset, batch_size, max_seq_length, pad_to_multiple_of, is_training)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=is_training)
    # One stateless seed (int64 [2]) per batch; re-iterating a training dataset draws new ones.
    mask_seed = None if seed is None else random.Random(f"{seed}-mask-{shard_id}").getrandbits(62)
    seeds = tf.data.Dataset.random(mask_seed, rerandomize_each_iteration=is_training).batch(2)

    def mask(features, mask_seed):
        inputs = masker({FEATURE_TO_INPUT[k]: v for k, v in features.items()}, seed=mask_seed)
        return padding.trim_padding(inputs, pad_to_multiple_of) if pad_to_multiple_of else inputs

    dataset = tf.data.Dataset.zip(dataset, seeds).map(mask, num_parallel_calls=tf.data.AUTOTUNE)
    options = tf.data.Options()
    # Each input pipeline already reads only its own documents.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)
