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

import contextlib

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/classifier")  # the library's defaults (training/defaults.py)
shared_flags.define("task_name", "data_dir", "tfds_name", "tfds_data_dir")
flags.DEFINE_string("ax_data_dir", None, "With --task_name=MNLI --do_predict: directory of the AX "
                    "diagnostic.tsv, also predicted (AX.tsv).")
shared_flags.check("ax_data_dir", shared_flags.existing_dir)
shared_flags.define_data_files({"train_file": "Custom task: training CSV/TSV (text[,text_b],label).",
                                "eval_file": "Custom task: evaluation CSV/TSV (with labels).",
                                "predict_file": "Custom task: CSV/TSV to predict (label column optional)."},
                               optional=True)
shared_flags.check_together(["task_name", "data_dir", "tfds_name"], lambda values: (
    f"--task_name={values['task_name']} needs --data_dir (the GLUE task's directory)"
    if values["task_name"] and values["task_name"].lower() != "custom" and not values["data_dir"]
    and not values["tfds_name"] else None), shown=["task_name"])
flags.DEFINE_bool("is_regression", False, "Custom task: labels are numbers (one output, MSE loss).")


def load_task():
    """The ClassificationTask of the data flags (see the module docstring)."""
    from keras_bert.tasks.classification import glue
    from keras_bert.tasks.classification import task as classification

    splits = {"train": FLAGS.do_train, "evaluate": FLAGS.do_eval, "predict": FLAGS.do_predict}
    if FLAGS.tfds_name:
        with common.flag_errors("tfds_name", "tfds_data_dir"):
            return classification.tfds_task(FLAGS.tfds_name, FLAGS.tfds_data_dir, **splits)
    if FLAGS.task_name and FLAGS.task_name.lower() != "custom":
        with common.flag_errors("task_name"):
            task = glue.get_glue_task(FLAGS.task_name)
        if task.name == "ax":
            raise ValueError("--task_name=AX has no training data: fine-tune --task_name=MNLI and pass "
                             "--ax_data_dir")
        with common.flag_errors("data_dir"):
            return classification.glue_task(task.name, FLAGS.data_dir, ax_data_dir=FLAGS.ax_data_dir,
                                            **splits)
    if FLAGS.train_file or FLAGS.eval_file or FLAGS.predict_file:
        train_file, eval_file, predict_file = FLAGS.train_file, FLAGS.eval_file, FLAGS.predict_file
    else:
        from keras_bert.tasks.classification.default_data import default_classification_files

        train_file, eval_file = default_classification_files()
        predict_file = eval_file
        print(f"No data flags: the default task (stdlib docstring topics), {train_file} and {eval_file}")
    # Without a training file the classes come from --init_checkpoint's labels.json.
    with contextlib.nullcontext() if train_file else common.flag_errors("train_file", "init_checkpoint"):
        return classification.custom_task(
            train_file, eval_file if FLAGS.do_eval else None, predict_file if FLAGS.do_predict else None,
            is_regression=FLAGS.is_regression, label_list=common.checkpoint_labels(),
            train=FLAGS.do_train)


def main(argv):
    del argv
    common.finetune(load_task, {"model": ("init_checkpoint",)})


if __name__ == "__main__":
    logs.run(main)
