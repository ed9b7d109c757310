"""A tokenized corpus as three flat numpy arrays (`TokenizedCorpus`), made by the tf-text tokenizer."""

from typing import NamedTuple

import numpy as np
import tensorflow as tf


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
                               np.concatenate([self.sentence_starts,
                                               other.sentence_starts[1:] + len(self.tokens)]),
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
        dataset = dataset.map(lambda batch: _ids_and_lengths(tokenizer(batch)),
                              num_parallel_calls=tf.data.AUTOTUNE)
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


def check_documents(documents, source):
    """Raises if NSP is impossible: fewer than two non-empty documents (a list or a TokenizedCorpus)."""
    count = documents.num_documents if isinstance(documents, TokenizedCorpus) else len(documents)
    if count < 2:
        raise ValueError(
            f"{source}: found {count} document(s) with text; next-sentence prediction needs at least 2 "
            "(documents are separated by blank lines)")

