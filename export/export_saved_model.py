"""Exports a keras_bert model as a raw-text SavedModel for TF Serving (or as a TF Hub encoder pair).

    python -m export.export_saved_model --model_path=runs/classifier/model.keras \
        --export_dir=/models/bert_classifier --max_seq_length=128 [--signature=text_pair] [--check]

--model_path is a `.keras` file (any keras_bert model: encoder or task model) or a checkpoint directory in
any format `BertEncoder.from_pretrained` reads (Google TF1, Hugging Face, keras_bert), which exports the
encoder. The version directory is written atomically under --export_dir; the path is printed.
"""

import os
import subprocess
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model_path", None, "A .keras model file, or a checkpoint directory (exports the encoder).")
flags.DEFINE_string("export_dir", None, "Model base path TF Serving watches; the version goes below it.")
flags.DEFINE_integer("version", None, "Version number; default: one more than the largest existing one.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt; default: the vocab.txt beside --model_path.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased models).")
flags.DEFINE_integer("max_seq_length", 128, "Packed sequence length of the raw-text signatures.")
flags.DEFINE_enum("signature", None, ["text", "text_pair", "token_ids"],
                  "What serving_default takes; default: text, or text_pair for span labeler / multiple choice.")
flags.DEFINE_enum("format", "serving", ["serving", "tfhub"],
                  "serving: one SavedModel; tfhub: <export_dir>/preprocess and <export_dir>/encoder.")
flags.DEFINE_bool("warmup", True, "Write assets.extra/tf_serving_warmup_requests.")
flags.DEFINE_enum("quantize", None, ["int8"], "Serve int8 Dense kernels (post-training weight quantization).")
flags.DEFINE_bool("check", True, "Then run export/check_servable.py on the export (TF Serving's C++ loader).")
flags.mark_flags_as_required(["model_path", "export_dir"])


def load_model(path):
    """A keras_bert model from a .keras file, or the encoder of a checkpoint directory."""
    import keras

    import keras_bert  # noqa: F401  (registers the classes .keras files name)

    if path.endswith(".keras"):
        if not os.path.isfile(path):
            raise app.UsageError(f"--model_path={path}: no such .keras file")
        return keras.saving.load_model(path)
    return keras_bert.BertEncoder.from_pretrained(path)


def main(argv):
    del argv
    from keras_bert.checkpoints.files import find_vocab_file
    from keras_bert.export import export_saved_model
    from keras_bert.export.tfhub import export_tfhub
    from keras_bert.text import BertPreprocessor, BertTokenizer

    if FLAGS.quantize and FLAGS.format == "tfhub":
        raise app.UsageError("--quantize is for --format=serving exports")
    model = load_model(FLAGS.model_path)
    vocab_file = FLAGS.vocab_file or find_vocab_file(FLAGS.model_path)
    preprocessor = None
    if FLAGS.signature != "token_ids" or FLAGS.format == "tfhub":
        if vocab_file is None:
            raise app.UsageError(f"no vocab.txt beside --model_path={FLAGS.model_path}; pass --vocab_file "
                                 "(or --signature=token_ids for a token-id-only export)")
        preprocessor = BertPreprocessor(BertTokenizer(vocab_file, lower_case=FLAGS.do_lower_case),
                                        FLAGS.max_seq_length)
    if FLAGS.format == "tfhub":
        exported = list(export_tfhub(model, preprocessor, FLAGS.export_dir, FLAGS.version))
    else:
        exported = [export_saved_model(model, FLAGS.export_dir, preprocessor, FLAGS.version, FLAGS.signature,
                                       FLAGS.warmup, example_seq_length=FLAGS.max_seq_length,
                                       quantize=FLAGS.quantize)]
    for path in exported:
        print(path)
    if FLAGS.check:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_servable.py")
        for path in exported:
            subprocess.run([sys.executable, script, f"--export_dir={path}"], check=True)


if __name__ == "__main__":
    app.run(main)
