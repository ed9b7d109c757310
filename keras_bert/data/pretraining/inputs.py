"""Which pre-training input a run reads: TFRecords, text files, a TFDS text dataset or the default corpus.

    source = PretrainingSource(files=["data/*.tfrecord"])          # or text files, tfds_name=..., or nothing
    dataset_fn = pretraining_dataset_fn(source, tokenizer, config, batch_size=32, is_training=True)
    strategy.distribute_datasets_from_function(dataset_fn)

TFRecords (by their header) are read as they were written; text (files, TFDS or the default corpus) is
paired and masked afresh each epoch (`stream.text_dataset`). With no files and no TFDS name the default
corpus is used, every 50th document held out for evaluation.
"""

import dataclasses
import itertools
import logging

from keras_bert.data.pretraining.corpus import check_documents
from keras_bert.data.pretraining.documents import read_documents, tfds_documents
from keras_bert.data.pretraining.reader import holds_tfrecords, tfrecord_dataset
from keras_bert.data.pretraining.stream import text_dataset

logger = logging.getLogger("keras_bert")
# The default corpus holds out every HELD_OUT_EVERY-th document for evaluation.
HELD_OUT_EVERY = 50


@dataclasses.dataclass(frozen=True)
class PretrainingSource:
    """Where pre-training text comes from, by the first of these given.

    Attributes:
        files: TFRecord or text files (a list of paths; see `documents.expand_patterns`).
        tfds_name: a prepared TFDS text dataset ("wikipedia/20230601.en"), read from `tfds_data_dir`, its
            `tfds_split`, documents in the feature `tfds_text_key`.
        name: how messages name this source (e.g. the flag it came from); default: the files or dataset.
    """

    files: tuple | list | None = None
    tfds_name: str | None = None
    tfds_data_dir: str | None = None
    tfds_text_key: str = "text"
    tfds_split: str = "train"
    name: str | None = None


def _every_nth(documents_fn, n, held_out):
    """Documents whose index % n == 0 (held_out) or all the others."""
    return lambda: (d for i, d in enumerate(documents_fn()) if (i % n == 0) == held_out)


def _documents_fn(source, is_training):
    """(documents_fn, name) of a text source."""
    if source.files:
        def documents_fn():
            stats = {}
            yield from read_documents(source.files, stats)
            if stats.get("empty_files"):
                # Named without its value ("--input_files", not the whole glob list).
                logger.warning("%s: skipped %d file(s) with no text", name.split("=")[0],
                               stats["empty_files"])

        name = source.name or ",".join(source.files)
        return documents_fn, name
    if source.tfds_name:
        return (lambda: tfds_documents(source.tfds_name, source.tfds_data_dir, source.tfds_text_key,
                                       source.tfds_split),
                source.name or f"TFDS {source.tfds_name} split {source.tfds_split}")
    from keras_bert.data.default_corpus import default_corpus_path

    corpus = [default_corpus_path()]
    return (_every_nth(lambda: read_documents(corpus), HELD_OUT_EVERY, held_out=not is_training),
            f"the default corpus {corpus[0]}")


def pretraining_dataset_fn(source, tokenizer, config, batch_size, is_training, pad_to_multiple_of=0):
    """`dataset_fn(input_context)` for `strategy.distribute_datasets_from_function` over `source` (a
    `PretrainingSource`): global `batch_size` split over the replicas, tokenized with `tokenizer`, paired
    and masked as `config` (a `PretrainingDataConfig`: sequence length, predictions, seed) says. Text
    sources are checked now (at least two documents for next-sentence pairs): ValueError naming it."""
    if source.files and holds_tfrecords(source.files):
        def tfrecord_fn(context):
            return tfrecord_dataset(source.files, context.get_per_replica_batch_size(batch_size),
                                    config.max_seq_length, config.max_predictions_per_seq,
                                    is_training=is_training, seed=config.seed, input_context=context,
                                    pad_to_multiple_of=pad_to_multiple_of)
        return tfrecord_fn
    documents_fn, name = _documents_fn(source, is_training)
    check_documents(list(itertools.islice(documents_fn(), 2)), name)  # fail now, not at the first step

    def text_fn(context):
        return text_dataset(documents_fn, tokenizer, config, context.get_per_replica_batch_size(batch_size),
                            is_training=is_training, input_context=context, source=name,
                            pad_to_multiple_of=pad_to_multiple_of)
    return text_fn
