"""The paper's feature-based approach: per-token vectors of chosen encoder layers, written as JSON lines like
the original `extract_features.py`:
`{"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [...]}, ...]}, ...]}`
for every packed token ([CLS], pieces, [SEP]; padding dropped), values rounded to 6 decimals."""

import json

import numpy as np
import tensorflow as tf

from keras_bert.textfiles import read_text


def read_lines(path):
    """[(text_a, text_b or None)] of every line of `path` (`text` or `text_a ||| text_b`), in order: a blank
    line is ("", None), packed as [CLS] [SEP], so that the i-th pair (its `linex_index`) is line i + 1, as
    in the original. A file without a non-blank line is an error naming it."""
    pairs = []
    for line in read_text(path).splitlines():  # bad UTF-8: DataFormatError naming the line
        text_a, separator, text_b = line.strip().partition(" ||| ")
        pairs.append((text_a, text_b if separator else None))
    if not any(text_a for text_a, _ in pairs):
        raise ValueError(f"{path}: no non-empty lines")
    return pairs


def check_layers(layers, num_layers):
    """Raises ValueError naming the layer indices (ints; negative from the last) outside `num_layers`."""
    bad = [layer for layer in layers if not -num_layers <= layer < num_layers]
    if bad:
        raise ValueError(f"layers {bad} out of range for {num_layers} layers")


def write_features(encoder, preprocessor, pairs, layers, output_file, batch_size=32):
    """Runs `encoder` on `pairs` (from `read_lines`) packed by `preprocessor` (a `BertPreprocessor`) and
    writes the vectors of `layers` (-1: the last transformer layer, 0: the first) of every packed token to
    `output_file`, one JSON line per pair in input order."""
    check_layers(layers, encoder.config.num_hidden_layers)
    tokenizer = preprocessor.tokenizer
    extract = tf.function(lambda inputs: [encoder(inputs)["encoder_outputs"][layer] for layer in layers])
    with open(output_file, "w", encoding="utf-8") as out:
        for begin in range(0, len(pairs), batch_size):
            batch = pairs[begin : begin + batch_size]
            written = {}
            # Pairs and single texts are packed apart: a pair batch needs a text_b for every line.
            for has_b in (False, True):
                rows = [(begin + i, a, b) for i, (a, b) in enumerate(batch) if (b is not None) == has_b]
                if not rows:
                    continue
                texts = [tf.constant([a for _, a, _ in rows])] + ([tf.constant([b for *_, b in rows])]
                                                                  if has_b else [])
                inputs = preprocessor(tuple(texts))
                values = [np.asarray(v, np.float32) for v in extract(inputs)]
                ids, mask = np.asarray(inputs["input_word_ids"]), np.asarray(inputs["input_mask"])
                for row, (line_index, _, _) in enumerate(rows):
                    tokens = [{"token": tokenizer.id_to_token(ids[row, t]),
                               "layers": [{"index": layer,
                                           "values": [round(float(x), 6) for x in value[row, t]]}
                                          for layer, value in zip(layers, values, strict=True)]}
                              for t in range(int(mask[row].sum()))]
                    written[line_index] = json.dumps({"linex_index": line_index, "features": tokens})
            out.writelines(written[index] + "\n" for index in sorted(written))
