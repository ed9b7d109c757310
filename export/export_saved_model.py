"""Exports a keras_bert model as a raw-text SavedModel for TF Serving (or as a TF Hub encoder pair).

    python -m export.export_saved_model --model_path=runs/classifier/model.keras \
        --export_dir=/models/bert_classifier --max_seq_length=128 [--signature=text_pair] [--check]

--model_path is a `.keras` file (any keras_bert model: encoder or task model) or a checkpoint directory in
any format `BertEncoder.from_pretrained` reads (Google TF1, Hugging Face, keras_bert), which exports the
encoder; a sentence-transformers directory (modules.json) also serves its `sentence_embedding`, pooled and
normalized as its modules.json says (--pooling / --normalize override). The version directory is written
atomically under --export_dir; the path is printed. A span labeler serves decoded answers (question, context
in); --doc_stride, --max_query_length, --n_best_size, --max_answer_length, --version_2_with_negative and
--null_score_diff_threshold are run_squad's.
"""

import os
import sys

if not __package__:  # `python export/x.py`: import from the repository root, as `python -m export.x` does
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from recipes import logs

logs.quiet(__name__)  # before TensorFlow loads

import subprocess

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("model_path", None, "A .keras model file, or a checkpoint directory (exports the encoder).")
flags.DEFINE_string("export_dir", None, "Model base path TF Serving watches; the version goes below it.")
flags.DEFINE_integer("version", None, "Version number; default: one more than the largest existing one.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocab.txt; default: the vocab.txt beside --model_path.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased models).")
flags.DEFINE_integer("max_seq_length", 128, "Packed sequence length of the raw-text signatures.")
flags.DEFINE_enum("signature", None, ["text", "text_pair", "token_ids", "question_context"],
                  "What serving_default takes; default: text, question_context (decoded answers) for a span "
                  "labeler, text_pair for multiple choice.")
flags.DEFINE_enum("format", "serving", ["serving", "tfhub"],
                  "serving: one SavedModel; tfhub: <export_dir>/preprocess and <export_dir>/encoder.")
flags.DEFINE_bool("warmup", True, "Write assets.extra/tf_serving_warmup_requests.")
flags.DEFINE_bool("check", True, "Then run export/check_servable.py on the export (TF Serving's C++ loader).")
flags.DEFINE_enum("long_text", "truncate", ["truncate", "windows"],
                  "Classifier texts over --max_seq_length: truncate, or average the logits of strided windows.")
flags.DEFINE_integer("stride", None, "Pieces between windows (--long_text=windows, token classifiers); default: "
                                     "half of --max_seq_length - 2.")
flags.DEFINE_enum("pooling", None, ["cls", "mean"], "Encoder: also serve `sentence_embedding`, the [CLS] vector or "
                                                    "the mean over real tokens; default: a sentence-transformers "
                                                    "directory's own (modules.json), else none.")
flags.DEFINE_bool("normalize", False, "L2-normalize `sentence_embedding` (default: a sentence-transformers "
                                      "directory's own).")
# Span labeler (question_context): how run_squad cut windows and chose answers, with its defaults.
flags.DEFINE_integer("doc_stride", 128, "Span labeler: pieces between the starts of consecutive context windows.")
flags.DEFINE_integer("max_query_length", 64, "Span labeler: questions are cut to this many pieces.")
flags.DEFINE_integer("n_best_size", 20, "Span labeler: start and end candidates per window.")
flags.DEFINE_integer("max_answer_length", 30, "Span labeler: longest answer, in pieces.")
flags.DEFINE_bool("version_2_with_negative", False, "Span labeler: SQuAD v2.0 model (has_answer output).")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "Span labeler, v2.0: no answer when null score - best span "
                   "score exceeds this.")
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


def sentence_pooling_flags(path):
    """(pooling, normalize): --pooling / --normalize where given, else those of a sentence-transformers
    directory at `path` (modules.json), else none."""
    from keras_bert.checkpoints.sentence_transformers import sentence_pooling

    pooling, normalize = FLAGS.pooling, FLAGS.normalize
    own = sentence_pooling(path) if os.path.isdir(path) else None
    if own is not None:
        pooling = pooling or own[0]
        normalize = normalize if FLAGS["normalize"].present else own[1]
    return pooling, normalize


def main(argv):
    del argv
    from keras_bert.checkpoints.files import find_vocab_file
    from keras_bert.data.squad_answers import AnswerRules
    from keras_bert.export import export_saved_model
    from keras_bert.export.tfhub import export_tfhub
    from keras_bert.text import BertPreprocessor, BertTokenizer

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
        pooling, normalize = sentence_pooling_flags(FLAGS.model_path)
        rules = AnswerRules(FLAGS.doc_stride, FLAGS.max_query_length, FLAGS.n_best_size, FLAGS.max_answer_length,
                            FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold)
        exported = [export_saved_model(model, FLAGS.export_dir, preprocessor, FLAGS.version, FLAGS.signature,
                                       FLAGS.warmup, example_seq_length=FLAGS.max_seq_length,
                                       long_text=FLAGS.long_text, stride=FLAGS.stride, pooling=pooling,
                                       normalize=normalize, answer_rules=rules)]
    for path in exported:
        print(path)
    if FLAGS.check:
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_servable.py")
        for path in exported:
            subprocess.run([sys.executable, script, f"--export_dir={path}"], check=True)


if __name__ == "__main__":
    app.run(main)
