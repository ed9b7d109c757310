"""Fine-tunes BERT for named-entity recognition on CoNLL-2003 files (the paper's feature: a tag per word,
predicted at the word's first WordPiece).

    python -m recipes.run_ner --train_file=eng.train --eval_file=eng.testa --predict_file=eng.testb \\
        --init_checkpoint=cased_L-12_H-768_A-12/bert_model.ckpt --nodo_lower_case --output_dir=runs/ner

Files: `token ... tag` per line, blank lines between sentences, -DOCSTART- lines ignored; tags IOB1 or IOB2
(IOBES with --iobes). The tag set is the training file's ("O" first); an unknown tag in another file is an
error naming its line. Words whose pieces do not fit in --max_seq_length are predicted "O".

Writes to --output_dir: eval_results.json (entity-level precision/recall/F1 with conlleval's chunk rules,
token accuracy, eval_loss), eval_predictions.txt / test_predictions.txt (`token gold predicted` lines, the
input of conlleval.pl), model.keras and labels.json (the tag list).
"""

import os
import sys

if not __package__:  # `python recipes/x.py`: import from the repository root, as `python -m recipes.x` does
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from recipes import logs

logs.quiet(__name__)  # before TensorFlow loads

import keras
import tensorflow as tf
from absl import app, flags

from recipes import common

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/ner", learning_rate=5e-5, train_batch_size=32, max_seq_length=128)
flags.DEFINE_string("train_file", None, "CoNLL file for training.")
flags.DEFINE_string("eval_file", None, "CoNLL file to score (--do_eval).")
flags.DEFINE_string("predict_file", None, "CoNLL file to predict (--do_predict).")
flags.DEFINE_bool("iobes", False, "Tags use the IOBES scheme (E-/S- chunk rules).")


def _tag_list():
    from keras_bert.data import conll

    if FLAGS.train_file:
        train = conll.read_conll_file(FLAGS.train_file)
        return train, conll.collect_tags(train)
    tags = common.saved_labels()
    if tags is None:
        raise ValueError("the tag set comes from --train_file, or from labels.json beside a fine-tuned "
                         "model.keras --init_checkpoint: pass one of them")
    return None, tags


def main(argv):
    del argv
    from keras_bert.data import conll, features
    from keras_bert.metrics.conll import conlleval
    from keras_bert.models.token_classifier import BertTokenClassifier

    common.require_data_files()
    strategy = common.setup()
    tokenizer = common.finetuning_tokenizer()
    lookup = features.WordPieceLookup(tokenizer)
    train, tags = _tag_list()
    # Every input is parsed before the first training step: a bad eval or predict file fails in seconds.
    evaluated = {name: conll.read_conll_file(path, tag_list=tags) for name, path, wanted in (
        ("eval", FLAGS.eval_file, FLAGS.do_eval), ("test", FLAGS.predict_file, FLAGS.do_predict)) if wanted}

    def arrays(sentences):
        return features.ner_arrays(sentences, lookup, tags, FLAGS.max_seq_length)

    with strategy.scope():
        model = common.build_task_model(tokenizer, BertTokenClassifier,
                                        lambda encoder: BertTokenClassifier(encoder, len(tags)))
        if model.num_classes != len(tags):
            raise ValueError(f"--init_checkpoint={FLAGS.init_checkpoint} predicts {model.num_classes} tags but "
                             f"the task has {len(tags)}: {tags}")
        # Per-piece sample weights: only each word's first piece carries a label (the others weigh 0).
        common.compile_task(model, strategy, keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                            num_train_examples=len(train) if FLAGS.do_train else None)
    if FLAGS.do_train:
        inputs, labels, weights, _ = arrays(train)
        dataset = tf.data.Dataset.from_tensor_slices((inputs, labels, weights)).shuffle(len(train), seed=FLAGS.seed)
        batches = common.without_padding(dataset.batch(FLAGS.train_batch_size), per_token_labels=True)
        common.fit_task(model, batches, len(train))
        common.save_task_model(model, strategy, tags)

    def predict(name):
        sentences = evaluated[name]
        inputs, labels, weights, pieces_per_word = arrays(sentences)
        logits = model.predict(inputs, batch_size=FLAGS.eval_batch_size, verbose=0)
        predicted = features.ner_word_tags(logits, pieces_per_word, tags)
        conll.write_conll_predictions(os.path.join(FLAGS.output_dir, f"{name}_predictions.txt"), sentences,
                                      predicted)
        loss = model.loss(labels, logits, sample_weight=weights)
        return sentences, predicted, float(loss) * weights.size / max(weights.sum(), 1.0)

    if FLAGS.do_eval:
        sentences, predicted, eval_loss = predict("eval")
        scores = conlleval([list(s.tags) for s in sentences], predicted, iobes=FLAGS.iobes)
        results = {name: scores[name] for name in ("precision", "recall", "f1", "accuracy")}
        results.update(eval_loss=eval_loss, num_sentences=len(sentences),
                       **{f"{kind}/f1": value["f1"] for kind, value in scores["per_type"].items()})
        common.write_eval_results(results, strategy)
    if FLAGS.do_predict:
        predict("test")
        print(f"Predictions: {os.path.join(FLAGS.output_dir, 'test_predictions.txt')}")


if __name__ == "__main__":
    app.run(main)
