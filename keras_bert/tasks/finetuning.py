"""What every fine-tuning run shares: which model to build from which checkpoint, the checks of that model
against the vocab, sequence length and classes of the task, the step arithmetic of the run, and its
predictions served in batches (`model.serve`, the function its export serves)."""

import logging

import numpy as np

from keras_bert.checkpoints import keras_file, load_keras_model
from keras_bert.models.encoder import BertEncoder, load_encoder
from keras_bert.models.pretrained import (
    check_head_classes,
    check_seq_length,
    check_vocab_size,
    load_head,
    named_labels,
    resolve_pretrained,
)

logger = logging.getLogger("keras_bert")

__all__ = ["build_encoder", "build_task_model", "check_num_classes", "check_seq_length", "check_vocab_size",
           "finetuning_steps"]


def build_task_model(model_class, make_model, init_checkpoint=None, config=None, dtype=None, classes=None,
                     fresh_head=False, pretrained=None, hint="fresh_head=True"):
    """The model to fine-tune, its head trained where the checkpoint holds one of this task. Call it inside
    `strategy.scope()`. Logs one line saying where the encoder and the head come from.

    Args:
        model_class: the task model class, e.g. `BertClassifier`.
        make_model: `encoder -> model_class instance` (the task's head on a given encoder).
        init_checkpoint: None, or a checkpoint in any format (`resolve_pretrained`). A `.keras` save of a
            `model_class` (the same `task_kind`) is returned as it is, so a fine-tuned model continues with
            its head; the head of a KerasHub task preset or a Hugging Face BertFor* of this task
            (`Pretrained.head`) is copied into `make_model(encoder)`, as `from_pretrained` does.
        config: the `BertConfig` of a fresh encoder when `init_checkpoint` is None.
        dtype: the Keras dtype policy of an encoder built here.
        classes: the task's label list (id order) or class count; a trained head of other classes or label
            names is a ValueError naming both (`check_head_classes`), unless `fresh_head`.
        fresh_head: the head starts fresh whatever the checkpoint holds (its encoder is kept).
        pretrained: the `Pretrained` of `init_checkpoint` when resolved already.
        hint: how the error tells the user to start a fresh head (a recipe: its flag).
    """
    if not init_checkpoint:
        logger.info("model: a fresh encoder and %s head", model_class.task_kind)
        return make_model(BertEncoder(config, dtype=dtype))
    if keras_file(init_checkpoint):
        loaded = load_keras_model(init_checkpoint)
        if getattr(loaded, "task_kind", None) == model_class.task_kind:
            if fresh_head:
                return _fresh(make_model, loaded.encoder, init_checkpoint, "fresh_head")
            check_head_classes(init_checkpoint, loaded.task_kind, getattr(loaded, "num_classes", None),
                               loaded.labels, classes, hint)
            logger.info("model: %s continues with its trained %s head%s", init_checkpoint, loaded.task_kind,
                        _labels_note(loaded.labels))
            return loaded
    pretrained = pretrained or resolve_pretrained(init_checkpoint)
    encoder = build_encoder(init_checkpoint, config, dtype)
    head = pretrained.head
    if head is None or head["task_kind"] != model_class.task_kind or fresh_head:
        reason = "fresh_head" if head is not None and fresh_head else "it holds no trained head of this task"
        return _fresh(make_model, encoder, init_checkpoint, reason)
    check_head_classes(init_checkpoint, head["task_kind"], head.get("num_classes"), head.get("labels"),
                       classes, hint)
    model = make_model(encoder)
    load_head(model, pretrained, {})
    logger.info("model: the encoder and trained %s head of %s%s", head["task_kind"], init_checkpoint,
                _labels_note(named_labels(head.get("labels"))))
    return model


def _fresh(make_model, encoder, init_checkpoint, reason):
    model = make_model(encoder)
    logger.info("model: the encoder of %s and a fresh %s head (%s)", init_checkpoint, model.task_kind, reason)
    return model


def _labels_note(labels):
    return f" (labels {list(labels)})" if labels else ""


def build_encoder(init_checkpoint=None, config=None, dtype=None):
    """The `BertEncoder` of `init_checkpoint` (any format; heads ignored), else a fresh one of the
    `BertConfig` `config`; built with the Keras dtype policy `dtype`."""
    if init_checkpoint:
        return load_encoder(init_checkpoint, dtype=dtype)
    return BertEncoder(config, dtype=dtype)


def check_num_classes(model, labels):
    """Raises ValueError when a classifier's `model.num_classes` outputs differ from the task's classes:
    `labels` is the label list, or the number of classes (1: regression)."""
    num_classes = labels if isinstance(labels, int) else len(labels)
    if model.num_classes != num_classes:
        listed = "" if isinstance(labels, int) else f": {list(labels)}"
        raise ValueError(f"the model has {model.num_classes} outputs but the task has {num_classes} "
                         f"classes{listed}")


def finetuning_steps(num_train_examples, batch_size, num_train_epochs, warmup_proportion, num_warmup_steps=0):
    """(steps_per_epoch, num_train_steps, num_warmup_steps) of `num_train_epochs` (fractions allowed) over
    `num_train_examples` in global batches of `batch_size`; warmup is `num_warmup_steps`, or when 0 the
    `warmup_proportion` of the train steps."""
    steps_per_epoch = max(1, -(-num_train_examples // batch_size))
    num_train_steps = max(1, int(round(steps_per_epoch * num_train_epochs)))
    num_warmup_steps = num_warmup_steps or int(num_train_steps * warmup_proportion)
    return steps_per_epoch, num_train_steps, num_warmup_steps


def served_batches(model, inputs, batch_size=32, preprocessor=None, **options):
    """Yields (first row, outputs) of `model.serve(batch, preprocessor, **options)` on each run of
    `batch_size` rows of `inputs` ({name: list}, every list as long), in order."""
    size = len(next(iter(inputs.values())))
    for begin in range(0, size, batch_size):
        batch = {name: values[begin : begin + batch_size] for name, values in inputs.items()}
        yield begin, model.serve(batch, preprocessor, **options)


def serve_all(model, inputs, batch_size=32, preprocessor=None, **options):
    """`served_batches` concatenated: {output name: numpy array over all rows of `inputs`} (for outputs whose
    shape past the batch axis is the same in every batch). Raises ValueError when `inputs` has no rows."""
    batches = [outputs for _, outputs in served_batches(model, inputs, batch_size, preprocessor, **options)]
    if not batches:
        raise ValueError("no examples to predict")
    return {name: np.concatenate([outputs[name] for outputs in batches]) for name in batches[0]}
