"""Exports a keras_bert model as a raw-text SavedModel for TF Serving (or as a TF Hub encoder pair).

    python -m export.export_saved_model --model_path=runs/classifier/model.keras \
        --export_dir=/models/bert_classifier [--signature=text_pair] [--check]

--model_path is a `.keras` file (any keras_bert model: encoder or task model) or a checkpoint directory in
any format `BertEncoder.from_pretrained` reads (Google TF1, Hugging Face, keras_bert), which exports the
encoder. A model saved with its preprocessor (fine-tuning recipes, `from_pretrained`, `preprocessor=`)
exports with no other flag; --vocab_file, --do_lower_case and --max_seq_length then override its parts, and
one that contradicts the model (another vocab or casing) is refused. The version directory is written
atomically under --export_dir; the path is printed.
"""

import os
import subprocess
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model_path", None, "A .keras model file, or a checkpoint directory (exports the encoder).")
flags.DEFINE_string("export_dir", None, "Model base path TF Serving watches; the version goes below it.")
flags.DEFINE_integer("version", None, "Version number; default: one more than the largest existing one.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt; default: the model's own, else the vocab.txt "
                    "beside --model_path.")
flags.DEFINE_bool("do_lower_case", None, "Lower-case and strip accents (uncased models); default: the model's "
                  "own casing, else true.")
flags.DEFINE_integer("max_seq_length", None, "Packed sequence length of the raw-text signatures; default: the "
                     "model's own, else 128.")
flags.DEFINE_enum("signature", None, ["text", "text_pair", "token_ids"],
                  "What serving_default takes; default: text, or text_pair for span labeler / multiple choice.")
flags.DEFINE_enum("format", "serving", ["serving", "tfhub"],
                  "serving: one SavedModel; tfhub: <export_dir>/preprocess and <export_dir>/encoder.")
flags.DEFINE_bool("warmup", True, "Write assets.extra/tf_serving_warmup_requests.")
flags.DEFINE_bool("check", True, "Then run export/check_servable.py on the export (TF Serving's C++ loader).")
flags.mark_flags_as_required(["model_path", "export_dir"])


def load_model(path):
    """A keras_bert model from a .keras file, or the encoder of a checkpoint directory (with the preprocessor
    of the vocab.txt beside it, cased and packed as the flags say, unless --vocab_file replaces it)."""
    import keras

    import keras_bert  # noqa: F401  (registers the classes .keras files name)

    if path.endswith(".keras"):
        if not os.path.isfile(path):
            raise app.UsageError(f"--model_path={path}: no such .keras file")
        return keras.saving.load_model(path, compile=False)  # exported for inference: no optimizer needed
    if FLAGS.vocab_file:
        return keras_bert.load_encoder(path)
    return keras_bert.BertEncoder.from_pretrained(path, seq_length=FLAGS.max_seq_length,
                                                  lower_case=FLAGS.do_lower_case)


def main(argv):
    del argv
    from keras_bert.checkpoints.files import find_vocab_file
    from keras_bert.export import ExportError, export_saved_model
    from keras_bert.export.preprocessing import DEFAULT_SEQ_LENGTH, preprocessor_with_overrides
    from keras_bert.export.tfhub import export_tfhub

    model = load_model(FLAGS.model_path)
    takes_text = FLAGS.signature != "token_ids" or FLAGS.format == "tfhub"
    try:
        preprocessor = preprocessor_with_overrides(model, FLAGS.vocab_file, FLAGS.do_lower_case,
                                                   FLAGS.max_seq_length,
                                                   find_vocab_file(FLAGS.model_path) if takes_text else None)
    except ExportError as e:
        e.add_note(f"given as --model_path={FLAGS.model_path} with " + " ".join(
            FLAGS[name].serialize() for name in ("vocab_file", "do_lower_case", "max_seq_length")
            if FLAGS[name].value is not None))
        raise
    if preprocessor is None and takes_text:
        raise app.UsageError(f"--model_path={FLAGS.model_path} has no preprocessor and no vocab.txt beside it; "
                             "pass --vocab_file (or --signature=token_ids for a token-id-only export)")
    if FLAGS.format == "tfhub":
        exported = list(export_tfhub(model, preprocessor, FLAGS.export_dir, FLAGS.version))
    else:
        exported = [export_saved_model(model, FLAGS.export_dir, preprocessor, FLAGS.version, FLAGS.signature,
                                       FLAGS.warmup,
                                       example_seq_length=FLAGS.max_seq_length or DEFAULT_SEQ_LENGTH)]
    for path in exported:
        print(path)
    if FLAGS.check:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_servable.py")
        for path in exported:
            subprocess.run([sys.executable, script, f"--export_dir={path}"], check=True)


if __name__ == "__main__":
    app.run(main)
