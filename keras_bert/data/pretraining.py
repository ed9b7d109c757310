"""Pre-training data: corpus reading, NSP instances, static masking, TFRecords, and a streaming path.

Corpus format (the original's): UTF-8 text files, one sentence per line, a blank line between documents.

Two ways to feed `BertPretrainer`:
  * `create_pretraining_examples` + `write_examples` build TFRecords with the original feature names
    (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`,
    `next_sentence_labels`), masked once ("static"); `tfrecord_dataset` reads them back.
  * `text_dataset` streams straight from text files (or a TFDS text dataset) and masks afresh each epoch.
Both yield dicts with the model's names: `input_word_ids`, `input_mask`, `input_type_ids` plus the labels.
"""

import glob
import os
import random
import re

import numpy as np
import tensorflow as tf

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


def tokenize_documents(documents, tokenizer, batch_lines=8192):
    """Tokenizes documents (lists of sentences) in large batches with the tf-text tokenizer.

    Returns a list of documents, each a list of int32 numpy arrays (one per sentence); sentences that give
    no word pieces and documents left empty are dropped.
    """
    documents = list(documents)
    lines = [sentence for document in documents for sentence in document]
    pieces = []
    for start in range(0, len(lines), batch_lines):
        ragged = tokenizer(tf.constant(lines[start:start + batch_lines]))
        values, splits = ragged.flat_values.numpy(), ragged.row_splits.numpy()
        pieces.extend(np.split(values, splits[1:-1]))
    result, index = [], 0
    for document in documents:
        sentences = [p for p in pieces[index:index + len(document)] if len(p)]
        index += len(document)
        if sentences:
            result.append(sentences)
    return result


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Truncates the longer of two lists in place, one token at a time, from the front or back at random."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob, rng):
    """NSP segment pairs from one document, as the original `create_pretraining_data.py`.

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
    """Raises if NSP is impossible: fewer than two non-empty documents."""
    if len(documents) < 2:
        raise ValueError(
            f"{source}: found {len(documents)} document(s) with text; next-sentence prediction needs at least 2 "
            "(documents are separated by blank lines)")


def pack_instances(instances, max_seq_length, cls_id, sep_id):
    """(tokens_a, tokens_b, is_random_next) list -> dict of numpy arrays [n, max_seq_length]:
    `input_ids` ([CLS] a [SEP] b [SEP], 0-padded), `input_mask`, `segment_ids`, `next_sentence_labels` [n]
    (1 = random next, as the original)."""
    n = len(instances)
    input_ids = np.zeros((n, max_seq_length), np.int32)
    segment_ids = np.zeros((n, max_seq_length), np.int32)
    lengths = np.zeros(n, np.int32)
    for row, (tokens_a, tokens_b, _) in enumerate(instances):
        len_a, len_b = len(tokens_a), len(tokens_b)
        input_ids[row, 0] = cls_id
        input_ids[row, 1:1 + len_a] = tokens_a
        input_ids[row, 1 + len_a] = sep_id
        input_ids[row, 2 + len_a:2 + len_a + len_b] = tokens_b
        input_ids[row, 2 + len_a + len_b] = sep_id
        segment_ids[row, 2 + len_a:3 + len_a + len_b] = 1
        lengths[row] = 3 + len_a + len_b
    input_mask = (np.arange(max_seq_length)[None, :] < lengths[:, None]).astype(np.int32)
    labels = np.array([int(r) for _, _, r in instances], np.int32)
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
            "next_sentence_labels": labels}


def mask_tokens(features, max_predictions_per_seq, masked_lm_prob, vocab_size, mask_id, special_ids,
                np_rng, word_start=None):
    """The original's masking, vectorized over a batch of packed instances (numpy, in place on a copy).

    Picks min(max_predictions_per_seq, max(1, round(length * masked_lm_prob))) non-special positions per
    row at random (whole words when `word_start` — bool [vocab_size], False for "##" pieces — is given);
    each becomes [MASK] 80%, stays 10%, a random vocab id 10%.

    Returns `features` plus `masked_lm_positions`, `masked_lm_ids` (int32), `masked_lm_weights` (float32)
    [n, max_predictions_per_seq], positions ascending and 0-padded.
    """
    input_ids = features["input_ids"].copy()
    n, seq = input_ids.shape
    lengths = features["input_mask"].sum(axis=1)
    candidate = features["input_mask"].astype(bool) & ~np.isin(input_ids, list(special_ids))
    num_to_predict = np.minimum(max_predictions_per_seq,
                                np.maximum(1, np.round(lengths * masked_lm_prob).astype(np.int64)))
    if word_start is None:
        scores = np.where(candidate, np_rng.random((n, seq)), np.inf)
    else:
        # A continuation piece takes its word's random score (and sorts right after the word's first piece).
        starts = candidate & (word_start[input_ids] | ~np.roll(candidate, 1, axis=1))
        word_number = np.cumsum(starts, axis=1)
        word_scores = np_rng.random((n, seq + 1))
        scores = np.take_along_axis(word_scores, word_number, axis=1) + np.arange(seq) * 1e-9
        scores = np.where(candidate, scores, np.inf)
    order = np.argsort(scores, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(seq)[None, :].repeat(n, 0), axis=1)
    chosen = candidate & (rank < np.minimum(num_to_predict, candidate.sum(axis=1))[:, None])
    if word_start is not None:
        # Whole words only: drop a word the budget cut through (the original skips words that would exceed it).
        rows_index = np.arange(n)[:, None].repeat(seq, 1)
        word_length = np.zeros((n, seq + 1), np.int64)
        chosen_length = np.zeros((n, seq + 1), np.int64)
        np.add.at(word_length, (rows_index[candidate], word_number[candidate]), 1)
        np.add.at(chosen_length, (rows_index[chosen], word_number[chosen]), 1)
        chosen &= np.take_along_axis(chosen_length, word_number, 1) == np.take_along_axis(word_length, word_number, 1)
    rows, cols = np.nonzero(chosen)  # row-major: positions ascending within each row
    originals = input_ids[rows, cols]
    action = np_rng.random(len(rows))
    replaced = np.where(action < 0.8, mask_id,
                        np.where(action < 0.9, originals, np_rng.integers(0, vocab_size, len(rows))))
    input_ids[rows, cols] = replaced
    slot = np.cumsum(chosen, axis=1)[rows, cols] - 1
    positions = np.zeros((n, max_predictions_per_seq), np.int32)
    ids = np.zeros((n, max_predictions_per_seq), np.int32)
    weights = np.zeros((n, max_predictions_per_seq), np.float32)
    positions[rows, slot], ids[rows, slot], weights[rows, slot] = cols, originals, 1.0
    return dict(features, input_ids=input_ids, masked_lm_positions=positions, masked_lm_ids=ids,
                masked_lm_weights=weights)


def example_statistics(examples, mask_id=None):
    """Checks on built examples (dict of numpy arrays, original names): fraction of random-next pairs,
    masked tokens per real token, and among masked positions the fractions replaced by [MASK], kept, and
    replaced by another token. `mask_id` defaults to the most frequent replacement id."""
    weights = examples["masked_lm_weights"] > 0
    rows = np.nonzero(weights)[0]
    shown = examples["input_ids"][rows, examples["masked_lm_positions"][weights]]
    original = examples["masked_lm_ids"][weights]
    if mask_id is None:
        mask_id = int(np.bincount(shown).argmax()) if len(shown) else 0
    total = max(len(shown), 1)
    return {
        "random_next_fraction": float(examples["next_sentence_labels"].mean()),
        "masked_fraction": float(weights.sum() / max(examples["input_mask"].sum(), 1)),
        "mask_token_fraction": float(np.sum(shown == mask_id) / total),
        "kept_fraction": float(np.sum((shown == original) & (shown != mask_id)) / total),
        "random_token_fraction": float(np.sum((shown != original) & (shown != mask_id)) / total),
    }


def word_start_table(vocab):
    """bool [len(vocab)]: True for tokens that start a word (not "##" continuations)."""
    return np.array([not token.startswith("##") for token in vocab], bool)


def create_pretraining_examples(documents, max_seq_length, max_predictions_per_seq, masked_lm_prob,
                                short_seq_prob, dupe_factor, vocab_size, cls_id, sep_id, mask_id, special_ids,
                                seed, word_start=None, source="corpus"):
    """Tokenized documents -> static-masked examples, shuffled: dict of numpy arrays (original names).

    `dupe_factor` passes over the documents, each with fresh pairs and masks (as the original).
    """
    check_documents(documents, source)
    rng = random.Random(seed)
    documents = list(documents)
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(create_instances_from_document(documents, index, max_seq_length, short_seq_prob, rng))
    rng.shuffle(instances)
    features = pack_instances(instances, max_seq_length, cls_id, sep_id)
    return mask_tokens(features, max_predictions_per_seq, masked_lm_prob, vocab_size, mask_id, special_ids,
                       np.random.default_rng(seed), word_start)


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def write_examples(examples, path):
    """Writes a dict of numpy arrays (original names) as one TFRecord file of tf.train.Example; returns count.

    Written to `path + ".tmp"` and renamed, so a reader never sees half a file.
    """
    n = len(examples["input_ids"])
    lists = {name: array.tolist() for name, array in examples.items()}
    with tf.io.TFRecordWriter(path + ".tmp") as writer:
        for i in range(n):
            feature = {name: _int_feature(lists[name][i]) for name in
                       ("input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids")}
            feature["masked_lm_weights"] = tf.train.Feature(
                float_list=tf.train.FloatList(value=lists["masked_lm_weights"][i]))
            feature["next_sentence_labels"] = _int_feature([lists["next_sentence_labels"][i]])
            writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    os.replace(path + ".tmp", path)
    return n


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
                     seed=None, input_context=None):
    """Reads pre-training TFRecords (the original's features) into batched dicts of model inputs.

    Args:
        file_patterns: comma-separated files/globs or a list.
        batch_size: examples per batch (per input pipeline).
        max_seq_length, max_predictions_per_seq: the lengths the records were written with.
        is_training: repeat forever and shuffle (files and examples); else one pass in order.
        input_context: a `tf.distribute.InputContext` to shard by input pipeline.

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
    dataset = dataset.batch(batch_size, drop_remainder=is_training)
    dataset = dataset.map(lambda records: _to_model_names(tf.io.parse_example(records, spec)),
                          num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)


def text_dataset(documents_fn, tokenizer, batch_size, max_seq_length, max_predictions_per_seq,
                 masked_lm_prob=0.15, short_seq_prob=0.1, whole_word_mask=False, seed=0, is_training=True,
                 document_buffer=1000, chunk_documents=256, input_context=None, source="text_dataset corpus"):
    """Streams pre-training batches from raw documents, with fresh NSP pairs and masks every epoch.

    A Python generator tokenizes chunks of documents and cuts them into packed, unmasked NSP pairs; the
    batches are then masked by `MaskedLMMasker` in a parallel tf.data map (dynamic masking: a new mask for
    every batch of every epoch, reproducible from `seed`).

    Args:
        documents_fn: a callable returning an iterable of documents (lists of sentence str), e.g.
            `lambda: read_documents(files)` or `lambda: tfds_documents(name, data_dir, text_key)`.
        tokenizer: a `keras_bert.text.BertTokenizer` (tf-text; runs on chunks of `chunk_documents`).
        batch_size, max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob: as the
            TFRecord path; whole_word_mask masks all pieces of a word together.
        seed: int (or None: not reproducible) for the pairs, the example order and the masks.
        document_buffer: how many recent documents the random NSP segments are drawn from.
        is_training: repeat forever (a new epoch re-pairs and re-masks with a new seed).
        input_context: a `tf.distribute.InputContext`; each input pipeline reads every n-th document.
        source: names the input in errors (e.g. the flag and its value).

    Returns: the same element structure as `tfrecord_dataset`. Iterating raises (as a tf.errors.
    InvalidArgumentError carrying the message) if a pass finds fewer than two documents with text.
    """
    masker = MaskedLMMasker(tokenizer.vocab_size, tokenizer.mask_id, tokenizer.special_ids,
                            max_predictions_per_seq, masked_lm_prob, whole_word_mask=whole_word_mask,
                            vocab=tokenizer.vocab if whole_word_mask else None)
    num_shards, shard_id = ((input_context.num_input_pipelines, input_context.input_pipeline_id)
                            if input_context else (1, 0))

    def generate(epoch):
        rng = random.Random(f"{seed}-{epoch}-{shard_id}")
        buffer, chunk, seen = [], [], 0

        def instances_from(chunk):
            tokenized = tokenize_documents(chunk, tokenizer)
            buffer.extend(tokenized)
            del buffer[:-document_buffer]
            if len(buffer) < 2:
                return None
            first = len(buffer) - len(tokenized)
            instances = []
            for index in range(first, len(buffer)):
                instances.extend(create_instances_from_document(buffer, index, max_seq_length, short_seq_prob, rng))
            if not instances:
                return None
            rng.shuffle(instances)
            return pack_instances(instances, max_seq_length, tokenizer.cls_id, tokenizer.sep_id)

        for document in documents_fn():
            seen += 1
            if seen % num_shards != shard_id:
                continue
            chunk.append(document)
            if len(chunk) == chunk_documents or (len(buffer) < 2 and len(chunk) == 2):
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
    dataset = dataset.batch(batch_size, drop_remainder=is_training)
    # One stateless seed (int64 [2]) per batch; re-iterating a training dataset draws new ones.
    mask_seed = None if seed is None else random.Random(f"{seed}-mask-{shard_id}").getrandbits(62)
    seeds = tf.data.Dataset.random(mask_seed, rerandomize_each_iteration=is_training).batch(2)
    dataset = tf.data.Dataset.zip(dataset, seeds).map(
        lambda features, mask_seed: masker({FEATURE_TO_INPUT[k]: v for k, v in features.items()}, seed=mask_seed),
        num_parallel_calls=tf.data.AUTOTUNE)
    options = tf.data.Options()
    # Each input pipeline already reads only its own documents.
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return dataset.with_options(options).prefetch(tf.data.AUTOTUNE)
