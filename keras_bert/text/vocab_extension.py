"""Extending a WordPiece vocab with the pieces that shorten a domain's text most.

Candidates are the pieces `vocab_learner` learns on the domain text that the vocab lacks. They are chosen
greedily: each round takes the candidate that saves the most tokens on the domain's words given the
vocab so far (BERT's greedy longest-match-first WordPiece, counted in Python on the word counts), so a
piece whose saving an earlier one already took ("tokenizers" after "tokenizer") ranks lower. A candidate
that would turn a domain word the vocab could split into [UNK] (a dead end of the greedy match) is never
taken.

New tokens go first into the `[unusedK]` slots of Google's released vocabs (in id order), then are
appended, so every old token keeps its id. A word whose new tokenization uses no new piece gets the old
pieces: each greedy step picks the longest match, and if that match is an old token it was also the
longest among the old tokens. (The one exception, a word outside the domain that the greedy match of a new
piece leads to a dead end and so to [UNK], needs a character without its "##" piece in the vocab.)
"""

import dataclasses
import heapq
import logging
import re

from keras_bert.text import vocab as vocab_lib
from keras_bert.text import vocab_learner
from keras_bert.text.unicode_rules import MAX_CHARS_PER_WORD

logger = logging.getLogger("keras_bert")

UNUSED_TOKEN = re.compile(r"\[unused\d+\]")
_SUFFIX = "##"


@dataclasses.dataclass(frozen=True)
class VocabExtension:
    """A vocab with new tokens laid in.

    Attributes:
        vocab: list of str, the extended vocab in id order (old tokens keep their ids).
        old_size: int, the number of tokens of the vocab before extension.
        new_ids: dict str -> int, each new token's id (an `[unusedK]` slot or an appended id).
        pieces: dict int -> list of int, for each new id the old ids the old vocab split the token into
            ([UNK]'s id when the old vocab could not split it).
        tokens_saved: dict str -> int, the domain tokens each new token saved when it was chosen.
    """

    vocab: list
    old_size: int
    new_ids: dict
    pieces: dict
    tokens_saved: dict

    @property
    def num_unused_filled(self):
        return sum(1 for index in self.new_ids.values() if index < self.old_size)


def greedy_pieces(text, vocab, continuation=False, extra=None):
    """BERT's greedy longest-match-first split of one word (or, with `continuation`, of a "##" suffix).

    Args:
        text: str, a word as the basic tokenization gives it (lower-cased for an uncased vocab).
        vocab: a set (or dict) of str tokens.
        continuation: True when `text` continues a word, so its first piece takes the "##" form too.
        extra: optional str, one more token counted as in `vocab`.

    Returns:
        list of str pieces, or None where the greedy match reaches a dead end (the tokenizer gives [UNK]).
    """
    if len(text) > MAX_CHARS_PER_WORD:
        return None
    pieces, start = [], 0
    while start < len(text):
        for end in range(len(text), start, -1):
            piece = text[start:end] if start == 0 and not continuation else _SUFFIX + text[start:end]
            if piece in vocab or piece == extra:
                break
        else:
            return None
        pieces.append(piece)
        start = end
    return pieces


def _candidate_words(words, candidates):
    """candidate -> indices of the words in which it could be matched (word-initial or "##" inside)."""
    found = {}
    for index, word in enumerate(words):
        for start in range(len(word)):
            for end in range(start + 1, len(word) + 1):
                piece = word[start:end] if start == 0 else _SUFFIX + word[start:end]
                if piece in candidates:
                    found.setdefault(piece, set()).add(index)
    return found


def choose_new_tokens(word_counts, vocab, num_new_tokens, min_frequency=2, candidate_vocab_size=None):
    """The up to `num_new_tokens` pieces that save the most WordPiece tokens on a domain's words.

    Args:
        word_counts: dict str -> int, the domain's words as `vocab_learner.count_words` counts them.
        vocab: list of str, the current vocab.
        num_new_tokens: int > 0, how many pieces to choose.
        min_frequency: a learned piece must occur at least this many times in the domain text.
        candidate_vocab_size: size of the vocab learned on the domain for candidates (default: the current
            vocab's size).

    Returns:
        list of (token, tokens saved) in the order chosen; shorter than `num_new_tokens` when no other
        candidate saves a token.
    """
    if num_new_tokens <= 0:
        raise ValueError(f"num_new_tokens={num_new_tokens}; expected a positive number of tokens to add.")
    known = set(vocab)
    learned = vocab_learner.learn_wordpiece_vocab(
        None, vocab_size=candidate_vocab_size or len(vocab), min_frequency=min_frequency,
        word_counts=word_counts)
    candidates = {token for token in learned if token not in known and token not in vocab_lib.RESERVED_TOKENS}
    words = sorted(word for word in word_counts if len(word) <= MAX_CHARS_PER_WORD)
    counts = [word_counts[word] for word in words]
    current = [greedy_pieces(word, known) for word in words]
    # Lazy greedy: a popped saving is recomputed against the tokens chosen so far and taken only if it still
    # beats the next best stored one (savings mostly shrink as the vocab grows; one pass each is enough).
    heap = []
    by_candidate = _candidate_words(words, candidates)
    for token, indices in by_candidate.items():
        heap.append((-_saving(token, indices, words, counts, current, known), token))
    heapq.heapify(heap)
    chosen = []
    while heap and len(chosen) < num_new_tokens:
        _, token = heapq.heappop(heap)
        saving = _saving(token, by_candidate[token], words, counts, current, known)
        if heap and saving < -heap[0][0]:
            heapq.heappush(heap, (-saving, token))
            continue
        if saving <= 0:
            break
        known.add(token)
        for index in by_candidate[token]:
            current[index] = greedy_pieces(words[index], known)
        chosen.append((token, saving))
    if len(chosen) < num_new_tokens:
        logger.warning("only %d of the %d new tokens asked for save any token on the domain text",
                       len(chosen), num_new_tokens)
    return chosen


def _saving(token, indices, words, counts, current, known):
    """Tokens saved on the domain by adding `token` to `known`; -inf if a splittable word turns [UNK]."""
    saving = 0
    for index in indices:
        before = current[index]
        after = greedy_pieces(words[index], known, extra=token)
        if after is None and before is not None:
            return float("-inf")
        saving += counts[index] * ((len(before) if before else 1) - (len(after) if after else 1))
    return saving


def extend_vocab(vocab, new_tokens, tokens_saved=None):
    """Lays `new_tokens` into `vocab`: the `[unusedK]` slots first (in id order), then appended.

    Args:
        vocab: list of str, the current vocab (id order).
        new_tokens: list of str, tokens not in `vocab`.
        tokens_saved: optional dict str -> int to keep in the result.

    Returns:
        a `VocabExtension`; its `pieces` give each new id the old ids the old vocab split the token into.
    """
    vocab = vocab_lib.check_vocab(vocab)
    index = {token: i for i, token in enumerate(vocab)}
    present = [token for token in new_tokens if token in index]
    if present:
        raise ValueError(f"new token {present[0]!r} is already in the vocabulary (id {index[present[0]]}); "
                         f"expected tokens it lacks.")
    unused = [i for i, token in enumerate(vocab) if UNUSED_TOKEN.fullmatch(token)]
    extended = list(vocab)
    new_ids, pieces = {}, {}
    for position, token in enumerate(new_tokens):
        if position < len(unused):
            new_ids[token] = unused[position]
            extended[unused[position]] = token
        else:
            new_ids[token] = len(extended)
            extended.append(token)
        continuation = token.startswith(_SUFFIX)
        split = greedy_pieces(token.removeprefix(_SUFFIX), index, continuation=continuation)
        pieces[new_ids[token]] = [index[piece] for piece in split] if split else [index[vocab_lib.UNK]]
    return VocabExtension(vocab=vocab_lib.check_vocab(extended), old_size=len(vocab), new_ids=new_ids,
                          pieces=pieces, tokens_saved=dict(tokens_saved or {}))


def tokens_per_word(word_counts, vocab):
    """Mean WordPiece tokens per word of `word_counts` (dict str -> int) under `vocab` ([UNK] counts 1)."""
    known = set(vocab)
    tokens = words = 0
    for word, count in word_counts.items():
        pieces = greedy_pieces(word, known)
        tokens += count * (len(pieces) if pieces else 1)
        words += count
    return tokens / max(words, 1)
