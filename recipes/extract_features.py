"""The paper's feature-based approach: per-token vectors of chosen encoder layers, as JSON lines like the
original `extract_features.py`.

    python -m recipes.extract_features --input_file=input.txt --output_file=features.jsonl \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128

Input: one example per line, `text` or `text_a ||| text_b`. Output: one JSON object per line,
`{"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [...]}, ...]}, ...]}`
for every packed token ([CLS], pieces, [SEP]; padding dropped), values rounded to 6 decimals. Layer -1 is
the last transformer layer, 0 the first.
"""

import os
import sys

if not __package__:  # `python recipes/x.py`: import from the repository root, as `python -m recipes.x` does
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from recipes import logs

logs.quiet(__name__)  # before TensorFlow loads

import json

import numpy as np
import tensorflow as tf
from absl import app, flags

from recipes import common

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/features", max_seq_length=128)
flags.DEFINE_string("input_file", None, "Text file: one example per line, `text` or `text_a ||| text_b`.")
flags.DEFINE_string("output_file", None, "JSON lines output.")
flags.DEFINE_list("layers", ["-1", "-2", "-3", "-4"], "Encoder layers to output (negative: from the last).")
flags.DEFINE_integer("batch_size", 32, "Lines per batch.")


def read_lines(path):
    """[(text_a, text_b or None)] of the non-empty lines of `path`; an empty file is an error naming it."""
    from keras_bert.textfiles import read_text

    pairs = []
    for line in read_text(path).splitlines():
        line = line.strip()
        if not line:
            continue
        text_a, separator, text_b = line.partition(" ||| ")
        pairs.append((text_a, text_b if separator else None))
    if not pairs:
        raise ValueError(f"--input_file={path}: no non-empty lines")
    return pairs


def main(argv):
    del argv
    from keras_bert.text import BertPreprocessor

    if not FLAGS.input_file or not FLAGS.output_file:
        raise ValueError("--input_file and --output_file are required")
    common.setup()
    tokenizer = common.finetuning_tokenizer()
    encoder = common.build_encoder(tokenizer.vocab_size)
    num_layers = encoder.config.num_hidden_layers
    layers = [int(layer) for layer in FLAGS.layers]
    bad = [layer for layer in layers if not -num_layers <= layer < num_layers]
    if bad:
        raise ValueError(f"--layers={','.join(FLAGS.layers)}: {bad} out of range for {num_layers} layers")
    preprocessor = BertPreprocessor(tokenizer, FLAGS.max_seq_length)
    pairs = read_lines(FLAGS.input_file)
    extract = tf.function(lambda inputs: [encoder(inputs)["encoder_outputs"][layer] for layer in layers])
    with open(FLAGS.output_file, "w", encoding="utf-8") as out:
        for begin in range(0, len(pairs), FLAGS.batch_size):
            batch = pairs[begin : begin + FLAGS.batch_size]
            written = {}
            # Pairs and single texts are packed apart: a pair batch needs a text_b for every line.
            for has_b in (False, True):
                rows = [(begin + i, a, b) for i, (a, b) in enumerate(batch) if (b is not None) == has_b]
                if not rows:
                    continue
                texts = [tf.constant([a for _, a, _ in rows])] + ([tf.constant([b for *_, b in rows])] if has_b else [])
                inputs = preprocessor(tuple(texts))
                values = [np.asarray(v, np.float32) for v in extract(inputs)]
                ids, mask = np.asarray(inputs["input_word_ids"]), np.asarray(inputs["input_mask"])
                for row, (line_index, _, _) in enumerate(rows):
                    tokens = [{"token": tokenizer.id_to_token(ids[row, t]),
                               "layers": [{"index": layer, "values": [round(float(x), 6) for x in value[row, t]]}
                                          for layer, value in zip(layers, values, strict=True)]}
                              for t in range(int(mask[row].sum()))]
                    written[line_index] = json.dumps({"linex_index": line_index, "features": tokens})
            out.writelines(written[index] + "\n" for index in sorted(written))
    print(f"Features of {len(pairs)} lines: {FLAGS.output_file}")


if __name__ == "__main__":
    app.run(main)
