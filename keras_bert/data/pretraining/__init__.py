"""Pre-training data: documents -> tokenized corpus -> NSP pairs -> masks -> TFRecords, or a stream.

Two ways to feed `BertPretrainer`, both configured by one `PretrainingDataConfig`:
  * static: `create_pretraining_files` (or `tokenize_corpus` + `write_pretraining_data`) builds TFRecords with
    the original feature names (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`,
    `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`), masked once; `tfrecord_dataset` reads
    them back. No Python loop per sentence, pair or token: the corpus is three flat arrays
    (`TokenizedCorpus`), the original's NSP loop runs for all documents at once in numpy
    (`create_instance_spans`), and records are encoded in numpy (`keras_bert.data.tfrecord`).
  * streaming: `text_dataset` reads text files (or a TFDS text dataset) and masks afresh each epoch.
Both yield dicts with the model's names: `input_word_ids`, `input_mask`, `input_type_ids` plus the labels.

Modules, in the order the data flows: documents (reading files/TFDS), corpus (tokenizing), pairing (NSP
pairs, packing), masking (static masks; the rule is `keras_bert.text.masking`'s), examples (a corpus's
examples, chunk by chunk), statistics, writer (TFRecord shards), reader (TFRecords -> tf.data), stream;
inputs chooses among them for a run (`PretrainingSource`, `pretraining_dataset_fn`).
"""

from keras_bert.data.pretraining.config import FEATURE_TO_INPUT, PretrainingDataConfig
from keras_bert.data.pretraining.corpus import (
    TokenizedCorpus,
    check_documents,
    tokenize_corpus,
    tokenize_documents,
)
from keras_bert.data.pretraining.documents import (
    expand_patterns,
    read_documents,
    split_sentences,
    tfds_documents,
)
from keras_bert.data.pretraining.examples import create_pretraining_examples
from keras_bert.data.pretraining.inputs import PretrainingSource, pretraining_dataset_fn
from keras_bert.data.pretraining.masking import mask_tokens
from keras_bert.data.pretraining.pairing import create_instance_spans, pack_spans
from keras_bert.data.pretraining.reader import check_tfrecord_files, holds_tfrecords, tfrecord_dataset
from keras_bert.data.pretraining.statistics import example_statistics
from keras_bert.data.pretraining.stream import StreamOptions, shuffled, text_dataset
from keras_bert.data.pretraining.writer import (
    create_pretraining_files,
    write_examples,
    write_pretraining_data,
)

__all__ = [
    "FEATURE_TO_INPUT",
    "PretrainingDataConfig",
    "PretrainingSource",
    "TokenizedCorpus",
    "check_documents",
    "check_tfrecord_files",
    "create_instance_spans",
    "create_pretraining_examples",
    "create_pretraining_files",
    "example_statistics",
    "expand_patterns",
    "holds_tfrecords",
    "mask_tokens",
    "pack_spans",
    "pretraining_dataset_fn",
    "read_documents",
    "StreamOptions",
    "shuffled",
    "split_sentences",
    "text_dataset",
    "tfds_documents",
    "tfrecord_dataset",
    "tokenize_corpus",
    "tokenize_documents",
    "write_examples",
    "write_pretraining_data",
]
