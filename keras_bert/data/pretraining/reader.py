"""Reading pre-training TFRecords (the original's feature names) back as batches of model inputs, and
telling TFRecord files from text by their content."""

import os

import tensorflow as tf

from keras_bert.data import padding, tfrecord
from keras_bert.data.options import steady
from keras_bert.data.pretraining.config import FEATURE_TO_INPUT
from keras_bert.data.pretraining.documents import expand_patterns


def holds_tfrecords(files):
    """Whether `files` (paths) are TFRecords rather than text: True when any of them is
    (`tfrecord.is_tfrecord_file`; empty files are neither). Reads a record's worth of bytes per file."""
    return any(tfrecord.is_tfrecord_file(path) for path in files)


def check_tfrecord_files(files, is_training):
    """Raises ValueError naming a non-empty file of `files` that is not TFRecords; when training, also when
    every file is empty (repeating no records would wait forever)."""
    for path in files:
        if os.path.getsize(path) and not tfrecord.is_tfrecord_file(path):
            raise ValueError(f"{path}: not a TFRecord file (its first record's length and CRC do not parse); "
                             "expected the files create_pretraining_data writes")
    if is_training and not any(os.path.getsize(path) for path in files):
        raise ValueError(f"{', '.join(files)}: every file is empty; training needs at least one record")


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

    Raises ValueError (`check_tfrecord_files`) for a file that is not TFRecords, or only empty files when
    training. Returns: `tf.data.Dataset` of dicts: `input_word_ids`, `input_mask`, `input_type_ids` int32
    [b, seq], `masked_lm_positions`, `masked_lm_ids` int32 [b, max_pred], `masked_lm_weights` float32
    [b, max_pred], `next_sentence_labels` int32 [b].
    """
    files = expand_patterns(file_patterns)
    check_tfrecord_files(files, is_training)
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
        dataset = padding.bucket_by_length(dataset, batch_size, max_seq_length, pad_to_multiple_of,
                                           is_training)
        dataset = dataset.map(lambda features: padding.trim_padding(_to_model_names(features),
                                                                    pad_to_multiple_of),
                              num_parallel_calls=tf.data.AUTOTUNE)
    else:
        dataset = dataset.batch(batch_size, drop_remainder=is_training)
        dataset = dataset.map(lambda records: _to_model_names(tf.io.parse_example(records, spec)),
                              num_parallel_calls=tf.data.AUTOTUNE)
    return steady(dataset.prefetch(tf.data.AUTOTUNE))
