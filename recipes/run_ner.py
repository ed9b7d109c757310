"""Fine-tunes BERT for named-entity recognition on CoNLL-2003 files (the paper's feature: a tag per word,
predicted at the word's first WordPiece).

    keras-bert run_ner --train_file=eng.train --eval_file=eng.testa --predict_file=eng.testb \\
        --init_checkpoint=cased_L-12_H-768_A-12/bert_model.ckpt --nodo_lower_case --output_dir=runs/ner

Files: `token ... tag` per line, blank lines between sentences, -DOCSTART- lines ignored; tags IOB1 or IOB2
(IOBES with --iobes). The tag set is the training file's ("O" first); an unknown tag in another file is an
error naming its line. A sentence longer than --max_seq_length is read in windows --stride pieces apart, in
training as in prediction (each piece labelled and predicted in the window where it has the most context),
as the exported model serves entities.

Writes to --output_dir: eval_results.json (entity-level precision/recall/F1 with conlleval's chunk rules,
token accuracy, eval_loss), eval_predictions.txt / test_predictions.txt (`token gold predicted` lines, the
input of conlleval.pl), model.keras and labels.json (the tag list).
"""

import os

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/ner", learning_rate=5e-5, train_batch_size=32,
                               max_seq_length=128)
shared_flags.define_data_files({"train_file": "CoNLL file for training.",
                                "eval_file": "CoNLL file to score (--do_eval).",
                                "predict_file": "CoNLL file to predict (--do_predict)."})
flags.DEFINE_bool("iobes", False, "Tags use the IOBES scheme (E-/S- chunk rules).")
shared_flags.define("stride")


def main(argv):
    del argv
    import tensorflow as tf

    from keras_bert.tasks.finetuning import check_num_classes
    from keras_bert.tasks.labels import read_labels
    from keras_bert.tasks.ner import conll
    from keras_bert.tasks.ner import task as ner
    from keras_bert.tasks.ner.model import BertTokenClassifier
    from keras_bert.tasks.ner.windows import training_windows
    from keras_bert.text import BertPreprocessor

    strategy = common.setup()
    tokenizer = common.finetuning_tokenizer(BertTokenClassifier)
    preprocessor = BertPreprocessor(tokenizer, FLAGS.max_seq_length)
    with common.flag_errors("train_file", "init_checkpoint"):
        train, tags = ner.tag_list(FLAGS.train_file, read_labels(FLAGS.init_checkpoint))
    # Every input is parsed before the first training step: a bad eval or predict file fails in seconds.
    read = {}
    for flag, wanted in (("eval_file", FLAGS.do_eval), ("predict_file", FLAGS.do_predict)):
        if wanted:
            with common.flag_errors(flag):
                read[flag] = conll.read_conll_file(FLAGS[flag].value, tag_list=tags)
    if FLAGS.do_train:
        with common.flag_errors("stride", "max_seq_length"):
            inputs, labels, weights = training_windows(train, preprocessor, tags, FLAGS.stride)
        print(f"Training: {len(train)} sentences, {len(labels)} windows")

    with strategy.scope():
        model = common.build_task_model(tokenizer, BertTokenClassifier, {"labels": tags})
        with common.flag_errors("init_checkpoint"):
            check_num_classes(model, tags)
        loss, loss_weights = model.task_loss()
        common.compile_task(model, strategy, loss, num_train_examples=len(labels) if FLAGS.do_train else None,
                            loss_weights=loss_weights)
    if FLAGS.do_train:
        dataset = tf.data.Dataset.from_tensor_slices((inputs, labels, weights)).shuffle(len(labels),
                                                                                        seed=FLAGS.seed)
        batches = common.without_padding(dataset.batch(FLAGS.train_batch_size), per_token_labels=True)
        common.fit_task(model, batches, len(labels))
        common.save_task_model(model, strategy, tags, tokenizer)

    if model.labels is None:  # a saved tagger without tag names: served entities and word tags need them
        model.labels = list(tags)

    def predict(flag, name):
        return ner.predict_sentences(model, read[flag], preprocessor, tags,
                                     os.path.join(FLAGS.output_dir, f"{name}_predictions.txt"),
                                     FLAGS.eval_batch_size, FLAGS.stride)

    if FLAGS.do_eval:
        common.write_eval_results(ner.eval_results(*predict("eval_file", "eval"), iobes=FLAGS.iobes),
                                  strategy)
    if FLAGS.do_predict:
        predict("predict_file", "test")
        print(f"Predictions: {os.path.join(FLAGS.output_dir, 'test_predictions.txt')}")


if __name__ == "__main__":
    logs.run(main)
