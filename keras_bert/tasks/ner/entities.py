"""Named entities served from a token classifier: raw `text` in, the entities `run_ner` would score out.

The graph tokenizes each text with offsets, runs the model on strided windows (`text.windows`: every piece
takes its logits from the window where it has the most context, so a text of any length is covered), tags
each word with the argmax at its first piece (a word: a whitespace token, what a CoNLL file labels and
training labels, `windows.word_starts`: "Berners-Lee" and "Oslo," are one word each), reads conlleval's
chunks off the word tags with `metrics.conll.chunk_transition` tabulated over the model's tags, trims each
chunk's span of the punctuation at its edges ("Oslo," -> "Oslo", '"Ann' -> "Ann"; `edge_punctuation`), and
returns them padded to the batch's largest entity count:

    entity_text   tf.string [b, e]  exactly text[entity_start:entity_end] ("" on padding)
    entity_type   tf.string [b, e]  the chunk's type ("PER" of B-PER; "" on padding)
    entity_start  int64 [b, e]      character offsets into `text` as Python indexes the decoded str (invalid
    entity_end    int64 [b, e]      UTF-8 bytes count as one U+FFFD character each); -1 on padding
    entity_count  int32 [b]         entities of each text

With `word_tags=True` the endpoint also serves every word's tag (`word_outputs`: word_tag, word_tag_id,
word_logits, word_start, word_end, word_count; a word's span is untrimmed, from its first piece to its
last), what run_ner writes in conlleval's format.
Core TF ops only beside the tokenizer's tf-text ops.
"""

import numpy as np
import tensorflow as tf

from keras_bert.models.buckets import model_outputs
from keras_bert.tasks.ner.metrics import chunk_transition, split_tag
from keras_bert.tasks.ner.windows import byte_keys, text_characters, text_windows, word_starts
from keras_bert.text.ragged_ops import row_ids, shift_right, splits_of_rows
from keras_bert.text.windows import pick_max_context

ENTITY_OUTPUTS = ("entity_text", "entity_type", "entity_start", "entity_end", "entity_count")
# What `edge_punctuation` trims, in RE2's syntax: BERT's punctuation (`unicode_rules.is_punctuation`: ASCII
# non-alphanumerics and Unicode P*) and the control and format characters its basic tokenizer drops.
_EDGE = r"!-/:-@\[-`{-~\p{P}\p{Cc}\p{Cf}"


def uses_iobes(tags):
    """Whether the tag set is IOBES (has E- or S- tags), so chunks follow conlleval's E-/S- rules."""
    return any(split_tag(tag)[0] in ("E", "S") for tag in tags)


def transition_tables(tags, iobes):
    """(ends, starts) bool numpy [C + 1, C + 1] over (previous, current) tag ids: `chunk_transition`
    of the tag names, id C being the "O" outside the sentence (no chunk starts there)."""
    names = [*tags, "O"]
    ends = np.zeros((len(names), len(names)), bool)
    starts = np.zeros_like(ends)
    for i, previous in enumerate(names):
        for j, current in enumerate(names):
            ends[i, j], starts[i, j] = chunk_transition(previous, current, iobes)
    starts[:, -1] = False
    return ends, starts


def char_offsets(text, rows, byte_offsets):
    """Byte offsets into text[rows] -> character offsets (int64): the characters that start before them."""
    chars, keys = text_characters(text)
    found = tf.searchsorted(keys, byte_keys(rows, byte_offsets), side="left", out_type=tf.int64)
    return found - tf.gather(chars.row_splits, rows)


def edge_punctuation(spans):
    """(leading, trailing) int64 [n]: the bytes of punctuation (`_EDGE`) at the start and the end of each of
    tf.string `spans` [n]; (0, 0) for a span of nothing but punctuation, which stays whole. A final "." after
    a one-character abbreviation part ("U.S.", "D.C.", "Ph.D.") is not counted; other final dots are
    ("Inc." -> "Inc"), as they end sentences too."""
    length = tf.strings.length(spans)
    lead = length - tf.strings.length(tf.strings.regex_replace(spans, f"^[{_EDGE}]+", ""))
    kept = tf.strings.regex_replace(spans, f"[{_EDGE}]+$", "")
    trail = length - tf.strings.length(kept)
    dotted = ((tf.strings.substr(spans, length - trail, tf.minimum(trail, 1)) == ".")
              & (tf.strings.length(tf.strings.regex_replace(kept, f"\\.[^{_EDGE}]$", "")) < length - trail))
    whole = lead == length
    lead = tf.where(whole, 0, lead)
    trail = tf.where(whole, 0, trail - tf.cast(dotted, trail.dtype))
    return tf.cast(lead, tf.int64), tf.cast(trail, tf.int64)


def tagged_words(model, preprocessor, text, stride):
    """The words (whitespace tokens, `windows.word_starts`) of `text` tf.string [b] with the logits of their
    first pieces, `model` (token ids -> logits [b, s, C]) run on windows of `preprocessor.seq_length` moved
    by `stride` pieces. Returns a dict over the batch's words: `row` int64 [w] (the text of each),
    `start` / `end` int64 [w] byte offsets into it, `logits` [w, C], and `splits` int64 [b + 1]."""
    inputs, windows, _, starts, ends = text_windows(preprocessor, text, stride)
    logits = model_outputs(model, inputs, preprocessor)
    piece_logits = pick_max_context(windows, logits[:, 1:]).flat_values

    # Words: whitespace tokens, as training labels them (`windows.word_starts`).
    splits = windows.row_splits
    piece_row = row_ids(splits)
    word_first = word_starts(text, starts, ends).flat_values
    first_piece = tf.where(word_first)[:, 0]
    word_row = tf.gather(piece_row, first_piece)
    end = tf.math.unsorted_segment_max(ends.flat_values, tf.math.cumsum(tf.cast(word_first, tf.int64)) - 1,
                                       tf.size(first_piece, out_type=tf.int64))
    return {"row": word_row, "start": tf.gather(starts.flat_values, first_piece), "end": end,
            "logits": tf.gather(piece_logits, first_piece),
            "splits": splits_of_rows(word_row, tf.size(text, out_type=tf.int64))}


def word_outputs(words, tags, text):
    """`tagged_words`' words of `text` padded per text to the batch's most words: `word_tag` tf.string
    [b, w] (the argmax tag; "" on padding), `word_tag_id` int32 [b, w] (-1 on padding), `word_logits`
    float32 [b, w, len(tags)] (0 on padding), `word_start` / `word_end` int64 [b, w] character offsets as
    `entity_start` (-1 on padding) and `word_count` int32 [b]."""
    splits = words["splits"]

    def per_row(values, default):
        return tf.RaggedTensor.from_row_splits(values, splits, validate=False).to_tensor(default)

    tag_id = tf.argmax(words["logits"], axis=-1, output_type=tf.int32)
    return {"word_tag": per_row(tf.gather(tf.constant(list(tags)), tag_id), ""),
            "word_tag_id": per_row(tag_id, -1),
            "word_logits": per_row(tf.cast(words["logits"], tf.float32), 0.0),
            "word_start": per_row(char_offsets(text, words["row"], words["start"]), -1),
            "word_end": per_row(char_offsets(text, words["row"], words["end"]), -1),
            "word_count": tf.cast(splits[1:] - splits[:-1], tf.int32)}


def entity_outputs(model, tags, preprocessor, text, stride, with_words=False):
    """The outputs of the module docstring for `text` tf.string [b], with `model` (token ids -> logits
    [b, s, len(tags)]) on windows of `preprocessor.seq_length` moved by `stride` pieces; `with_words`:
    also `word_outputs`."""
    tags = list(tags)
    num_tags = len(tags)
    ends_table, starts_table = (tf.constant(t) for t in transition_tables(tags, uses_iobes(tags)))
    types = tf.constant([split_tag(tag)[1] for tag in tags] + [""])

    words = tagged_words(model, preprocessor, text, stride)
    word_row, word_start, word_end, word_splits = words["row"], words["start"], words["end"], words["splits"]
    word_tags = tf.argmax(words["logits"], axis=-1, output_type=tf.int32)
    num_words = tf.size(word_row, out_type=tf.int64)
    text_rows = tf.size(text, out_type=tf.int64)

    # Each text's word tags followed by the "O" past its end (id num_tags), as extract_chunks reads them.
    ext_splits = word_splits + tf.range(text_rows + 1)
    ext_row = row_ids(ext_splits)
    ext_index = tf.range(ext_splits[-1])
    ext_tags = tf.tensor_scatter_nd_update(tf.fill([ext_splits[-1]], num_tags),
                                           (tf.range(num_words) + word_row)[:, None], word_tags)
    row_start = ext_index == tf.gather(ext_splits, ext_row)
    previous = tf.where(row_start, num_tags, shift_right(ext_tags, num_tags))
    pairs = tf.stack([previous, ext_tags], axis=1)
    chunk_starts = tf.gather_nd(starts_table, pairs)
    boundaries = tf.where(tf.gather_nd(ends_table, pairs) | chunk_starts)[:, 0]
    # A chunk runs to the word before the next boundary; one whose row ends without a boundary is dropped.
    first = tf.where(chunk_starts)[:, 0]
    boundaries = tf.concat([boundaries, [ext_splits[-1]]], axis=0)
    after = tf.gather(boundaries, tf.searchsorted(boundaries, first, side="right", out_type=tf.int64))
    entity_row = tf.gather(ext_row, first)
    closed = tf.gather(tf.concat([ext_row, [-1]], axis=0), after) == entity_row
    first, after, entity_row = (tf.boolean_mask(t, closed) for t in (first, after, entity_row))
    byte_start = tf.gather(word_start, first - entity_row)
    byte_end = tf.gather(word_end, after - 1 - entity_row)
    # Each chunk's span less the punctuation at its edges.
    entity_text = tf.strings.substr(tf.gather(text, entity_row), byte_start, byte_end - byte_start,
                                    unit="BYTE")
    lead, trail = edge_punctuation(entity_text)
    entity_text = tf.strings.substr(entity_text, lead, byte_end - byte_start - lead - trail, unit="BYTE")
    byte_start, byte_end = byte_start + lead, byte_end - trail

    # The entities of each text, grouped once for all five outputs.
    entity_splits = splits_of_rows(entity_row, text_rows)

    def per_row(values, default):
        return tf.RaggedTensor.from_row_splits(values, entity_splits, validate=False).to_tensor(default)

    counts = entity_splits[1:] - entity_splits[:-1]
    entities = {
        "entity_text": per_row(entity_text, ""),
        "entity_type": per_row(tf.gather(types, tf.gather(ext_tags, first)), ""),
        "entity_start": per_row(char_offsets(text, entity_row, byte_start), -1),
        "entity_end": per_row(char_offsets(text, entity_row, byte_end), -1),
        "entity_count": tf.cast(counts, tf.int32),
    }
    return {**entities, **word_outputs(words, tags, text)} if with_words else entities
