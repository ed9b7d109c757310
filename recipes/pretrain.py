"""Pre-trains BERT (masked LM + next-sentence prediction) with model.fit under a tf.distribute strategy.

    keras-bert pretrain --input_files='data/pretrain-*.tfrecord' --vocab_file=vocab.txt \\
        --preset=mini --train_batch_size=256 --num_train_steps=100000 --model_dir=runs/mini

Input: TFRecords from recipes/create_pretraining_data.py, raw text files (one sentence per line, blank line
between documents; masked afresh each epoch), a prepared TFDS text dataset (--tfds_name), or with none of
these the default corpus (docstrings of the installed packages; 1 document in 50 held out for evaluation).

Killed at any point, the same command resumes from the last checkpoint in --model_dir/checkpoints; the input
then restarts re-seeded with --seed + that step (a new example order and new masks rather than a replay of the
examples already seen; the data position itself is not saved).
Outputs in --model_dir: checkpoints/, logs/ (TensorBoard), eval_results.json, pretrained/ (model.keras +
bert_config.json + vocab.txt, loadable by `from_pretrained`).
"""

import math
import os
import tempfile

from absl import flags

from keras_bert.data import pretraining
from keras_bert.tasks.base import TRAIN
from keras_bert.training.defaults import PRETRAINING
from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
# Pre-training's own defaults (keras_bert.training.defaults.PRETRAINING), not fine-tuning's.
common.define_flags(model_dir="runs/pretrain", learning_rate=PRETRAINING.learning_rate,
                    train_batch_size=PRETRAINING.batch_size, max_seq_length=PRETRAINING.max_seq_length,
                    num_warmup_steps=PRETRAINING.num_warmup_steps, weight_decay=PRETRAINING.weight_decay)
shared_flags.define_one("input_files", help="Comma-separated files/globs: pre-training TFRecords or text "
                        "files.")
flags.DEFINE_string("eval_input_files", None, "Evaluation files (same kinds); default: the training input "
                    "(or the held-out documents of the default corpus / --tfds_eval_split).")
shared_flags.check("eval_input_files", shared_flags.matching_files)
shared_flags.define("tfds_name", "tfds_data_dir")
flags.DEFINE_string("tfds_text_key", "text", "The feature of --tfds_name holding a document's text.")
flags.DEFINE_string("tfds_split", "train", "TFDS split to train on.")
flags.DEFINE_string("tfds_eval_split", None, "TFDS split to evaluate on (default: --tfds_split).")
shared_flags.define("max_predictions_per_seq", "masked_lm_prob", "short_seq_prob", "do_whole_word_mask",
                    "num_train_steps", "eval_batch_size", "save_checkpoints_steps")
flags.DEFINE_integer("eval_steps", 20, "Evaluation batches (0: one full pass over the eval input).")
flags.DEFINE_integer("log_steps", 50, "TensorBoard scalars every this many steps.")
shared_flags.check("eval_steps", shared_flags.at_least(0))
shared_flags.check("log_steps", shared_flags.at_least(1))
shared_flags.check_together(["num_warmup_steps", "num_train_steps"], lambda values: (
    f"--num_warmup_steps={values['num_warmup_steps']} exceeds the {values['num_train_steps']} train steps"
    if values["num_warmup_steps"] > values["num_train_steps"] else None))


def load_task():
    """(the PretrainingTask of the flags, {split: the flags its input comes from, which its errors name})."""
    from keras_bert.tasks.pretraining.task import PretrainingTask

    sources, source_flags = {}, {}
    for split in (TRAIN, "eval"):
        flag = "input_files" if split == TRAIN or not FLAGS.eval_input_files else "eval_input_files"
        patterns = FLAGS[flag].value
        shown = patterns if isinstance(patterns, str) else ",".join(patterns or ())
        sources[split] = pretraining.PretrainingSource(
            files=common.flag_files(flag) if patterns else None, tfds_name=FLAGS.tfds_name,
            tfds_data_dir=FLAGS.tfds_data_dir, tfds_text_key=FLAGS.tfds_text_key,
            tfds_split=FLAGS.tfds_split if split == TRAIN else (FLAGS.tfds_eval_split or FLAGS.tfds_split),
            name=f"--{flag}={shown}" if patterns else None)
        source_flags[split] = ((flag,) if patterns else
                               ("tfds_name", "tfds_data_dir", "tfds_text_key") if FLAGS.tfds_name else ())
    config = pretraining.PretrainingDataConfig(
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        whole_word_mask=FLAGS.do_whole_word_mask)
    return PretrainingTask(sources[TRAIN], sources["eval"], config), source_flags


def distributed(strategy, task, split, flags_used, tokenizer, batch_size, seed):
    """The task's batches of `split` over the strategy's replicas (`distribute_datasets_from_function`); its
    errors name `flags_used`."""
    with common.flag_errors(*flags_used):
        # Unset: full-length batches; grouped by length, the next-sentence loss of the 600-step real-text
        # test ended at 0.87 (full length: under 0.8), so pre-training cuts padding only when asked.
        multiple = 0 if FLAGS.pad_to_multiple_of is None else common.pad_to_multiple_of()
        data = task.dataset(task.read(split), tokenizer, batch_size, split == TRAIN, seed, multiple)

    def checked_dataset_fn(context):
        # Called by distribute_datasets_from_function at once: a file that is not TFRecords fails there,
        # naming the flag, not at the first step.
        with common.flag_errors(*flags_used):
            return data.batches(context)
    return strategy.distribute_datasets_from_function(checked_dataset_fn)


def main(argv):
    del argv
    from keras_bert.checkpoints import save_pretrained
    from keras_bert.tasks.finetuning import check_seq_length, check_vocab_size
    from keras_bert.text.vocab import save_vocab
    from keras_bert.training import (
        CheckpointCallback,
        FailOnNaN,
        ScalarSummaries,
        StopAtStep,
        TrainingCheckpoint,
        is_chief,
    )

    strategy = common.setup()
    tokenizer = common.run_tokenizer()  # what --init_checkpoint states: vocab, casing, rules (not its length)
    task, source_flags = load_task()
    config = common.checkpoint().config if FLAGS.init_checkpoint else common.bert_config(tokenizer.vocab_size)
    with common.flag_errors("max_seq_length"):  # before any work (not in the first step's embeddings)
        check_seq_length(config, FLAGS.max_seq_length)
    with strategy.scope():
        with common.remat_scope():
            if FLAGS.init_checkpoint:
                from keras_bert.models.assembly import assemble

                with common.flag_errors("init_checkpoint"):
                    model = assemble(common.checkpoint(), task.model_class, FLAGS.dtype)
                with common.flag_errors("init_checkpoint", "vocab_file"):
                    check_vocab_size(model.encoder.config, tokenizer.vocab_size, tokenizer.vocab_file)
            else:  # common.bert_config checks the config flags against the vocab
                model = task.model_class(common.build_encoder(tokenizer.vocab_size))
        model.compile(optimizer=common.build_optimizer(FLAGS.num_train_steps),
                      jit_compile=common.jit_compile(strategy), steps_per_execution=FLAGS.steps_per_execution,
                      gradient_accumulation_steps=FLAGS.gradient_accumulation_steps)
        checkpoint = TrainingCheckpoint(model, os.path.join(FLAGS.model_dir, "checkpoints"),
                                        strategy=strategy,
                                        identity={**common.input_identity(tokenizer), **task.identity()})
    step = common.restore(checkpoint)
    if step:
        print(f"Resuming from step {step} ({checkpoint.manager.latest_checkpoint or 'chief checkpoint'})")

    chief = is_chief(strategy)
    summaries = ScalarSummaries(os.path.join(FLAGS.model_dir, "logs"), FLAGS.log_steps, enabled=chief)
    if step < FLAGS.num_train_steps:
        # A new data seed after a restart, so a resumed run does not replay the examples already seen.
        train_data = distributed(strategy, task, TRAIN, source_flags[TRAIN], tokenizer,
                                 FLAGS.train_batch_size, FLAGS.seed + step)
        steps_per_epoch = min(FLAGS.save_checkpoints_steps, FLAGS.num_train_steps)
        model.fit(train_data, epochs=math.ceil(FLAGS.num_train_steps / steps_per_epoch),
                  initial_epoch=step // steps_per_epoch, steps_per_epoch=steps_per_epoch,
                  callbacks=[FailOnNaN(), StopAtStep(FLAGS.num_train_steps),
                             CheckpointCallback(checkpoint, FLAGS.save_checkpoints_steps), summaries],
                  verbose=2 if FLAGS.distribution_strategy == "multi_worker_mirrored" else "auto")

    eval_data = distributed(strategy, task, "eval", source_flags["eval"], tokenizer, FLAGS.eval_batch_size,
                            FLAGS.seed)
    results = task.results(model, eval_data, FLAGS.eval_steps or None)
    results["global_step"] = checkpoint.step
    summaries.write("eval", results, checkpoint.step)
    common.write_json(os.path.join(FLAGS.model_dir, "eval_results.json"), results, strategy)
    print("Eval results: " + ", ".join(f"{k} = {v:.4f}" for k, v in sorted(results.items())))
    if chief:
        with tempfile.TemporaryDirectory() as tmp:
            vocab_file = os.path.join(tmp, "vocab.txt")  # the run's vocab, beside the result as usual
            save_vocab(tokenizer.vocab, vocab_file)
            # The run owns its directory: a resumed run replaces the model a finished one saved.
            final = save_pretrained(model, os.path.join(FLAGS.model_dir, "pretrained"), vocab_file,
                                    overwrite=True)
        print(f"Pre-trained model: {final}/model.keras (load with keras_bert.BertEncoder.from_pretrained)")


if __name__ == "__main__":
    logs.run(main)
