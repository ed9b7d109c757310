"""Streaming pre-training batches from raw documents: fresh NSP pairs and masks every epoch."""

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


def text_dataset(documents_fn, tokenizer, config, batch_size, is_training=True, document_buffer=1000,
                 chunk_documents=256, input_context=None, source="text_dataset corpus", pad_to_multiple_of=0,
                 document_shuffle_buffer=10_000):
    """Streams pre-training batches from raw documents, with fresh NSP pairs and masks every epoch.

    A Python generator reads the documents in a shuffled order, tokenizes them in chunks and cuts them into
    packed, unmasked NSP pairs (with `create_instance_spans`, as the TFRecord path, B segments drawn from a
    rolling document buffer); the batches are then masked by `MaskedLMMasker` in a parallel tf.data map
    (dynamic masking: a new mask for every batch of every epoch, reproducible from `seed`).

    Args:
        documents_fn: a callable returning an iterable of documents (lists of sentence str), e.g.
            `lambda: read_documents(files)` or `lambda: tfds_documents(name, data_dir, text_key)`.
        tokenizer: a `keras_bert.text.BertTokenizer` (tf-text; runs on chunks of `chunk_documents`).
        config: a `PretrainingDataConfig`, as the TFRecord path (its dupe_factor unused: every epoch re-pairs);
            its seed (int, or None: not reproducible) draws the pairs, the example order and the masks.
        batch_size: examples per batch (per input pipeline).
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
                            config.max_predictions_per_seq, config.masked_lm_prob,
                            whole_word_mask=config.whole_word_mask,
                            vocab=tokenizer.vocab if config.whole_word_mask else None)
    seed, max_seq_length = config.seed, config.max_seq_length
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
            spans = create_instance_spans(buffer, 1, max_seq_length, config.short_seq_prob, rng, documents=np.arange(
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
    return steady(dataset.with_options(options).prefetch(tf.data.AUTOTUNE))
