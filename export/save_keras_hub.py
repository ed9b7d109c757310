"""Writes a keras_bert model as a KerasHub preset directory, for `keras_hub.models.*.from_preset`.

    keras-bert save_keras_hub --model_path=runs/classifier/model.keras --output_dir=presets/my_bert

--model_path is a `.keras` file (any keras_bert model; a BertClassifier also becomes a BertTextClassifier
task preset) or a checkpoint directory in any format `BertEncoder.from_pretrained` reads (its encoder, with
the vocab.txt beside it as the tokenizer). The files are moved into --output_dir by atomic renames; the
directory is printed.
"""

import os

if __package__:  # python -m export.x (recipes/preamble.py: the repository root importable, quiet logs)
    from recipes import preamble  # noqa: F401  (before TensorFlow loads)
else:  # python export/x.py
    import preamble  # noqa: F401

from absl import app, flags

from recipes import flags as shared_flags
from recipes import logs

FLAGS = flags.FLAGS
shared_flags.define("model_path")
flags.DEFINE_string("output_dir", None, "The KerasHub preset directory to write.")
shared_flags.required("model_path", "output_dir")


def main(argv):
    del argv
    import keras

    import keras_bert

    path = FLAGS.model_path
    if path.endswith(".keras"):
        if not os.path.isfile(path):
            raise app.UsageError(f"--model_path={path}: no such .keras file")
        model = keras.saving.load_model(path, compile=False)
    else:
        model = keras_bert.BertEncoder.from_pretrained(path)
    print(keras_bert.save_keras_hub(model, FLAGS.output_dir))


if __name__ == "__main__":
    logs.run(main)
