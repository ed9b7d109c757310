"""tf.train.Example records encoded straight from numpy arrays, many examples at once.

`tf.train.Example(...).SerializeToString()` costs ~100 us of Python per pre-training example; here the
protobuf wire bytes of a whole batch come from a few numpy operations (~2 us an example), and only the
TFRecord framing (length, CRC32C) is left to `tf.io.TFRecordWriter`, one call per record.

Wire format (protobuf encoding of example.proto/feature.proto), per example:
    Example  = 0x0A len Features
    Features = (0x0A len FeatureEntry)*                   one map entry per feature
    FeatureEntry = 0x0A len key 0x12 len Feature
    Feature  = 0x1A len Int64List | 0x12 len FloatList
    Int64List = 0x0A len varint*  (packed)                FloatList = 0x0A len float32-LE*  (packed)
where every len is a base-128 varint. `tf.io.parse_example` and `tf.train.Example.FromString` read the
result like the records of the proto API (the tests check both).
"""

import os

import numpy as np
import tensorflow as tf

_LEN = 2  # protobuf wire type of length-delimited fields


def _tag(field):
    return (field << 3) | _LEN


def _varint_bytes(values):
    """Non-negative ints [n, k] -> (uint8 [n, k * width], bool valid [n, k * width] or None when all are):
    each value's base-128 groups, low first, the continuation bit on all but its last byte; a value's unused
    trailing bytes (up to the width of the largest value) are not valid."""
    values = np.asarray(values)
    n = values.shape[0]
    if values.size and values.min() < 0:
        raise ValueError(f"negative value {values.min()} in an int64 feature; only values >= 0 are encoded")
    top = int(values.max()) if values.size else 0
    if top < 0x80:  # one byte each (masks, segment ids, labels, positions): the value itself
        return values.astype(np.uint8).reshape(n, -1), None
    if top >= 2**28:
        return _wide_varint_bytes(values.astype(np.uint64))
    # Two or four bytes per value, as one little-endian uint16/uint32 word (contiguous, no strided copies);
    # the bytes a value does not need are marked not valid.
    dtype = np.dtype("<u2" if top < 2**14 else "<u4")
    width = (top.bit_length() + 6) // 7
    if values.size > 4 * top:  # token ids: look the words up in a table of every value up to the largest
        table, table_valid = _varint_words(np.arange(top + 1), dtype, width)
        word, valid = table[values], table_valid[values]
    else:
        word, valid = _varint_words(values, dtype, width)
    data = word.view(np.uint8).reshape(n, -1)
    if width == dtype.itemsize and values.min() >= 1 << (7 * (width - 1)):
        return data, None  # every value takes every byte (lengths in headers, mostly)
    return data, valid.view(np.uint8).reshape(n, -1).view(bool)


def _varint_words(values, dtype, width):
    """Varints of `values` < 2**(7 * width) as words of `dtype`, and words marking their bytes (0x01/0x00)."""
    values = values.astype(dtype)
    word = values & 0x7F
    valid = np.ones_like(values)
    for j in range(1, width):
        more = (values >= (1 << (7 * j))).astype(dtype)
        # The continuation bit, then bits 7j.. of the value.
        word |= (more << (8 * j - 1)) | (((values >> (7 * j)) & 0x7F) << (8 * j))
        valid |= more << (8 * j)
    return word, valid


def _wide_varint_bytes(values):
    """`_varint_bytes` for values of 2**28 or more (up to 10 bytes each), one byte position at a time."""
    n = values.shape[0]
    width = max(1, (int(values.max()).bit_length() + 6) // 7)
    data = np.empty(values.shape + (width,), np.uint8)
    valid = np.ones(values.shape + (width,), bool)
    for j in range(width):
        more = values >> np.uint64(7 * (j + 1)) > 0
        if j + 1 < width:
            valid[..., j + 1] = more
        data[..., j] = (((values >> np.uint64(7 * j)) & np.uint64(0x7F)).astype(np.uint8)
                        | (more.view(np.uint8) << 7))
    return data.reshape(n, -1), valid.reshape(n, -1)


def _varint_length(values):
    """Bytes of the varint of each non-negative int (int64, same shape)."""
    values = np.asarray(values, np.int64)
    length = np.ones_like(values)
    for bits in (7, 14, 21, 28, 35, 42, 49, 56, 63):
        length += values >= (1 << bits)
    return length


class _Rows:
    """Byte columns appended piece by piece: (uint8 [n, w], bool valid [n, w] or None = all valid). A row's
    bytes are its valid columns, left to right."""

    def __init__(self, n):
        self.n, self.pieces = n, []

    def constant(self, raw):
        raw = np.frombuffer(bytes(raw), np.uint8)[None, :]
        if self.pieces and self.pieces[-1][0].shape[0] == 1:  # one piece for a run of constants
            raw = np.concatenate([self.pieces.pop()[0], raw], axis=1)
        self.pieces.append((raw, None))

    def varint(self, values):
        values = np.asarray(values).reshape(self.n, -1)
        if values.shape[1] == 1 and self.n and values.min() == values.max():
            data, valid = _varint_bytes(values[:1])  # the same value in every row
            self.constant(data[0] if valid is None else data[0][valid[0]])
        else:
            self.pieces.append(_varint_bytes(values))

    def raw(self, data):
        self.pieces.append((data, None))

    def extend(self, other):
        for data, valid in other.pieces:
            if data.shape[0] == 1:
                self.constant(data[0].tobytes())
            else:
                self.pieces.append((data, valid))

    def join(self):
        """All rows' valid bytes, concatenated: uint8 [total]."""
        width = sum(data.shape[1] for data, _ in self.pieces)
        data = np.empty((self.n, width), np.uint8)
        valid = np.ones((self.n, width), bool)
        column = 0
        for piece, piece_valid in self.pieces:
            data[:, column:column + piece.shape[1]] = piece
            if piece_valid is not None:
                valid[:, column:column + piece.shape[1]] = piece_valid
            column += piece.shape[1]
        return data[valid]


def _feature_entry(name, values):
    """(_Rows of one map entry `name` -> values [n, k], int64 [n] its length with the entry's own header)."""
    n = len(values)
    rows = _Rows(n)
    if np.issubdtype(values.dtype, np.floating):
        payload = _Rows(n)
        payload.raw(np.ascontiguousarray(values, "<f4").view(np.uint8).reshape(n, -1))
        payload_length = np.full(n, 4 * values.shape[1], np.int64)
        feature_tag = _tag(2)  # Feature.float_list
    elif np.issubdtype(values.dtype, np.integer) or values.dtype == bool:
        payload = _Rows(n)
        payload.varint(values)
        payload_data, payload_valid = payload.pieces[0]
        payload_length = (np.full(n, payload_data.shape[1], np.int64) if payload_valid is None
                          else payload_valid.sum(1, dtype=np.int64))
        feature_tag = _tag(3)  # Feature.int64_list
    else:
        raise TypeError(f"feature {name!r}: dtype {values.dtype}; expected integers or floats")
    key = name.encode("utf-8")
    list_length = 1 + _varint_length(payload_length) + payload_length  # Int64List/FloatList
    feature_length = 1 + _varint_length(list_length) + list_length  # Feature
    entry_length = 2 + len(key) + 1 + _varint_length(feature_length) + feature_length
    rows.constant([_tag(1)])  # Features.feature (a map entry)
    rows.varint(entry_length)
    rows.constant([_tag(1), len(key), *key])  # key (names are < 128 bytes: a one-byte length)
    rows.constant([_tag(2)])  # value
    rows.varint(feature_length)
    rows.constant([feature_tag])
    rows.varint(list_length)
    rows.constant([_tag(1)])  # the packed `value` field
    rows.varint(payload_length)
    rows.extend(payload)
    return rows, 1 + _varint_length(entry_length) + entry_length


def encode_examples(features):
    """Serializes n tf.train.Examples at once.

    Args:
        features: dict name -> numpy array [n, k] (or [n] for one value each): integers (>= 0) become an
            int64_list, floats a float_list (as float32). Entries are written in the dict's order.

    Returns: (buffer uint8 [total bytes], offsets int64 [n + 1]); example i is
    buffer[offsets[i]:offsets[i+1]].
    """
    arrays = {name: np.asarray(value) for name, value in features.items()}
    arrays = {name: value.reshape(len(value), -1) for name, value in arrays.items()}
    sizes = {len(value) for value in arrays.values()}
    if len(sizes) != 1:
        raise ValueError("features have different numbers of examples: "
                         f"{ {k: len(v) for k, v in arrays.items()} }")
    n = sizes.pop()
    if any(len(name.encode("utf-8")) >= 128 for name in arrays):
        raise ValueError("feature names must be shorter than 128 bytes")
    body, features_length = _Rows(n), np.zeros(n, np.int64)
    for name, values in arrays.items():
        entry, length = _feature_entry(name, values)
        body.extend(entry)
        features_length += length
    rows = _Rows(n)
    rows.constant([_tag(1)])  # Example.features
    rows.varint(features_length)
    rows.extend(body)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(1 + _varint_length(features_length) + features_length, out=offsets[1:])
    return rows.join(), offsets


def write_records(writer, buffer, offsets):
    """Writes records buffer[offsets[i]:offsets[i+1]] (from `encode_examples`) with a
    `tf.io.TFRecordWriter`."""
    raw = buffer.tobytes()
    bounds = offsets.tolist()
    # The native method: tf.io.TFRecordWriter.write only delegates to it (one Python frame less per record).
    write = getattr(super(tf.io.TFRecordWriter, writer), "write", writer.write)
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        write(raw[start:end])


class ShardedRecordWriter:
    """Writes encoded records to `outputs` in order; each file is written as NAME.tmp and renamed when
    complete, so a reader never sees half a file. As a context manager: `finish` on success, `abandon` on an
    error."""

    def __init__(self, outputs):
        self.outputs, self.shard, self.writer = outputs, -1, None

    def _next_file(self):
        if self.writer is not None:
            self.writer.close()
            os.replace(self.outputs[self.shard] + ".tmp", self.outputs[self.shard])
        self.shard, self.writer = self.shard + 1, None
        if self.shard < len(self.outputs):
            os.makedirs(os.path.dirname(os.path.abspath(self.outputs[self.shard])), exist_ok=True)
            self.writer = tf.io.TFRecordWriter(self.outputs[self.shard] + ".tmp")

    def write(self, shard, buffer, offsets):
        """Records buffer[offsets[i]:offsets[i+1]] into output `shard` (files before it are then complete)."""
        while self.shard < shard:  # files before `shard` are complete (some may be empty)
            self._next_file()
        write_records(self.writer, buffer, offsets)

    def finish(self):
        while self.shard < len(self.outputs):
            self._next_file()

    def abandon(self):
        """After a failure: removes the file being written (completed files stay)."""
        if self.writer is not None:
            self.writer.close()
            os.remove(self.outputs[self.shard] + ".tmp")
            self.writer = None

    def __enter__(self):
        return self

    def __exit__(self, error_type, error, traceback):
        if error_type is None:
            self.finish()
        else:
            self.abandon()


def write_examples_file(features, path):
    """Writes dict name -> numpy [n, k] as one TFRecord file of tf.train.Examples (via `path`.tmp, then
    renamed so a reader never sees half a file); returns n."""
    buffer, offsets = encode_examples(features)
    with ShardedRecordWriter([path]) as writer:
        writer.write(0, buffer, offsets)
    return len(offsets) - 1


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)  # Castagnoli polynomial, reflected
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()
# The first record's data CRC is checked up to this size (pure Python, ~0.3 s a MiB); past it, the header's.
_CHECKED_RECORD_BYTES = 1 << 20


def masked_crc32c(data):
    """The CRC TFRecord framing stores: CRC-32C of `data` (bytes), rotated right by 15 plus 0xa282ead8."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def is_tfrecord_file(path):
    """Whether `path` holds TFRecords, judged by content: its first record's framing parses (uint64 length,
    masked CRC-32C of the length, the data, masked CRC-32C of the data; little-endian). An empty file holds
    no record and is not one; nor is any text (a random header passes its CRC once in 2**32)."""
    with open(path, "rb") as f:
        header = f.read(12)
        if len(header) < 12 or masked_crc32c(header[:8]) != int.from_bytes(header[8:], "little"):
            return False
        length = int.from_bytes(header[:8], "little")
        if length > _CHECKED_RECORD_BYTES:
            return True
        data, footer = f.read(length), f.read(4)
    return len(footer) == 4 and masked_crc32c(data) == int.from_bytes(footer, "little")
