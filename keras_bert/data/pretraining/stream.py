"""Streaming pre-training batches from raw documents: fresh NSP pairs and masks every epoch."""

import dataclasses
import random

import numpy as np
import tensorflow as tf

from keras_bert.data import padding
from keras_bert.data.options import steady
from keras_bert.data.pretraining.config import FEATURE_TO_INPUT
from keras_bert.data.pretraining.corpus import TokenizedCorpus, check_documents, tokenize_corpus
from keras_bert.data.pretraining.pairing import create_instance_spans, pack_spans
from keras_bert.text.masking import MaskedLMMasker


def shuffled(items, buffer_size, rng):
    """`items` (an iterable) in a random order through a buffer of `buffer_size`, as tf.data's shuffle:
    each item read replaces a randomly chosen buffered one, which is yielded; the rest come out shuffled at
    the end. With a buffer at least as large as the input, a uniform permutation; 0: the input order."""
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


@dataclasses.dataclass(frozen=True)
class StreamOptions:
    """How a stream reads its documents.

    Attributes:
        document_buffer: how many recent documents the random NSP segments are drawn from.
        chunk_documents: documents tokenized together (one tf-text call each).
        document_shuffle_buffer: documents are read in a random order through a buffer of this many (the
            original shuffles all documents; files often hold related documents next to each other, which
            would make the random B segments related to A); 0 keeps the file order.
    """

    document_buffer: int = 1000
    chunk_documents: int = 256
    document_shuffle_buffer: int = 10_000


def text_dataset(documents_fn, tokenizer, config, batch_size, is_training=True, input_context=None,
                 source="text_dataset corpus", pad_to_multiple_of=0, stream=StreamOptions()):
    """Streams pre-training batches from raw documents, with fresh NSP pairs and masks every epoch.

    A Python generator reads the documents in a shuffled order, tokenizes them in chunks and cuts them into
    packed, unmasked NSP pairs (with `create_instance_spans`, as the TFRecord path, B segments drawn from a
    rolling document buffer); the batches are then masked by `MaskedLMMasker` in a parallel tf.data map
    (dynamic masking: a new mask for every batch of every epoch, reproducible from `seed`).

    Args:
        documents_fn: a callable returning an iterable of documents (lists of sentence str), e.g.
            `lambda: read_documents(files)` or `lambda: tfds_documents(name, data_dir, text_key)`.
        tokenizer: a `keras_bert.text.BertTokenizer` (tf-text; runs on chunks of `stream.chunk_documents`).
        config: a `PretrainingDataConfig`, as the TFRecord path (its dupe_factor unused: every epoch
            re-pairs); its seed (int, or None: not reproducible) draws the pairs, the order and the masks.
        batch_size: examples per batch (per input pipeline).
        is_training: repeat forever (a new epoch re-pairs and re-masks with a new seed).
        input_context: a `tf.distribute.InputContext`; each input pipeline reads every n-th document.
        source: names the input in errors (e.g. the flag and its value).
        pad_to_multiple_of: as `tfrecord_dataset`.
        stream: a `StreamOptions` (document buffer, chunk size, document shuffle buffer).

    Returns: the same element structure as `tfrecord_dataset`. Iterating raises (as a tf.errors.
    InvalidArgumentError carrying the message) if a pass finds fewer than two documents with text.
    """
    shard = (input_context.num_input_pipelines, input_context.input_pipeline_id) if input_context else (1, 0)
    pairs = _PackedPairs(documents_fn, tokenizer, config, stream, shard, source)
    length = config.max_seq_length
    signature = {
        "input_ids": tf.TensorSpec([None, length], tf.int32),
        "input_mask": tf.TensorSpec([None, length], tf.int32),
        "segment_ids": tf.TensorSpec([None, length], tf.int32),
        "next_sentence_labels": tf.TensorSpec([None], tf.int32),
    }
    epochs = tf.data.Dataset.range(2**62 if is_training else 1)
    dataset = epochs.flat_map(
        lambda epoch: tf.data.Dataset.from_generator(pairs, args=(epoch,), output_signature=signature))
    # The generator (Python, serial) runs ahead while the steps below shuffle, batch and mask.
    dataset = dataset.prefetch(2).unbatch()
    if is_training:
        dataset = dataset.shuffle(4 * batch_size + 1000, seed=config.seed)
    if pad_to_multiple_of:
        dataset = padding.bucket_by_length(dataset, batch_size, length, pad_to_multiple_of, is_training)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=is_training)
    dataset = _masked(dataset, tokenizer, config, shard[1], is_training, pad_to_multiple_of)
    options = tf.data.Options()
    # Each input pipeline already reads only its own documents.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return steady(dataset.with_options(options).prefetch(tf.data.AUTOTUNE))


def _masked(dataset, tokenizer, config, shard_id, is_training, pad_to_multiple_of):
    """Batches of packed pairs masked by a `MaskedLMMasker`, one stateless seed (int64 [2]) per batch;
    re-iterating a training dataset draws new ones."""
    masker = MaskedLMMasker(tokenizer.vocab_size, tokenizer.mask_id, tokenizer.special_ids,
                            config.max_predictions_per_seq, config.masked_lm_prob,
                            whole_word_mask=config.whole_word_mask,
                            vocab=tokenizer.vocab if config.whole_word_mask else None)
    seed = config.seed
    mask_seed = None if seed is None else random.Random(f"{seed}-mask-{shard_id}").getrandbits(62)
    seeds = tf.data.Dataset.random(mask_seed, rerandomize_each_iteration=is_training).batch(2)

    def mask(features, mask_seed):
        inputs = masker({FEATURE_TO_INPUT[k]: v for k, v in features.items()}, seed=mask_seed)
        return padding.trim_padding(inputs, pad_to_multiple_of) if pad_to_multiple_of else inputs

    return tf.data.Dataset.zip(dataset, seeds).map(mask, num_parallel_calls=tf.data.AUTOTUNE)


class _PackedPairs:
    """The generator of one epoch's packed, unmasked NSP pairs (numpy feature dicts of a chunk each) from
    this input pipeline's documents (`shard`: (num_shards, shard_id)), in a shuffled order."""

    def __init__(self, documents_fn, tokenizer, config, stream, shard, source):
        self.documents_fn, self.tokenizer, self.config = documents_fn, tokenizer, config
        self.stream, self.shard, self.source = stream, shard, source

    def __call__(self, epoch):
        seed, (num_shards, shard_id) = self.config.seed, self.shard
        rng = np.random.default_rng(None if seed is None else [seed, epoch, shard_id])
        buffer, chunk = TokenizedCorpus.empty(), []
        own = (d for index, d in enumerate(self.documents_fn()) if index % num_shards == shard_id)
        for document in shuffled(own, self.stream.document_shuffle_buffer, rng):
            chunk.append(document)
            if len(chunk) == self.stream.chunk_documents or (buffer.num_documents < 2 and len(chunk) == 2):
                buffer, features = self._instances(chunk, buffer, rng)
                chunk = []
                if features is not None:
                    yield features
        if chunk:
            buffer, features = self._instances(chunk, buffer, rng)
            if features is not None:
                yield features
        check_documents(buffer, self.source)

    def _instances(self, chunk, buffer, rng):
        """(the newest `document_buffer` documents, `chunk`'s included; the packed pairs of `chunk`'s
        documents with B segments from any of them, or None)."""
        tokenizer, length = self.tokenizer, self.config.max_seq_length
        tokenized = tokenize_corpus(chunk, tokenizer, parallel=False)
        kept = max(self.stream.document_buffer, tokenized.num_documents)
        buffer = buffer.append(tokenized).last_documents(kept)
        if buffer.num_documents < 2 or not tokenized.num_documents:
            return buffer, None
        new = np.arange(buffer.num_documents - tokenized.num_documents, buffer.num_documents)
        spans = create_instance_spans(buffer, 1, length, self.config.short_seq_prob, rng, documents=new)
        order = rng.permutation(len(spans["a_start"]))
        return buffer, pack_spans(buffer.tokens, {k: v[order] for k, v in spans.items()}, length,
                                  tokenizer.cls_id, tokenizer.sep_id)
