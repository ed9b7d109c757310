"""Fine-tunes BERT for extractive question answering on SQuAD v1.1 / v2.0 JSON files.

    keras-bert run_squad --train_file=train-v1.1.json --predict_file=dev-v1.1.json \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --max_seq_length=384 --doc_stride=128 \\
        --output_dir=runs/squad
    keras-bert run_squad --version_2_with_negative --null_score_diff_threshold=-1.0 ...

Contexts longer than a window are split into windows `doc_stride` pieces apart, in training as the exported
model serves them (a window that does not hold the whole answer is trained to point at [CLS]); each answer is
predicted in the window where its tokens have the most context, as the characters of the context its pieces
came from (`keras_bert.tasks.squad.answers`, the decoding an exported span labeler serves). Training
questions whose answer text is not found at its offset are skipped (their number is logged). A saved span
labeler predicts with `--init_checkpoint=runs/squad/model.keras --do_train=false --do_predict`.

--do_predict writes predictions.json, nbest_predictions.json (and null_odds.json for v2.0) for
--predict_file; --do_eval also scores them with the official v1.1 / v2.0 EM and F1 (eval_results.json;
v2.0 adds HasAns/NoAns splits and the best null threshold).
"""

from absl import flags

from keras_bert.tasks.squad.answers import AnswerRules
from keras_bert.tasks.squad.task import SquadSettings
from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/squad", max_seq_length=SquadSettings.max_seq_length)
shared_flags.define_data_files({"train_file": "SQuAD JSON for training.",
                                "predict_file": "SQuAD JSON to predict (and, with --do_eval, score)."},
                               eval_file="predict_file")
shared_flags.define_fields(AnswerRules)


def main(argv):
    del argv
    from keras_bert.tasks.squad.task import SquadSettings, SquadTask

    def make_task():  # once the run is set up: --max_seq_length unset is then the checkpoint's own
        settings = SquadSettings(
            max_seq_length=FLAGS.max_seq_length, doc_stride=FLAGS.doc_stride,
            max_query_length=FLAGS.max_query_length,
            version_2_with_negative=FLAGS.version_2_with_negative, n_best_size=FLAGS.n_best_size,
            max_answer_length=FLAGS.max_answer_length,
            null_score_diff_threshold=FLAGS.null_score_diff_threshold)
        return SquadTask(FLAGS.train_file, FLAGS.predict_file, settings)

    windows = ("max_seq_length", "doc_stride", "max_query_length")
    common.finetune(make_task,
                    {"train": ("train_file", *windows), "model": ("init_checkpoint",),
                     "eval": ("predict_file", *windows), "predict": ("predict_file", *windows)})


if __name__ == "__main__":
    logs.run(main)
