"""Exports a keras_bert model as one LiteRT (TensorFlow Lite) file that takes raw text.

    keras-bert export_litert --model_path=runs/classifier/model.keras --output_file=classifier.tflite \
        [--quantize=int8|float16]

--model_path is anything export_saved_model takes (a `.keras` file, or a Google / Hugging Face / KerasHub /
sentence-transformers checkpoint directory, loaded the same way, with the same --vocab_file,
--do_lower_case, --max_seq_length overrides and serving-option flags). The file's one signature,
serving_default, takes the model's raw-text inputs and returns what `model.serve()` returns; run it with
`keras_bert.export.load_litert(path)`. A task whose answers need ops LiteRT has no kernel for is refused,
naming them. The path is printed.
"""

from absl import app, flags

from keras_bert.models.options import option_classes
from keras_bert.tasks import registry
from recipes import flags as shared_flags
from recipes import logs

FLAGS = flags.FLAGS
shared_flags.define("model_path")
shared_flags.define_one("output_file", help="The .tflite file to write.")
shared_flags.required("model_path", "output_file")
shared_flags.define_one("vocab_file", help="WordPiece vocab.txt; default: the model's own, else the "
                        "vocab.txt beside --model_path.")
shared_flags.define_one("do_lower_case", None, help="Lower-case and strip accents (uncased models); default: "
                        "the model's own casing, else true.")
shared_flags.define_one("max_seq_length", None, help="Packed sequence length; default: the model's own or "
                        "the one its checkpoint states, else 128.")
FORMS = ["text", "text_pair", *(form for spec in registry.specs() for form in spec.forms)]
shared_flags.define_one("signature", None, help="What serving_default takes; default: the model's first "
                        "input form.")
shared_flags.check("signature", shared_flags.one_of(FORMS))
shared_flags.define_one("quantize", choices=["int8", "float16"], help="int8: int8 weights and dynamic-range "
                        "int8 matmuls; float16: float16 weights.")
shared_flags.define_one("overwrite", help="Replace an existing --output_file.")
# The serving options of every model class, one flag per field, as export_saved_model has them.
OPTION_CLASSES = option_classes()
shared_flags.define_options(OPTION_CLASSES)


def main(argv):
    del argv
    from keras_bert.export.litert import require_runtime
    from recipes.common import claim_output

    require_runtime()  # before the model loads: one line naming the extra to install
    # claimed before any work: refused when it is (or links to) --model_path or --vocab_file
    with claim_output("output_file", paths=["model_path", "vocab_file"]):
        _export()


def _export():
    """Loads --model_path and writes --output_file (claimed by `main`)."""
    from keras_bert.export import export_litert
    from recipes.common import load_model

    model = load_model("model_path")  # as export_saved_model loads it: the flags' overrides, its task head
    preprocessor = model.preprocessor
    if preprocessor is None:
        raise app.UsageError(f"--model_path={FLAGS.model_path} has no preprocessor and no vocab.txt beside "
                             "it; pass --vocab_file")
    # A sentence-transformers checkpoint's pooling is the encoder's own default (from_pretrained).
    options = shared_flags.given_options(OPTION_CLASSES)
    print(export_litert(model, FLAGS.output_file, FLAGS.quantize, preprocessor, FLAGS.signature,
                        FLAGS.overwrite, **options))


if __name__ == "__main__":
    logs.run(main)
