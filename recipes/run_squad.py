"""Fine-tunes BERT for extractive question answering on SQuAD v1.1 / v2.0 JSON files.

    python -m recipes.run_squad --train_file=train-v1.1.json --predict_file=dev-v1.1.json \\
        --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt --max_seq_length=384 --doc_stride=128 \\
        --output_dir=runs/squad
    python -m recipes.run_squad --version_2_with_negative --null_score_diff_threshold=-1.0 ...

Contexts longer than a window are split into windows `doc_stride` pieces apart; each answer is predicted in
the window where its tokens have the most context, and mapped back onto the original text. Training
questions whose answer text is not found at its offset are skipped (their number is logged).

--do_predict writes predictions.json, nbest_predictions.json (and null_odds.json for v2.0) for
--predict_file; --do_eval also scores them with the official v1.1 / v2.0 EM and F1 (eval_results.json;
v2.0 adds HasAns/NoAns splits and the best null threshold).
"""

import os
import sys

if not __package__:  # `python recipes/x.py`: import from the repository root, as `python -m recipes.x` does
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from recipes import logs

logs.quiet(__name__)  # before TensorFlow loads

import keras
import numpy as np
import tensorflow as tf
from absl import app, flags

from recipes import common

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/squad", learning_rate=3e-5, train_batch_size=32,
                               max_seq_length=384)
flags.DEFINE_string("train_file", None, "SQuAD JSON for training.")
flags.DEFINE_string("predict_file", None, "SQuAD JSON to predict (and, with --do_eval, score).")
flags.DEFINE_bool("version_2_with_negative", False, "SQuAD v2.0: questions may have no answer.")
flags.DEFINE_integer("doc_stride", 128, "Pieces between the starts of consecutive context windows.")
flags.DEFINE_integer("max_query_length", 64, "Questions are cut to this many pieces.")
flags.DEFINE_integer("n_best_size", 20, "Candidates considered (and listed in nbest_predictions.json).")
flags.DEFINE_integer("max_answer_length", 30, "Longest answer, in pieces.")
flags.DEFINE_float("null_score_diff_threshold", 0.0, "v2.0: predict no answer when null score - best span "
                   "score exceeds this.")


def main(argv):
    del argv
    from keras_bert.data import features, squad
    from keras_bert.metrics import squad as squad_metrics
    from keras_bert.models.span_labeler import BertSpanLabeler
    from keras_bert.textfiles import read_json

    if FLAGS.do_train and not FLAGS.train_file:
        raise ValueError("--do_train needs --train_file (a SQuAD JSON file)")
    if (FLAGS.do_eval or FLAGS.do_predict) and not FLAGS.predict_file:
        raise ValueError("--do_eval/--do_predict need --predict_file (a SQuAD JSON file)")
    strategy = common.setup()
    tokenizer = common.finetuning_tokenizer()
    lookup = features.WordPieceLookup(tokenizer)

    def windows(examples, is_training):
        found = features.squad_features(examples, lookup, FLAGS.max_seq_length, FLAGS.doc_stride,
                                        FLAGS.max_query_length, is_training)
        return found, features.squad_arrays(found, lookup, FLAGS.max_seq_length)

    # Every input is parsed before the first training step: a bad predict file fails in seconds.
    predict_examples = None
    if FLAGS.do_eval or FLAGS.do_predict:
        predict_examples, _ = squad.read_squad_examples(FLAGS.predict_file, False, FLAGS.version_2_with_negative)
    train = None
    if FLAGS.do_train:
        examples, skipped = squad.read_squad_examples(FLAGS.train_file, True, FLAGS.version_2_with_negative)
        if not examples:
            raise ValueError(f"--train_file={FLAGS.train_file}: no usable training questions "
                             f"({len(skipped)} skipped)")
        train_features, train = windows(examples, True)
        print(f"Training: {len(examples)} questions ({len(skipped)} skipped: answer not at its offset), "
              f"{len(train_features)} windows")

    with strategy.scope():
        model = common.build_task_model(tokenizer, BertSpanLabeler, BertSpanLabeler)
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        # The original's loss: the mean of the start and end cross-entropies.
        common.compile_task(model, strategy, {"start_logits": loss, "end_logits": loss},
                            num_train_examples=len(train[0]["input_word_ids"]) if train else None,
                            loss_weights={"start_logits": 0.5, "end_logits": 0.5})
    if train:
        dataset = tf.data.Dataset.from_tensor_slices(train).shuffle(len(train[0]["input_word_ids"]), seed=FLAGS.seed)
        common.fit_task(model, common.without_padding(dataset.batch(FLAGS.train_batch_size)),
                        len(train[0]["input_word_ids"]))
        common.save_task_model(model, strategy)

    if predict_examples is None:
        return
    examples = predict_examples
    predict_features, (inputs, _) = windows(examples, False)
    outputs = model.predict(inputs, batch_size=FLAGS.eval_batch_size, verbose=0)
    result = squad.postprocess_predictions(
        examples, predict_features, np.asarray(outputs["start_logits"]), np.asarray(outputs["end_logits"]),
        n_best_size=FLAGS.n_best_size, max_answer_length=FLAGS.max_answer_length,
        do_lower_case=FLAGS.do_lower_case, version_2_with_negative=FLAGS.version_2_with_negative,
        null_score_diff_threshold=FLAGS.null_score_diff_threshold)
    print("Predictions: " + ", ".join(result.save(FLAGS.output_dir)))
    if FLAGS.do_eval:
        dataset = read_json(FLAGS.predict_file)["data"]
        if FLAGS.version_2_with_negative:
            scores = squad_metrics.evaluate_v2(dataset, result.predictions, na_probs=result.null_odds)
        else:
            scores = squad_metrics.evaluate_v1(dataset, result.predictions)
        scores.update(num_questions=len(examples), num_windows=len(predict_features))
        common.write_eval_results(scores, strategy)


if __name__ == "__main__":
    app.run(main)
