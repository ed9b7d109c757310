"""Packing WordPiece ids into BERT encoder inputs: [CLS] a [SEP] (b [SEP]), truncated and padded.

Only core TensorFlow ops are used (Range, GatherV2, SelectV2 and integer arithmetic on the ragged ids' row
splits), no tf-text ops such as RoundRobinTrimmer and no ragged kernels (RaggedRange, RaggedGather), so a
serving graph containing the packer runs on any TF Serving build and in LiteRT. Each output position is
computed from its row's segment lengths rather than by building and concatenating ragged rows, which keeps
the graph small: every export, serving signature and `fit` on raw text traces it.
"""

import keras
import tensorflow as tf

from keras_bert import compat


def truncated_lengths(length_a, length_b, max_tokens):
    """Lengths Google's `_truncate_seq_pair` leaves: it pops the last token of the longer segment
    (of `b` on ties) until len(a) + len(b) <= max_tokens. Closed form, elementwise on int tensors.

    Returns:
        (new_length_a, new_length_b), same shape and dtype as the inputs.
    """
    max_tokens = tf.cast(max_tokens, length_a.dtype)
    over = length_a + length_b > max_tokens
    kept_b = tf.minimum(length_b, tf.maximum(max_tokens - length_a, max_tokens // 2))
    new_b = tf.where(over, kept_b, length_b)
    new_a = tf.where(over, max_tokens - new_b, length_a)
    return new_a, new_b


def _packed(segments, kept, total, width, start_id, end_id, pad_id):
    """[CLS] s0[:kept0] [SEP] (s1[:kept1] [SEP]) per row, padded with `pad_id` to `width` (an int or an int32
    scalar tensor). `segments`: ragged int32 [batch, (n)]; `kept`: int32 [batch], at most each row's length;
    `total`: int32 [batch], each row's packed length.

    Returns dense int32 [batch, width] word ids, type ids and mask."""
    # A tensor width below 0 (a caller's checked seq_length) packs nothing rather than failing the graph's
    # shape inference, so the caller's check is the error raised.
    position = tf.range(width if isinstance(width, int) else tf.maximum(width, 0))[None, :]
    word_ids = tf.where(position == 0, start_id, pad_id) + 0 * total[:, None]
    type_ids = tf.zeros_like(word_ids)
    begin = tf.ones_like(total)
    for type_id, (segment, count) in enumerate(zip(segments, kept, strict=True)):
        first, end = begin[:, None], (begin + count)[:, None]
        # One pad value after the pieces: positions outside the segment (and an empty batch) gather it.
        pieces = tf.concat([segment.flat_values, [pad_id]], 0)
        inside = (position >= first) & (position < end)
        index = tf.cast(segment.row_splits[:-1], tf.int32)[:, None] + position - first
        word_ids = tf.where(inside, tf.gather(pieces, tf.where(inside, index, tf.size(pieces) - 1)), word_ids)
        word_ids = tf.where(position == end, end_id, word_ids)
        type_ids = tf.where((position >= first) & (position <= end), type_id, type_ids)
        begin = begin + count + 1
    return word_ids, type_ids, tf.cast(position < total[:, None], tf.int32)


def _as_batched_ragged(segment):
    """Returns (ragged int32 [batch, (n)], was_unbatched)."""
    if isinstance(segment, tf.RaggedTensor):
        if segment.shape.rank != 2:
            raise ValueError(
                f"BertPacker: expected ids of rank 2 [batch, (pieces)], got shape {segment.shape}."
            )
        return tf.cast(segment, tf.int32), False
    segment = tf.convert_to_tensor(segment)
    if segment.shape.rank == 1:
        return tf.RaggedTensor.from_tensor(tf.cast(segment[None], tf.int32)), True
    if segment.shape.rank == 2:
        return tf.RaggedTensor.from_tensor(tf.cast(segment, tf.int32)), False
    raise ValueError(f"BertPacker: expected ids of rank 1 or 2, got shape {segment.shape}.")


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPacker(keras.layers.Layer):
    """Packs one or two segments of WordPiece ids into the BERT encoder inputs.

    Args:
        seq_length: int, the output length (including [CLS] and [SEP]s), at least 3.
        start_id: id of [CLS].
        end_id: id of [SEP].
        pad_id: id of [PAD] (default 0, as in BERT vocabs).
        pad_to_multiple_of: None (default: pad every row to seq_length), or pad to the batch's longest row
            rounded up to this multiple (at most seq_length).
        **kwargs: `keras.layers.Layer`'s (e.g. `name`).

    Raises:
        ValueError: `seq_length` below 3; `pad_to_multiple_of` below 1.

    Call: `packer(ids_a)` or `packer((ids_a, ids_b))` with ragged int [batch, (pieces)] (as the
    tokenizer returns; a dense [batch, n] or a single unbatched 1-D [n] also works) → dict of dense
    int32 [batch, seq_length] (or [seq_length] for unbatched input):
      `input_word_ids`: [CLS] a [SEP] (b [SEP]) then pad_id;
      `input_mask`: 1 on real tokens, 0 on padding;
      `input_type_ids`: 0 for [CLS] a [SEP], 1 for b [SEP], 0 on padding.
    Segments that do not fit are cut at the end like the original `_truncate_seq_pair` (the longer one
    first; `b` on ties); a single segment keeps its first seq_length - 2 pieces.

    Examples:

        packer = BertPacker.from_tokenizer(tokenizer, seq_length=8)
        inputs = packer((tokenizer(tf.constant(["the cat"])), tokenizer(tf.constant(["sat on the mat"]))))
        inputs["input_word_ids"]   # [[CLS] the cat [SEP] sat on the [SEP]] as ids, int32 [1, 8]
        inputs["input_type_ids"]   # [[0, 0, 0, 0, 1, 1, 1, 1]]
    """

    def __init__(self, seq_length, start_id, end_id, pad_id=0, pad_to_multiple_of=None, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        compat.accept_raw_inputs(self)
        if int(seq_length) < 3:
            raise ValueError(
                f"BertPacker: seq_length={seq_length}; expected at least 3 ([CLS] a [SEP] b [SEP] needs 3)."
            )
        self.seq_length = int(seq_length)
        self.start_id = int(start_id)
        self.end_id = int(end_id)
        self.pad_id = int(pad_id)
        # None: pad every row to seq_length; m: to the batch's longest row rounded up to m (<= seq_length).
        self.pad_to_multiple_of = None if pad_to_multiple_of is None else int(pad_to_multiple_of)
        if self.pad_to_multiple_of is not None and self.pad_to_multiple_of < 1:
            raise ValueError(f"BertPacker: pad_to_multiple_of={pad_to_multiple_of}; "
                             "expected a positive integer or None.")
        self.built = True  # no weights: built as made, so Keras' whole-model calls (quantize) pass over it

    @classmethod
    def from_tokenizer(cls, tokenizer, seq_length, **kwargs):
        """A packer using `tokenizer`'s [CLS], [SEP] and [PAD] ids."""
        return cls(seq_length, tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, **kwargs)

    def call(self, inputs, seq_length=None):
        if isinstance(inputs, dict):
            raise ValueError("BertPacker: expected one ids tensor or a list/tuple of one or two, got a dict.")
        # A scalar tensor `seq_length` packs to that length instead (TF Hub's bert_pack_inputs takes one).
        seq_length = self.seq_length if seq_length is None else seq_length
        segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(f"BertPacker: expected 1 or 2 segments, got {len(segments)}.")
        converted = [_as_batched_ragged(segment) for segment in segments]
        unbatched = converted[0][1]
        segments = [segment for segment, _ in converted]
        seq_length = tf.cast(seq_length, tf.int32) if isinstance(seq_length, tf.Tensor) else seq_length
        lengths = [tf.cast(segment.row_lengths(), tf.int32) for segment in segments]
        if len(segments) == 1:
            kept = [tf.minimum(lengths[0], seq_length - 2)]
        else:
            kept = list(truncated_lengths(*lengths, seq_length - 3))
        total = 1 + len(segments) + tf.add_n(kept)  # [CLS] a [SEP] (b [SEP]) of each row
        width = seq_length
        if self.pad_to_multiple_of is not None:  # the longest packed row rounded up, at most seq_length
            longest = tf.reduce_max(tf.concat([total, [1]], 0))
            multiple = self.pad_to_multiple_of
            width = tf.minimum(seq_length, -(-longest // multiple) * multiple)
        word_ids, type_ids, mask = _packed(segments, kept, total, width, self.start_id, self.end_id,
                                           self.pad_id)
        outputs = {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}
        if unbatched:
            outputs = {name: value[0] for name, value in outputs.items()}
        return outputs

    def compute_output_spec(self, inputs):
        first = inputs[0] if isinstance(inputs, (list, tuple)) else inputs
        length = self.seq_length if self.pad_to_multiple_of is None else None
        spec = keras.KerasTensor([first.shape[0], length], dtype="int32")
        return {"input_word_ids": spec, "input_mask": spec, "input_type_ids": spec}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "seq_length": self.seq_length,
                "start_id": self.start_id,
                "end_id": self.end_id,
                "pad_id": self.pad_id,
                "pad_to_multiple_of": self.pad_to_multiple_of,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPreprocessor(keras.layers.Layer):
    """Raw text → BERT encoder inputs: a BertTokenizer followed by a BertPacker, as one Keras layer.

    Args:
        tokenizer: a `keras_bert.text.BertTokenizer`.
        seq_length: int, the packed length (the most a row may have).
        pad_to_multiple_of: None (pad every row to seq_length), or pad to the batch's longest row rounded
            up to this multiple: what the served graph does, so a request pays only for its tokens.

    Call: `preprocessor(text)` with tf.string [batch] (or a scalar: one example), or a pair
    `(text_a, text_b)` as a tuple/list or a dict with keys "text_a" (or "text") and "text_b" → dict of
    int32 [batch, seq_length] `input_word_ids`, `input_mask`, `input_type_ids`. Uses only TF and
    tf-text ops, so it works in `ds.map(preprocessor)` and inside an exported serving graph.

    Examples:

        preprocessor = BertPreprocessor(BertTokenizer("vocab.txt"), seq_length=128)
        inputs = preprocessor(tf.constant(["The cat sat.", "A dog."]))            # int32 [2, 128] each
        pairs = preprocessor((tf.constant(["What sat?"]), tf.constant(["A cat."])))   # one sentence pair
        train = tf.data.Dataset.from_tensor_slices(texts).batch(32).map(preprocessor)
    """

    def __init__(self, tokenizer, seq_length, pad_to_multiple_of=None, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        compat.accept_raw_inputs(self)
        if isinstance(tokenizer, dict):
            tokenizer = keras.saving.deserialize_keras_object(tokenizer)
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.pad_to_multiple_of = pad_to_multiple_of
        self.packer = BertPacker.from_tokenizer(tokenizer, self.seq_length,
                                                pad_to_multiple_of=pad_to_multiple_of)
        self.built = True  # no weights of its own; the tokenizer and packer are built as made

    def padding_to_longest(self, multiple):
        """A preprocessor of the same tokenizer (shared, not copied) and seq_length that pads each batch to
        its longest row rounded up to `multiple`."""
        return BertPreprocessor(self.tokenizer, self.seq_length, pad_to_multiple_of=multiple,
                                name=f"{self.name}_longest")

    @staticmethod
    def _segments(inputs):
        if isinstance(inputs, dict):
            first = inputs.get("text_a", inputs.get("text"))
            if first is None or set(inputs) - {"text_a", "text", "text_b"}:
                raise ValueError(
                    f"BertPreprocessor: dict input has keys {sorted(inputs)}; expected 'text_a' (or 'text') "
                    "and optionally 'text_b'."
                )
            return [first] if "text_b" not in inputs else [first, inputs["text_b"]]
        if isinstance(inputs, (list, tuple)):
            if len(inputs) not in (1, 2):
                raise ValueError(f"BertPreprocessor: expected 1 or 2 text segments, got {len(inputs)}.")
            return list(inputs)
        return [inputs]

    def call(self, inputs):
        segments = self._segments(inputs)
        unbatched = tf.convert_to_tensor(segments[0]).shape.rank == 0
        ids = [self.tokenizer(tf.reshape(segment, [-1])) for segment in segments]
        outputs = self.packer(ids)
        if unbatched:
            outputs = {name: value[0] for name, value in outputs.items()}
        return outputs

    def compute_output_spec(self, inputs):
        first = self._segments(inputs)[0]
        length = self.seq_length if self.pad_to_multiple_of is None else None
        spec = keras.KerasTensor([first.shape[0], length], dtype="int32")
        return {"input_word_ids": spec, "input_mask": spec, "input_type_ids": spec}

    def get_config(self):
        config = super().get_config()
        config.update(
            {"tokenizer": keras.saving.serialize_keras_object(self.tokenizer), "seq_length": self.seq_length,
             "pad_to_multiple_of": self.pad_to_multiple_of}
        )
        return config


def pack_choices(preprocessor, first, endings):
    """Multiple-choice inputs: pair i, j is (first[i] or first[i, j], endings[i, j]) packed by `preprocessor`.

    `first` tf.string [b] (one context for every choice) or [b, choices]; `endings` [b, choices]. Returns
    the encoder input dict of int32 [b, choices, seq_length].
    """
    endings = tf.convert_to_tensor(endings)
    first = tf.convert_to_tensor(first)
    if first.shape.rank == 1:
        first = tf.tile(tf.expand_dims(first, 1), [1, tf.shape(endings)[1]])  # LiteRT tiles strings
    choices = endings.shape[1] if endings.shape[1] is not None else tf.shape(endings)[1]
    packed = preprocessor((tf.reshape(first, [-1]), tf.reshape(endings, [-1])))
    return {name: tf.reshape(value, [-1, choices, value.shape[-1] or tf.shape(value)[-1]])
            for name, value in packed.items()}
