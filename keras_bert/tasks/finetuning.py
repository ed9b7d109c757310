"""What every fine-tuning run shares: which model to build from which checkpoint, the checks of that model
against the vocab, sequence length and classes of the task, the step arithmetic of the run, the training
batches of a task's windows, and its predictions served in batches (`model.serve`, the function its export
serves)."""

import logging

import numpy as np

from keras_bert.models.assembly import CHECKPOINT_HEAD, FRESH_HEAD, assemble
from keras_bert.models.encoder import BertEncoder
from keras_bert.models.pretrained import check_seq_length, check_vocab_size, resolve_pretrained

logger = logging.getLogger("keras_bert")

__all__ = ["build_task_model", "check_num_classes", "check_seq_length", "check_vocab_size",
           "finetuning_steps"]


def build_task_model(model_class, head_args=None, init_checkpoint=None, config=None, dtype=None,
                     head=CHECKPOINT_HEAD, pretrained=None, hint=f'head="{FRESH_HEAD}"'):
    """The model to fine-tune: `model_class(encoder, **head_args)` on a fresh encoder of the `BertConfig`
    `config`, or the model `assemble` builds of `init_checkpoint` (any format or a hub name, resolved by
    `resolve_pretrained` unless its `pretrained` is given): a `.keras` save of this task continues as it is,
    a KerasHub or Hugging Face head of this task is loaded, under the head policy `head` ("checkpoint": a
    head of other classes than `head_args`' is a ValueError naming both, ending with `hint`; "fresh").
    Call it inside `strategy.scope()`. Logs one line saying where the encoder and the head come from."""
    if not init_checkpoint:
        logger.info("model: a fresh encoder and %s head", model_class.task_kind)
        return model_class(BertEncoder(config, dtype=dtype), **(head_args or {}))
    pretrained = pretrained or resolve_pretrained(init_checkpoint)
    return assemble(pretrained, model_class, dtype, head, head_args, hint)


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


def window_batches(arrays, batch_size=32, training=True, seed=0, pad_to_multiple_of=0,
                   per_token_labels=False):
    """(batches, rows) of `arrays` (inputs and targets, one row per window, as
    `tf.data.Dataset.from_tensor_slices` takes them): a finite tf.data of `batch_size` batches, shuffled with
    `seed` when `training`, each cut to `pad_to_multiple_of` (`padding.trim_dataset`; `per_token_labels`:
    the targets [b, seq] are cut with the inputs); rows is the number of windows."""
    import tensorflow as tf

    from keras_bert.data import padding

    dataset = tf.data.Dataset.from_tensor_slices(arrays)
    rows = int(dataset.cardinality())
    if training:
        dataset = dataset.shuffle(rows, seed=seed)
    return padding.trim_dataset(dataset.batch(batch_size), pad_to_multiple_of, per_token_labels), rows


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
