"""Fine-tunes BERT for sentence (pair) classification or regression: GLUE, TFDS glue/*, or your CSV/TSV.

    keras-bert run_classifier --task_name=MRPC --data_dir=glue_data/MRPC \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --output_dir=runs/mrpc
    keras-bert run_classifier --tfds_name=glue/sst2 --tfds_data_dir=~/tensorflow_datasets ...
    keras-bert run_classifier --task_name=custom --train_file=train.csv --eval_file=dev.csv \\
        --predict_file=test.csv --init_checkpoint=path/to/hf_model_dir ...

Data, by the first of these given: --tfds_name; --task_name=<GLUE task> with --data_dir (the official TSV
directory); --train_file/--eval_file/--predict_file (custom format: header with `text`, optional `text_b`,
`label`; classes are the training file's labels, or --is_regression); none of them: the default task,
real stdlib docstring sentences labeled by topic (keras_bert.tasks.classification.default_data).

Writes to --output_dir: eval_results.json (the task's official metrics + eval_loss; MNLI: per dev split),
the predictions (GLUE: the submission file, e.g. MNLI-m.tsv / AX.tsv; custom: predictions.tsv with
`index<TAB>prediction`), model.keras (the fine-tuned BertClassifier) and labels.json.
"""

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/classifier")  # the library's defaults (training/defaults.py)
shared_flags.define("task_name", "data_dir", "tfds_name", "tfds_data_dir")
flags.DEFINE_string("ax_data_dir", None, "MNLI --do_predict: the AX diagnostic.tsv's directory (AX.tsv).")
shared_flags.check("ax_data_dir", shared_flags.existing_dir)
shared_flags.define_data_files({"train_file": "Custom task: training CSV/TSV (text[,text_b],label).",
                                "eval_file": "Custom task: evaluation CSV/TSV (with labels).",
                                "predict_file": "Custom task: CSV/TSV to predict (label column optional)."},
                               optional=True)
shared_flags.check_together(["task_name", "data_dir", "tfds_name"], shared_flags.glue_data_problem,
                            shown=["task_name"])
flags.DEFINE_bool("is_regression", False, "Custom task: labels are numbers (one output, MSE loss).")
DATA_FLAGS = ["tfds_name", "tfds_data_dir", "task_name", "data_dir", "ax_data_dir", "train_file", "eval_file",
              "predict_file"]


def load_task():
    """The ClassificationTask of the data flags (`classification_task`: see the module docstring); its errors
    name the data flags given (and --init_checkpoint for custom files without a training file: its
    labels.json holds the classes)."""
    from keras_bert.tasks.classification.task import classification_task

    given = [name for name in DATA_FLAGS if FLAGS[name].value]
    custom_without_train = not ({"tfds_name", "data_dir", "train_file"} & set(given)) and given
    with common.flag_errors(*given, *(("init_checkpoint",) if custom_without_train else ())):
        return classification_task(**{name: FLAGS[name].value for name in DATA_FLAGS},
                                   is_regression=FLAGS.is_regression, label_list=common.checkpoint_labels(),
                                   train=FLAGS.do_train, evaluate=FLAGS.do_eval, predict=FLAGS.do_predict)


def main(argv):
    del argv
    common.finetune(load_task, {"model": ("init_checkpoint",)})


if __name__ == "__main__":
    logs.run(main)
