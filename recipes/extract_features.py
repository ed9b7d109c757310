"""The paper's feature-based approach: per-token vectors of chosen encoder layers, as JSON lines like the
original `extract_features.py`.

    keras-bert extract_features --input_file=input.txt --output_file=features.jsonl \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --layers=-1,-2,-3,-4 --max_seq_length=128

Input: one example per line, `text` or `text_a ||| text_b` (a blank line is one too, [CLS] [SEP], so that
`linex_index` counts the input's lines from 0, across the files in order). Output: one JSON object per line,
`{"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1, "values": [...]}, ...]}, ...]}`
for every packed token ([CLS], pieces, [SEP]; padding dropped), values rounded to 6 decimals. Layer -1 is
the last transformer layer, 0 the first.
"""

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/features", task_head=False)
shared_flags.define_one("input_file", help="Comma-separated text files or globs: one example per line, "
                        "`text` or `text_a ||| text_b`.")
shared_flags.define_one("output_file", help="JSON lines output.")
shared_flags.required("input_file", "output_file")
flags.DEFINE_list("layers", ["-1", "-2", "-3", "-4"], "Encoder layers to output (negative: from the last).")
shared_flags.check("layers", lambda layers: None if all(_is_int(layer) for layer in layers) else
                   "expected comma-separated integers")
flags.DEFINE_integer("batch_size", 32, "Lines per batch.")
shared_flags.check("batch_size", shared_flags.at_least(1))


def _is_int(text):
    return text.strip().lstrip("-").isdigit()


def main(argv):
    del argv
    common.setup()
    with common.output_file("output_file", globs=["input_file"],
                            paths=["init_checkpoint", "vocab_file"]) as tmp:
        pairs = _extract(tmp)
    print(f"Features of {len(pairs)} lines: {FLAGS.output_file}")


def _extract(output_file):
    """Writes the features of --input_file's lines to `output_file`; returns the lines' (text_a, text_b)."""
    from keras_bert.tasks import feature_extraction
    from keras_bert.text import BertPreprocessor

    tokenizer = common.finetuning_tokenizer()
    encoder = common.build_encoder(tokenizer.vocab_size)
    layers = [int(layer) for layer in FLAGS.layers]
    with common.flag_errors("layers"):
        feature_extraction.check_layers(layers, encoder.config.num_hidden_layers)
    files = common.flag_files("input_file")
    with common.flag_errors("input_file"):
        pairs = [pair for path in files for pair in feature_extraction.read_lines(path)]
    feature_extraction.write_features(encoder, BertPreprocessor(tokenizer, FLAGS.max_seq_length), pairs,
                                      layers, output_file, FLAGS.batch_size)
    return pairs


if __name__ == "__main__":
    logs.run(main)
