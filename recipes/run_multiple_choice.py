"""Fine-tunes BERT for multiple choice on SWAG CSV files (the paper's setup: each ending is scored as the
pair (sent1, sent2 + ending) from its pooled output; softmax over the 4 choices).

    keras-bert run_multiple_choice --train_file=swagaf/data/train.csv --eval_file=swagaf/data/val.csv \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --output_dir=runs/swag

Writes to --output_dir: eval_results.json (accuracy, eval_loss), eval_predictions.csv / predictions.csv
(`swag_id,label,prob0..prob3` per question; label is the predicted ending), model.keras.
"""

import os

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/swag", learning_rate=2e-5, train_batch_size=16,
                               max_seq_length=128)
shared_flags.define_data_files({"train_file": "SWAG train.csv.", "eval_file": "SWAG val.csv (with labels).",
                                "predict_file": "SWAG test.csv (labels not needed)."})


def main(argv):
    del argv
    from keras_bert.tasks.multiple_choice import task as multiple_choice
    from keras_bert.tasks.multiple_choice.model import BertMultipleChoice
    from keras_bert.tasks.multiple_choice.swag import NUM_CHOICES, read_swag_examples
    from keras_bert.text import BertPreprocessor

    strategy = common.setup()
    tokenizer = common.finetuning_tokenizer(BertMultipleChoice)
    preprocessor = BertPreprocessor(tokenizer, FLAGS.max_seq_length)
    train = read_swag_examples(FLAGS.train_file) if FLAGS.do_train else None
    # Every input is parsed before the first training step: a bad eval or predict file fails in seconds.
    evaluated = read_swag_examples(FLAGS.eval_file) if FLAGS.do_eval else None
    if evaluated:
        with common.flag_errors("eval_file"):
            multiple_choice.check_labeled(evaluated, FLAGS.eval_file)
    predicted = read_swag_examples(FLAGS.predict_file) if FLAGS.do_predict else None

    def dataset(examples, batch_size, shuffle=False):
        return multiple_choice.training_dataset(examples, preprocessor, batch_size, shuffle=shuffle,
                                                seed=FLAGS.seed,
                                                pad_to_multiple_of=common.pad_to_multiple_of())

    def served(examples):  # what an export of the model would answer, packed as in training
        return multiple_choice.served(model, examples, FLAGS.eval_batch_size, preprocessor)

    with strategy.scope():
        model = common.build_task_model(tokenizer, BertMultipleChoice, {"num_choices": NUM_CHOICES})
        loss, loss_weights = model.task_loss()
        common.compile_task(model, strategy, loss, "auto", len(train) if train else None, loss_weights)
    if train:
        common.fit_task(model, dataset(train, FLAGS.train_batch_size, shuffle=True), len(train))
        common.save_task_model(model, strategy, tokenizer=tokenizer)

    if FLAGS.do_eval:
        answers = served(evaluated)
        results = multiple_choice.eval_results(model, evaluated, answers, FLAGS.eval_file)
        multiple_choice.write_predictions(os.path.join(FLAGS.output_dir, "eval_predictions.csv"), evaluated,
                                          answers)
        common.write_eval_results(results, strategy)
    if FLAGS.do_predict:
        path = os.path.join(FLAGS.output_dir, "predictions.csv")
        print("Predictions: " + multiple_choice.write_predictions(path, predicted, served(predicted)))


if __name__ == "__main__":
    logs.run(main)
