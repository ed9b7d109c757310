"""Fine-tunes BERT for multiple choice on SWAG CSV files (the paper's setup: each ending is scored as the
pair (sent1, sent2 + ending) from its pooled output; softmax over the 4 choices).

    keras-bert run_multiple_choice --train_file=swagaf/data/train.csv --eval_file=swagaf/data/val.csv \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --output_dir=runs/swag

Writes to --output_dir: eval_results.json (accuracy, eval_loss), eval_predictions.csv / predictions.csv
(`swag_id,label,prob0..prob3` per question; label is the predicted ending), model.keras.
"""

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/swag")  # the library's defaults (training/defaults.py)
shared_flags.define_data_files({"train_file": "SWAG train.csv.", "eval_file": "SWAG val.csv (with labels).",
                                "predict_file": "SWAG test.csv (labels not needed)."})


def main(argv):
    del argv
    from keras_bert.tasks.multiple_choice.task import MultipleChoiceTask

    common.finetune(MultipleChoiceTask(FLAGS.train_file, FLAGS.eval_file, FLAGS.predict_file),
                    {"model": ("init_checkpoint",), "eval": ("eval_file",)})


if __name__ == "__main__":
    logs.run(main)
