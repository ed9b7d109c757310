"""Distilling a fine-tuned task model into a smaller one of the same class, on `keras.distillation.Distiller`.

    student = make_student(teacher, layers=2)          # 2 of the teacher's layers, DistilBERT's way
    distiller = TaskDistiller(teacher, student, temperature=2.0, alpha=0.2)
    distiller.compile()                                # the library's AdamW, the task's own loss
    distiller.fit(distillation_dataset(teacher, texts, labels, unlabeled=more_texts), epochs=3)
    student.save("student.keras")                      # a normal task model: serve, export, fit

The student keeps the teacher's class, head arguments, label names and preprocessor (vocab, casing,
sequence length); a student given whole is refused otherwise (`check_student`). The loss is
`alpha` x the task's loss on gold labels (`model.task_loss()`) + (1 - alpha) x (the temperature-scaled
KL divergence of the student's outputs from the teacher's + `hidden_weight` x the mean squared error of
the student's layer outputs from the teacher's layers they stand for, through a learned projection when
the widths differ). Nothing here knows a task: what a task distills is its model's outputs (softmax over
their last axis; a one-wide output, a regression value, by squared error) over the positions of its
`distillation_mask(inputs)`. Unlabelled examples have zero sample weight: the teacher labels them in the
step (its outputs are computed once per batch, inside the compiled step, or read from a cache:
teacher_cache.py), only the distillation terms learn from them. See docs/distillation.md.

The folder: students.py (the student built from its teacher, and the check that it can stand for it),
distiller.py (`TaskDistiller` and its loss terms), data.py (`distillation_dataset`, `augment_texts`),
teacher_cache.py (the teacher's outputs cached to a TFRecord).
"""

from keras_bert.distillation.data import augment_texts, distillation_dataset
from keras_bert.distillation.distiller import (
    CACHED_HIDDEN,
    CACHED_OUTPUTS,
    DEFAULT_ALPHA,
    DEFAULT_TEMPERATURE,
    TaskDistiller,
)
from keras_bert.distillation.students import check_student, copy_layers, make_student, spread_layers
from keras_bert.distillation.teacher_cache import teacher_cache

__all__ = ["CACHED_HIDDEN", "CACHED_OUTPUTS", "DEFAULT_ALPHA", "DEFAULT_TEMPERATURE", "TaskDistiller",
           "augment_texts", "check_student", "copy_layers", "distillation_dataset", "make_student",
           "spread_layers", "teacher_cache"]
