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

from absl import flags

from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_finetuning_flags(output_dir="runs/ner")  # the library's defaults (training/defaults.py)
shared_flags.define_data_files({"train_file": "CoNLL file for training.",
                                "eval_file": "CoNLL file to score (--do_eval).",
                                "predict_file": "CoNLL file to predict (--do_predict)."})
flags.DEFINE_bool("iobes", False, "Tags use the IOBES scheme (E-/S- chunk rules).")
shared_flags.define("stride")


def main(argv):
    del argv
    from keras_bert.tasks.ner.task import NerTask

    common.finetune(lambda: NerTask(FLAGS.train_file, FLAGS.eval_file, FLAGS.predict_file,
                                    common.checkpoint_labels(), FLAGS.iobes, FLAGS.stride),
                    {"labels": ("train_file", "init_checkpoint"), "train": ("stride", "max_seq_length"),
                     "model": ("init_checkpoint",), "eval": ("eval_file",), "predict": ("predict_file",)})


if __name__ == "__main__":
    logs.run(main)
