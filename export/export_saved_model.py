"""Exports a keras_bert model as a raw-text SavedModel for TF Serving (or as a TF Hub encoder pair).

    keras-bert export_saved_model --model_path=runs/classifier/model.keras \
        --export_dir=/models/bert_classifier [--signature=text_pair] [--check]

--model_path is a `.keras` file (any keras_bert model: encoder or task model) or a checkpoint in any
format `from_pretrained` reads (Google TF1, Hugging Face, KerasHub, keras_bert, or a hub name), which
exports the model it holds (`keras_bert.load_pretrained_model`, which applies --vocab_file, --do_lower_case
and --max_seq_length to any format): a Hugging Face BertFor* or KerasHub task preset as its task model with
its trained head and label names, any other as its encoder; a
sentence-transformers directory (modules.json), or a model saved from one, also serves its
`sentence_embedding`, pooled and normalized as its modules.json says (the encoder's own default:
--pooling / --normalize override, --pooling=none turns it off). A model saved with its preprocessor
(fine-tuning recipes, `from_pretrained`, `preprocessor=`) exports with no other flag; --vocab_file,
--do_lower_case and --max_seq_length then override its parts, and one that contradicts the model (another
vocab or casing, a length beyond its position embeddings) is refused. The serving-option flags are
generated from the models' Options dataclasses (`keras_bert.models.options`: the shared ones, the
encoder's, each task folder's spec.py); one that the model does not take (given other than its default) is
refused, naming whom it applies to. The version directory is written atomically under --export_dir; the
path is printed.
"""

import subprocess
import sys

from absl import app, flags

from keras_bert.models.options import option_classes
from keras_bert.tasks import registry
from recipes import flags as shared_flags
from recipes import logs

FLAGS = flags.FLAGS
shared_flags.define("model_path")
shared_flags.define_one("export_dir", help="Model base path TF Serving watches; the version goes below it.")
shared_flags.check("export_dir", shared_flags.one_value)
shared_flags.required("model_path", "export_dir")
shared_flags.define_one("version", help="Version number; default: one more than the largest existing one.")
shared_flags.check("export_dir", shared_flags.writable_dir)
shared_flags.check_together(["export_dir", "model_path"],
                            shared_flags.not_an_input("export_dir", "model_path"), shown=["export_dir"])
shared_flags.define_one("vocab_file", help="WordPiece vocab.txt; default: the model's own, else the "
                        "vocab.txt beside --model_path.")
shared_flags.define_one("do_lower_case", None, help="Lower-case and strip accents (uncased models); default: "
                        "the model's own casing, else true.")
shared_flags.define_one("max_seq_length", None, help="Packed sequence length of the raw-text signatures; "
                        "default: the model's own or the one its checkpoint states, else 128.")
FORMS = ("text", "text_pair", "token_ids", *(form for spec in registry.specs() for form in spec.forms))
shared_flags.define_one("signature", None, help=f"What serving_default takes: {', '.join(FORMS)}; default: "
                        "the model's first input form (e.g. text; decoded answers for a question-answering "
                        "model, text_pair for multiple choice).")
shared_flags.check("signature", shared_flags.one_of(FORMS))
flags.DEFINE_enum("format", "serving", ["serving", "tfhub"],
                  "serving: one SavedModel; tfhub: <export_dir>/preprocess and <export_dir>/encoder.")
flags.DEFINE_bool("warmup", True, "Write assets.extra/tf_serving_warmup_requests.")
shared_flags.define_one("quantize", choices=["int8", "int8_matmul", "int8_weights"], help=(
    "Serve int8 Dense kernels (post-training quantization): int8_matmul (int8 x int8 matmuls, oneDNN; "
    "fastest on CPUs with VNNI), int8_weights (int8 weights computed in --dtype; any TF build), int8 "
    "(int8_matmul if this CPU has VNNI, else int8_weights)."))
flags.DEFINE_string("calibration_file", None,
                    "--quantize=int8_matmul (or int8 where it resolves so): a UTF-8 text file, one served "
                    "text a line (a few hundred): each Dense input gets one constant int8 range from them "
                    "(faster than per-request ranges).")
shared_flags.check("calibration_file", shared_flags.existing_file)
shared_flags.define_one("dtype", choices=("float32", "bfloat16"),
                        help="The Keras dtype policy the served model is built under: bfloat16 runs its "
                        "matmuls in bf16 (LayerNorm, softmax, heads and outputs float32); faster only where "
                        "the serving CPU has avx512_bf16/amx_bf16.")
shared_flags.check("quantize", shared_flags.quantize_here)
shared_flags.check_together(["dtype", "quantize", "format"], lambda values: "--quantize and --dtype are for "
                            "--format=serving exports" if values["format"] == "tfhub" and
                            (values["quantize"] or values["dtype"] != "float32") else None,
                            shown=["format", "quantize", "dtype"])
flags.DEFINE_bool("check", True, "Then run export/check_servable.py on the export (TF Serving's C++ loader).")
# The serving options of every model class (the shared ones, the encoder's, each task folder's), one flag per
# field: generated from the Options dataclasses (`keras_bert.models.options`), help texts included.
OPTION_CLASSES = option_classes()
shared_flags.define_options(OPTION_CLASSES)


def read_calibration_file(path):
    """The non-empty lines of --calibration_file (UTF-8; an error names the file and line)."""
    from keras_bert.textfiles import read_text

    lines = read_text(path).replace("\r\n", "\n").replace("\r", "\n").split("\n")  # as open()'s newlines
    texts = [line for line in lines if line.strip()]
    if not texts:
        raise app.UsageError(f"--calibration_file={path}: no non-empty line; expected one text a line")
    return texts


def main(argv):
    del argv
    from keras_bert.export import export_saved_model
    from keras_bert.export.tfhub import export_tfhub
    from keras_bert.models.pretrained import DEFAULT_SEQ_LENGTH
    from recipes.common import flag_errors, load_model

    with flag_errors("calibration_file"):
        calibration_texts = read_calibration_file(FLAGS.calibration_file) if FLAGS.calibration_file else None
    model = load_model("model_path")
    preprocessor = model.preprocessor
    takes_text = FLAGS.signature != "token_ids" or FLAGS.format == "tfhub"
    if preprocessor is None and takes_text:
        raise app.UsageError(f"--model_path={FLAGS.model_path} has no preprocessor and no vocab.txt beside "
                             "it; pass --vocab_file (or --signature=token_ids for a token-id-only export)")
    if FLAGS.format == "tfhub":
        exported = list(export_tfhub(model, preprocessor, FLAGS.export_dir[0], FLAGS.version))
    else:
        # A sentence-transformers checkpoint's pooling is the encoder's own default (from_pretrained).
        options = shared_flags.given_options(OPTION_CLASSES)
        exported = [export_saved_model(model, FLAGS.export_dir[0], None, FLAGS.version, FLAGS.signature,
                                       FLAGS.warmup,
                                       example_seq_length=FLAGS.max_seq_length or DEFAULT_SEQ_LENGTH,
                                       quantize=FLAGS.quantize, dtype=FLAGS.dtype,
                                       calibration_texts=calibration_texts, **options)]
    for path in exported:
        print(path)
    if FLAGS.check:  # the command in a fresh process: neither keras nor keras_bert imported there
        # One process for every exported SavedModel (a TF Hub pair: two): check_servable takes several.
        command = ["-m", "keras_bert_commands", "check_servable",
                   *(f"--export_dir={path}" for path in exported)]
        subprocess.run([sys.executable, *command], check=True)


if __name__ == "__main__":
    logs.run(main)
