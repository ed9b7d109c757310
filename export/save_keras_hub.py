"""Writes a keras_bert model as a KerasHub preset directory, for `keras_hub.models.*.from_preset`.

    keras-bert save_keras_hub --model_path=runs/classifier/model.keras --output_dir=presets/my_bert

--model_path is a `.keras` file (any keras_bert model; a BertClassifier also becomes a BertTextClassifier
task preset) or a checkpoint in any format `from_pretrained` reads: the model it holds
(`recipes.common.load_model`: a task checkpoint's task model with its head, else its encoder), with
the vocab.txt beside it as the tokenizer. --output_dir may not be, hold or lie inside --model_path; an
existing non-empty one is refused unless --overwrite (then replaced whole). The preset is written beside it
and renamed into place; the directory is printed.
"""


from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
shared_flags.define("model_path")
shared_flags.define_one("output_dir", help="The KerasHub preset directory to write.")
shared_flags.required("model_path", "output_dir")
shared_flags.define("overwrite")


def main(argv):
    del argv
    import keras_bert

    with common.claim_output("output_dir", "dir", paths=["model_path"]):
        model = common.load_model("model_path")
        print(keras_bert.save_keras_hub(model, FLAGS.output_dir, overwrite=FLAGS.overwrite))


if __name__ == "__main__":
    logs.run(main)
