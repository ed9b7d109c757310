"""tf.train.Example bytes encoded from numpy: the same messages as the proto API, readable by
parse_example."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import tfrecord


def _proto_example(row):
    feature = {}
    for name, values in row.items():
        values = np.atleast_1d(values)
        if np.issubdtype(values.dtype, np.floating):
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values.tolist()))
        else:
            feature[name] = tf.train.Feature(
                int64_list=tf.train.Int64List(value=values.astype(np.int64).tolist()))
    return tf.train.Example(features=tf.train.Features(feature=feature))


@pytest.mark.parametrize("top", [2, 200, 30522, 2**21 + 5, 2**28 + 3, 2**63 - 1])
def test_same_messages_as_the_proto_api(top):
    rng = np.random.default_rng(top % 1000)
    n = 50
    features = {
        "ids": rng.integers(0, top, (n, 9), dtype=np.int64),
        "weights": rng.random((n, 3)).astype(np.float32),
        "label": rng.integers(0, 2, n),
        "flags": rng.integers(0, 2, (n, 4)).astype(bool),
    }
    features["ids"][0, 0] = top - 1  # the widest varint occurs
    buffer, offsets = tfrecord.encode_examples(features)
    assert offsets[0] == 0 and offsets[-1] == len(buffer)
    for i in range(n):
        got = tf.train.Example.FromString(buffer[offsets[i]:offsets[i + 1]].tobytes())
        expected = _proto_example({name: values[i] for name, values in features.items()})
        assert got == expected, i


def test_parse_example_with_fixed_len_spec(tmp_path):
    # Long lists: list/feature lengths of 3-byte varints (the same in every row, so encoded once).
    rng = np.random.default_rng(0)
    features = {"ids": rng.integers(0, 30522, (7, 128)).astype(np.int32),
                "long": np.full((7, 9000), 300, np.int64), "weights": np.ones((7, 5000), np.float32)}
    path = str(tmp_path / "x.tfrecord")
    assert tfrecord.write_examples_file(features, path) == 7
    spec = {"ids": tf.io.FixedLenFeature([128], tf.int64), "long": tf.io.FixedLenFeature([9000], tf.int64),
            "weights": tf.io.FixedLenFeature([5000], tf.float32)}
    parsed = next(iter(tf.data.TFRecordDataset(path).batch(10).map(lambda r: tf.io.parse_example(r, spec))))
    for name, values in features.items():
        np.testing.assert_array_equal(parsed[name].numpy(), values)


def test_bad_input():
    with pytest.raises(ValueError, match="negative value -3"):
        tfrecord.encode_examples({"ids": np.array([[1, -3]])})
    with pytest.raises(ValueError, match="different numbers of examples"):
        tfrecord.encode_examples({"a": np.zeros((2, 3), np.int32), "b": np.zeros((3, 3), np.int32)})
    with pytest.raises(TypeError, match="feature 's'"):
        tfrecord.encode_examples({"s": np.array([["x"]])})


def test_masked_crc32c_of_the_standard_check_string():
    crc = 0xE3069283  # CRC-32C of b"123456789", the catalogued check value
    assert tfrecord.masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_a_tfrecord_file_is_told_by_its_content(tmp_path):
    # Issue 15 bug 1: any file under 12 bytes, even whitespace, was taken for a TFRecord file.
    path = tmp_path / "r.tfrecord"
    tfrecord.write_examples_file({"ids": np.arange(6).reshape(2, 3)}, str(path))
    assert tfrecord.is_tfrecord_file(str(path))
    data = path.read_bytes()
    others = {"short.txt": b"Hi.\n\nYo.\n", "blank.txt": b"   \n", "empty.tfrecord": b"",
              "text.txt": b"A first sentence, longer than a record header.\n\nAnother document.\n",
              "truncated.tfrecord": data[:20],
              "corrupt.tfrecord": data[:12] + bytes([data[12] ^ 1]) + data[13:]}
    for name, content in others.items():
        (tmp_path / name).write_bytes(content)
        assert not tfrecord.is_tfrecord_file(str(tmp_path / name)), name
