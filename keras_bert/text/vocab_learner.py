"""Learning a WordPiece vocab from text, with words split exactly as `BertTokenizer` splits them.

Words come from `BasicWordSplitter` (the tokenizer's own splitter); words the tokenizer maps to [UNK]
whole (over `unicode_rules.MAX_CHARS_PER_WORD` characters) are left out.
"""

import collections
import glob
import heapq
import itertools
import logging
import os

import tensorflow as tf

from keras_bert.text import vocab as vocab_lib
from keras_bert.text.splitter import BasicWordSplitter
from keras_bert.text.unicode_rules import MAX_CHARS_PER_WORD
from keras_bert.textfiles import DataFormatError

logger = logging.getLogger("keras_bert")


def _check_utf8(path, line_number, line):
    # The splitter would read invalid bytes as U+FFFD and learn pieces of them: name the line instead.
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(path, line_number,
                              f"not valid UTF-8: byte 0x{line[e.start]:02x} at column {e.start + 1} "
                              f"({e.reason}); save the file as UTF-8") from None


def _expand_inputs(files_or_lines):
    """Yields text lines from a glob/path string, a list of globs/paths, or an iterable of lines."""
    if isinstance(files_or_lines, (str, os.PathLike)):
        files_or_lines = [os.fspath(files_or_lines)]
    items = list(files_or_lines)
    if (
        items
        and all(isinstance(item, (str, os.PathLike)) for item in items)
        and all(glob.has_magic(os.fspath(item)) or tf.io.gfile.exists(os.fspath(item)) for item in items)
    ):
        for pattern in items:
            paths = sorted(tf.io.gfile.glob(os.fspath(pattern)))
            if not paths:
                raise FileNotFoundError(f"input pattern {os.fspath(pattern)!r} matches no files.")
            for path in paths:
                with tf.io.gfile.GFile(path, "rb") as f:
                    for line_number, line in enumerate(f, 1):
                        _check_utf8(path, line_number, line)
                        yield line
    else:
        yield from items


def count_words(files_or_lines, lower_case=True, max_lines=None, batch_size=8192):
    """Counts the words of BertTokenizer's basic (pre-WordPiece) tokenization over a corpus.

    Args:
        files_or_lines: a path or glob, a list of paths/globs, or an iterable of str/bytes lines.
        lower_case: the tokenizer setting the vocab is for.
        max_lines: read at most this many lines (None: all).
        batch_size: lines per tokenizer call.

    Returns:
        collections.Counter mapping word (str) → count.
    """
    splitter = BasicWordSplitter(lower_case=lower_case)
    counts = collections.Counter()
    batch = []

    def flush():
        words = splitter.split(tf.constant(batch, tf.string)).flat_values
        unique, _, unique_counts = tf.unique_with_counts(words)
        for word, count in zip(unique.numpy(), unique_counts.numpy(), strict=True):
            counts[word.decode("utf-8")] += int(count)
        batch.clear()

    for index, line in enumerate(_expand_inputs(files_or_lines)):
        if max_lines is not None and index >= max_lines:
            break
        batch.append(line if isinstance(line, bytes) else str(line).encode("utf-8"))
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    return counts


def _merge_word(symbols, first, second):
    """Merges each adjacent (first, second) in a symbol tuple."""
    merged = first + second[2:] if second.startswith("##") else first + second
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == first and symbols[i + 1] == second:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out), merged


def learn_wordpiece_vocab(
    files_or_lines,
    vocab_size,
    lower_case=True,
    max_lines=None,
    reserved_tokens=vocab_lib.RESERVED_TOKENS,
    min_frequency=2,
    max_unique_chars=1000,
    word_counts=None,
):
    """Learns a WordPiece vocab whose words are split exactly as `BertTokenizer(lower_case=...)` splits them.

    Words come from this package's BERT basic tokenization (clean, CJK split, lower + accent strip when
    `lower_case`, punctuation split). Pieces are learned bottom-up: start from the characters (word
    initial and "##" forms) and repeatedly add the merge of the most frequent adjacent pair of pieces
    (ties: alphabetical), like the BPE-style trainers of WordPiece vocabs.

    Args:
        files_or_lines: a path or glob, a list of paths/globs, or an iterable of str/bytes lines.
        vocab_size: size of the returned vocab (smaller, with a warning naming both sizes, if no pair occurs
            `min_frequency` times any more).
        lower_case: whether the vocab is for an uncased tokenizer.
        max_lines: read at most this many lines (None: all).
        reserved_tokens: tokens put first, in order (default `[PAD] [UNK] [CLS] [SEP] [MASK]` at ids 0..4).
        min_frequency: a merge must occur at least this many times (counting word frequencies).
        max_unique_chars: keep only the most frequent characters; words with others are left out.
        word_counts: optional precomputed `count_words` result (then `files_or_lines` is not read).

    Returns:
        list of str: the vocab in id order, ready for `vocab.save_vocab`.
    """
    reserved_tokens = list(reserved_tokens)
    if vocab_size <= len(reserved_tokens):
        raise ValueError(
            f"vocab_size={vocab_size}; expected more than the {len(reserved_tokens)} reserved tokens."
        )
    if word_counts is None:
        word_counts = count_words(files_or_lines, lower_case=lower_case, max_lines=max_lines)
    if not word_counts:
        raise ValueError("the corpus has no words; expected non-empty text lines.")
    words, counts = _split_words(word_counts, _alphabet(word_counts, max_unique_chars))
    vocab = list(reserved_tokens)
    seen = set(vocab)
    initial = collections.Counter()
    for symbols, count in zip(words, counts, strict=True):
        for symbol in symbols:
            initial[symbol] += count
    merges = _merges(words, counts, min_frequency)
    for token in itertools.chain((s for s, _ in sorted(initial.items(), key=lambda kv: (-kv[1], kv[0]))),
                                 merges):
        if len(vocab) >= vocab_size:
            break
        if token not in seen:
            seen.add(token)
            vocab.append(token)
    if len(vocab) < vocab_size:
        logger.warning("the corpus yields %d tokens, fewer than vocab_size=%d: no pair of pieces left occurs "
                       "min_frequency=%d times (a larger corpus or a lower min_frequency gives more)",
                       len(vocab), vocab_size, min_frequency)
    return vocab_lib.check_vocab(vocab)


def _alphabet(word_counts, max_unique_chars):
    """The `max_unique_chars` most frequent characters of the words (ties: alphabetical)."""
    char_counts = collections.Counter()
    for word, count in word_counts.items():
        for char in word:
            char_counts[char] += count
    ranked = sorted(char_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:max_unique_chars]
    return {char for char, _ in ranked}


def _split_words(word_counts, alphabet):
    """(words as tuples of initial + "##" character pieces, their counts), alphabetically; words longer
    than the tokenizer takes or with characters outside `alphabet` are left out (the tokenizer makes them
    [UNK])."""
    words, counts = [], []
    for word, count in sorted(word_counts.items()):
        if len(word) > MAX_CHARS_PER_WORD or not set(word) <= alphabet:
            continue
        words.append(tuple([word[0]] + ["##" + char for char in word[1:]]))
        counts.append(count)
    return words, counts


def _merges(words, counts, min_frequency):
    """Yields the merged piece of the most frequent adjacent pair (ties: alphabetical), merging it in
    `words` (changed in place) before the next, until no pair occurs `min_frequency` times."""
    pair_counts = collections.Counter()
    pair_words = collections.defaultdict(set)
    for index, (symbols, count) in enumerate(zip(words, counts, strict=True)):
        for pair in zip(symbols, symbols[1:], strict=False):
            pair_counts[pair] += count
            pair_words[pair].add(index)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)
    while heap:
        negative, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negative:
            continue  # stale entry; the current count was pushed again
        if -negative < min_frequency:
            return
        changed = set()
        merged = None
        for index in pair_words.pop(pair, ()):
            old = words[index]
            new, merged = _merge_word(old, *pair)
            if new == old:
                continue
            for old_pair in zip(old, old[1:], strict=False):
                pair_counts[old_pair] -= counts[index]
                changed.add(old_pair)
            for new_pair in zip(new, new[1:], strict=False):
                pair_counts[new_pair] += counts[index]
                pair_words[new_pair].add(index)
                changed.add(new_pair)
            words[index] = new
        pair_counts.pop(pair, None)
        changed.discard(pair)
        for other in changed:
            if pair_counts[other] > 0:
                heapq.heappush(heap, (-pair_counts[other], other))
            else:
                pair_counts.pop(other, None)
        if merged is not None:
            yield merged
