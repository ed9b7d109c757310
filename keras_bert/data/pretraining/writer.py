"""Writing pre-training examples as TFRecord files of tf.train.Example with the original feature names:
one file from a dict of arrays, or a whole corpus into shards by a pool of threads."""

import collections
import concurrent.futures
import os

import numpy as np

from keras_bert.data import tfrecord
from keras_bert.data.pretraining.config import FEATURE_TO_INPUT
from keras_bert.data.pretraining.corpus import tokenize_corpus
from keras_bert.data.pretraining.documents import read_documents
from keras_bert.data.pretraining.examples import ExampleBuilder
from keras_bert.data.pretraining.statistics import count_statistics, statistics_from_counts


def write_examples(examples, path):
    """Writes a dict of numpy arrays (original names) as one TFRecord file of tf.train.Example; returns count.

    Written to `path + ".tmp"` and renamed, so a reader never sees half a file.
    """
    return tfrecord.write_examples_file({name: examples[name] for name in FEATURE_TO_INPUT}, path)


def write_pretraining_data(corpus, outputs, tokenizer, config, source="corpus", threads=None,
                           chunk_size=8192):
    """Builds the pre-training examples of a whole corpus and writes them as TFRecord shards.

    The arguments are those of `create_pretraining_examples` (`corpus` a `TokenizedCorpus`). Its examples,
    in its order, are split into len(outputs) consecutive runs, one per file; so the records do not depend
    on the number of outputs or of `threads`, and every shard's random B segments come from all documents.
    Chunks of `chunk_size` examples are packed, masked and encoded (`tfrecord.encode_examples`) by `threads`
    threads (default: one per CPU; the numpy work releases the GIL) while this thread writes them in order.

    Returns: one dict per output: `output`, `examples`, and the `example_statistics` of its examples.
    """
    builder = ExampleBuilder(corpus, tokenizer, config, source, chunk_size)
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
                parts.append((shard, buffer, offsets[first:last + 1],
                              count_statistics(part, tokenizer.mask_id)))
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
    return [dict(statistics_from_counts(counts), output=path, examples=counts["examples"])
            for path, counts in zip(outputs, totals, strict=True)]


def create_pretraining_files(files, outputs, tokenizer, config, source=None, threads=None):
    """Reads and tokenizes the corpus `files` (`read_documents`, `tokenize_corpus`) and writes its examples
    to the `outputs` shards (`write_pretraining_data`); `source` (default: the files) names them in errors.

    Returns (one statistics dict per output, a corpus summary dict: documents, sentences, tokens,
    empty_files).
    """
    read_stats = {}
    corpus = tokenize_corpus(read_documents(files, read_stats), tokenizer)
    shards = write_pretraining_data(corpus, outputs, tokenizer, config, source=source or ",".join(files),
                                    threads=threads)
    summary = {"documents": corpus.num_documents, "sentences": len(corpus.sentence_starts) - 1,
               "tokens": len(corpus.tokens), "empty_files": read_stats.get("empty_files", 0)}
    return shards, summary
