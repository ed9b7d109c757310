"""Distils a fine-tuned classifier into a smaller one of the same kind: same vocab, labels and serving.

    keras-bert distill --teacher=runs/sst2/model.keras --student_layers=2 --task_name=SST-2 \\
        --data_dir=glue_data/SST-2 --output_dir=runs/sst2_student
    keras-bert distill --teacher=runs/topics/model.keras --student_preset=mini --task_name=custom \\
        --train_file=train.csv --eval_file=dev.csv --unlabeled_file=more_text.txt --output_dir=runs/student

The student (`keras_bert.distillation.make_student`): --student_layers=k of the teacher's layers spread over
its depth (embeddings, pooler and head copied), or a fresh encoder of --student_preset / --student_config;
it keeps the teacher's preprocessor and labels. It learns from the gold labels (weight --alpha) and from the
teacher's outputs at --temperature (1 - alpha), optionally its layers' outputs too (--hidden_weight), and
from --unlabeled_file's lines labelled by the teacher in the step (--cache_teacher: once, before the first
step, into output_dir/teacher_cache.tfrecord, which a resumed run reuses). Data: as run_classifier's,
--task_name=<GLUE task> with --data_dir, or --task_name=custom with --train_file/--eval_file.

Writes to --output_dir: model.keras (the student: serves and exports like any classifier), eval_results.json
(teacher/ and student/ dev metrics side by side, parameters of each), checkpoints/ (a killed run, run again
with the same flags, resumes from the last).
"""

import os

from absl import flags

from keras_bert.training.defaults import DISTILLATION
from recipes import common, logs
from recipes import flags as shared_flags

FLAGS = flags.FLAGS
common.define_execution_flags(model_dir="runs/distill")
shared_flags.define_one("output_dir", alias_of="model_dir")
shared_flags.define("teacher", "student_layers", "student_preset", "student_config", "temperature", "alpha",
                    "hidden_weight", "unlabeled_file", "cache_teacher", "augment", "num_train_epochs",
                    "eval_batch_size",
                    "warmup_proportion", "num_warmup_steps", "weight_decay", "clip_global_norm",
                    "save_checkpoints_steps", "pad_to_multiple_of", "train_batch_size",
                    learning_rate=DISTILLATION.learning_rate)  # the student's (training/defaults.py)
shared_flags.required("teacher")
shared_flags.check_together(["cache_teacher", "pad_to_multiple_of"], lambda values: (
    f"--pad_to_multiple_of={values['pad_to_multiple_of']} with --cache_teacher: the cache holds rows of one "
    "length; leave --pad_to_multiple_of unset" if values["cache_teacher"] and values["pad_to_multiple_of"]
    else None), shown=["pad_to_multiple_of"])
shared_flags.define("task_name", "data_dir")
for _name, _help in (("train_file", "Custom task: training CSV/TSV (text[,text_b],label)."),
                     ("eval_file", "Custom task: evaluation CSV/TSV (with labels).")):
    flags.DEFINE_string(_name, None, _help)
    shared_flags.check(_name, shared_flags.existing_file)
STUDENTS = ("student_layers", "student_preset", "student_config")
shared_flags.check_together(list(STUDENTS), lambda values: (
    None if sum(values[name] is not None for name in STUDENTS) == 1
    else "give one of --student_layers, --student_preset, --student_config"), shown=list(STUDENTS))
shared_flags.check_together(["task_name", "data_dir", "train_file"], lambda values: (
    shared_flags.glue_data_problem(values) or ("--task_name=custom needs --train_file" if (
        values["task_name"] or "custom").lower() == "custom" and not values["train_file"] else None)),
    shown=["task_name"])


def load_teacher():
    """The fine-tuned model of --teacher (`common.load_model`: a `.keras` task model, or the task model of
    a checkpoint holding a trained task head); a model without a task (an encoder, a checkpoint without a
    task head) or without a preprocessor is refused naming the flag."""
    teacher = common.load_model("teacher")
    if teacher.task_loss()[0] is None or getattr(teacher, "preprocessor", None) is None:
        raise ValueError(f"--teacher={FLAGS.teacher} holds a {type(teacher).__name__} without a task head "
                         "and preprocessor; expected a fine-tuned task model (run_classifier's model.keras)")
    return teacher


def make_student(teacher):
    from keras_bert.config import BertConfig
    from keras_bert.distillation import make_student

    flag = next(name for name in STUDENTS if FLAGS[name].value is not None)
    with common.flag_errors(flag, "teacher"):
        if flag == "student_layers":
            return make_student(teacher, layers=FLAGS.student_layers)
        if flag == "student_preset":
            return make_student(teacher, config=FLAGS.student_preset)
        return make_student(teacher, config=BertConfig.from_json_file(FLAGS.student_config))


def load_task(teacher):
    """The ClassificationTask of the data flags, its classes checked against the teacher's."""
    from keras_bert.tasks.classification import task as classification

    regression = teacher.num_classes == 1
    if FLAGS.task_name and FLAGS.task_name.lower() != "custom":
        with common.flag_errors("task_name", "data_dir"):
            task = classification.glue_task(FLAGS.task_name, FLAGS.data_dir)
    else:
        with common.flag_errors("train_file", "eval_file"):
            task = classification.custom_task(FLAGS.train_file, FLAGS.eval_file, is_regression=regression)
    if task.num_classes != teacher.num_classes or (
            task.label_list and teacher.labels and list(task.label_list) != list(teacher.labels)):
        raise ValueError(f"--teacher={FLAGS.teacher} has {teacher.num_classes} outputs (labels "
                         f"{teacher.labels}) but the task's classes are {task.label_list or 'one value'}")
    return task


def unlabeled_examples(pairs):
    """The lines of --unlabeled_file as examples without labels (`pairs`: text_a<TAB>text_b each)."""
    from keras_bert.tasks.classification.reader import ClassificationExample
    from keras_bert.textfiles import read_text

    path, examples = FLAGS.unlabeled_file, []
    for number, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != (2 if pairs else 1):
            raise ValueError(f"{path}:{number}: {len(fields)} tab-separated texts; expected "
                             f"{'a pair text_a<TAB>text_b' if pairs else 'one text (no tab)'}: the task's "
                             "examples are " + ("pairs" if pairs else "single texts"))
        examples.append(ClassificationExample(f"unlabeled-{number}", fields[0], fields[1] if pairs else None))
    if not examples:
        raise ValueError(f"--unlabeled_file={path} has no text")
    return examples


def augmented_examples(examples):
    """--augment new examples per example (`augment_texts`, both texts of a pair alike), without labels."""
    from keras_bert.distillation import augment_texts
    from keras_bert.tasks.classification.reader import ClassificationExample

    if not FLAGS.augment:
        return []
    text_a = augment_texts([e.text_a for e in examples], FLAGS.augment, seed=FLAGS.seed)
    text_b = (augment_texts([e.text_b for e in examples], FLAGS.augment, seed=FLAGS.seed + 1)
              if examples[0].text_b is not None else [None] * len(text_a))
    return [ClassificationExample(f"augmented-{i}", a, b)
            for i, (a, b) in enumerate(zip(text_a, text_b, strict=True))]


def evaluate(task, model, name):
    results = {}
    for split, examples in task.evals:
        logits, predictions = task.served(model, examples, FLAGS.eval_batch_size)
        prefix = f"{name}/{split}/" if len(task.evals) > 1 else f"{name}/"
        values = task.eval_results(model, examples, logits, predictions)
        results.update({prefix + key: value for key, value in values.items()})
    results[f"{name}/parameters"] = model.count_params()
    return results


def run_inputs():
    """What the run reads, by content: the teacher, the task and its data files, the augmentation (its texts
    depend on --augment and --seed). The teacher cache is of these; a resumed run must have them too."""
    from keras_bert.training.callbacks import file_fingerprint

    task = (FLAGS.task_name or "custom").lower()
    data = FLAGS.train_file if task == "custom" else FLAGS.data_dir
    return {"teacher": file_fingerprint([FLAGS.teacher]), "task": task,
            "data": file_fingerprint([data, FLAGS.unlabeled_file]), "augment": [FLAGS.augment, FLAGS.seed]}


def run_identity(inputs):
    """`run_inputs` and the losses' settings: what a resumed run must match (the student's architecture is
    checked apart, `TrainingCheckpoint`'s configuration)."""
    return {**inputs, "losses": [FLAGS.temperature, FLAGS.alpha, FLAGS.hidden_weight]}


def cached_teacher(distiller, rows, seed, inputs):
    """--cache_teacher: batches of the training rows with the teacher's outputs read from
    output_dir/teacher_cache.tfrecord (written first when missing or of other `inputs`)."""
    from keras_bert.distillation import teacher_cache

    path = os.path.join(FLAGS.output_dir, "teacher_cache.tfrecord")
    return teacher_cache(distiller, rows, path, inputs, batch_size=FLAGS.train_batch_size, seed=seed)


def main(argv):
    del argv
    from keras_bert.checkpoints import save_without_optimizer
    from keras_bert.data import features
    from keras_bert.distillation import TaskDistiller, distillation_dataset
    from keras_bert.tasks.finetuning import finetuning_steps
    from keras_bert.training import CheckpointCallback, FailOnNaN, StopAtStep, TrainingCheckpoint, distribute
    from keras_bert.training.optimization import create_optimizer

    strategy = common.setup(["teacher", "train_file", "eval_file", "unlabeled_file"])
    with strategy.scope():
        teacher = load_teacher()
        task = load_task(teacher)
        student = make_student(teacher)
        with common.flag_errors("alpha", "temperature", "hidden_weight"):
            distiller = TaskDistiller(teacher, student, temperature=FLAGS.temperature, alpha=FLAGS.alpha,
                                      hidden_weight=FLAGS.hidden_weight)
        unlabeled = unlabeled_examples(task.train[0].text_b is not None) if FLAGS.unlabeled_file else []
        unlabeled += augmented_examples(task.train + unlabeled)
        steps_per_epoch, num_train_steps, num_warmup_steps = finetuning_steps(
            len(task.train) + len(unlabeled), FLAGS.train_batch_size, FLAGS.num_train_epochs,
            FLAGS.warmup_proportion, FLAGS.num_warmup_steps)
        optimizer = create_optimizer(FLAGS.learning_rate, num_train_steps, num_warmup_steps,
                                     weight_decay=FLAGS.weight_decay,
                                     clip_global_norm=FLAGS.clip_global_norm or None)
        distiller.compile(optimizer=optimizer, jit_compile=common.jit_compile(strategy),
                          steps_per_execution=FLAGS.steps_per_execution)
        inputs = run_inputs()
        checkpoint = TrainingCheckpoint(distiller, os.path.join(FLAGS.output_dir, "checkpoints"),
                                        strategy=strategy, tracked=distiller.trained,
                                        identity=run_identity(inputs))
    step = common.restore(checkpoint)
    if step:
        print(f"Resuming from step {step} of {num_train_steps}")
    if step < num_train_steps:
        seed = FLAGS.seed + step  # a resumed run does not replay the order already seen

        shuffle = not FLAGS.cache_teacher  # the cache holds the rows in order, shuffles them when read

        # The cache holds rows of one length: its batches keep the teacher's.
        multiple = 0 if FLAGS.cache_teacher else common.pad_to_multiple_of(teacher.preprocessor.seq_length)

        def batches(examples, with_labels=True):
            return features.classification_dataset(
                examples, teacher.preprocessor, task.label_list, task.is_regression, FLAGS.train_batch_size,
                shuffle=shuffle, seed=seed, with_labels=with_labels, pad_to_multiple_of=multiple)

        data = distillation_dataset(teacher, batches(task.train), shuffle=shuffle,
                                    unlabeled=batches(unlabeled, False) if unlabeled else None, seed=seed)
        if FLAGS.cache_teacher:
            data = cached_teacher(distiller, data, seed, inputs)
        every = min(FLAGS.save_checkpoints_steps, num_train_steps)
        distiller.fit(data.repeat(), epochs=-(-num_train_steps // every), initial_epoch=step // every,
                      steps_per_epoch=every, verbose=2,
                      callbacks=[FailOnNaN(), StopAtStep(num_train_steps),
                                 CheckpointCallback(checkpoint, every)])
    if distribute.is_chief(strategy):
        save_without_optimizer(student, os.path.join(FLAGS.output_dir, "model.keras"))
    results = {**evaluate(task, teacher, "teacher"), **evaluate(task, student, "student"),
               "global_step": checkpoint.step}
    common.write_eval_results(results, strategy)


if __name__ == "__main__":
    logs.run(main)
