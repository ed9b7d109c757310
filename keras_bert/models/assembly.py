"""One assembly: `assemble(pretrained, model_class)` builds every keras_bert model that enters from a
checkpoint, from the `Pretrained` that `resolve_pretrained` read once (format, config, task head,
preprocessor): the encoder with its weights, the pre-training heads or the task head it holds (under one
head policy, `HEADS`), the preprocessor. The models' `from_pretrained`, `load_pretrained_model`,
`load_encoder`, `load_pretrainer`, the fine-tuning recipes (`tasks/finetuning.build_task_model`), the export
and KerasHub CLIs, `distill`, `extend_vocab` and `pretrain` call it.

It names no model class: each class registers itself by its `task_kind` (`register`), so that a checkpoint
holding a task head (a Hugging Face BertFor*, a KerasHub task preset) becomes that task's model wherever it
enters (`model_class=None`: "the model the checkpoint holds").
"""

from __future__ import annotations

import inspect
import logging

from keras_bert.checkpoints import (
    assign_encoder,
    assign_heads,
    load_keras_model,
    read_checkpoint,
    report_missing_heads,
    report_unused,
    split_model,
)
from keras_bert.checkpoints.mapping import CheckpointWeights, collect_weights

logger = logging.getLogger("keras_bert")

# The head policy, the same words in the library (`head=`) and the flags (`--head`):
CHECKPOINT_HEAD = "checkpoint"  # the checkpoint's head of this task where it holds one; other classes refused
FRESH_HEAD = "fresh"  # a fresh head on the checkpoint's encoder, whatever head the checkpoint holds
HEADS = (CHECKPOINT_HEAD, FRESH_HEAD)

_MODEL_CLASSES = {}  # task_kind -> the keras_bert class of that kind ("encoder", "pretrainer", tasks')


def register(model_class):
    """Class decorator: `model_class` is the model `assemble` builds for a checkpoint holding a head of its
    `task_kind`."""
    _MODEL_CLASSES[model_class.task_kind] = model_class
    return model_class


def assemble(pretrained, model_class=None, dtype=None, head=CHECKPOINT_HEAD, head_args=None,
             hint=f'head="{FRESH_HEAD}"', weights=None):
    """The model of the checkpoint `pretrained` (a `Pretrained`), its preprocessor set to
    `pretrained.preprocessor` and its encoder's `sentence_pooling` to `pretrained.sentence_pooling` (when
    the checkpoint states one).

    Args:
        pretrained: what `resolve_pretrained` read.
        model_class: the class to build (`BertEncoder`, `BertPretrainer`, a task model); None: the model the
            checkpoint holds (a `.keras` save's whole model; the task model of a Hugging Face BertFor* or
            KerasHub task preset head; else the encoder).
        dtype: the Keras dtype policy to build with; a `.keras` save of another policy is rebuilt under it.
        head: "checkpoint" (`CHECKPOINT_HEAD`): a task head of `model_class`'s kind in the checkpoint is
            loaded (a `.keras` save of that kind is returned as it is) when its classes are those of
            `head_args` (none named: any), and other classes are a ValueError naming both; "fresh"
            (`FRESH_HEAD`): a fresh head on the checkpoint's encoder.
        head_args: the task head's constructor arguments, e.g. {"labels": ["neg", "pos"]}; completed with
            those the checkpoint's head states (`stated_head_args`: classes, labels, dropout).
        hint: how a refusal tells the user to start a fresh head (a recipe names its flag).
        weights: `CheckpointWeights` to build from instead of the checkpoint's own (of `pretrained.config`).

    Raises CheckpointError naming the variable on a missing or misshapen weight; ValueError on a head of
    other classes, or a task model whose arguments the checkpoint does not state.
    """
    if head not in HEADS:
        raise ValueError(f"head={head!r}; expected one of {HEADS}")
    head_args = dict(head_args or {})
    if pretrained.format == "keras" and weights is None:
        saved = _under_dtype(load_keras_model(pretrained.path), dtype, pretrained.path)
        model = _from_saved(pretrained, saved, model_class, head, head_args, hint)
    else:
        model = _from_weights(pretrained, model_class, dtype, head, head_args, hint, weights)
    model.set_preprocessor(pretrained.preprocessor)
    if pretrained.sentence_pooling is not None:  # a sentence-transformers directory's: serve()'s default
        split_model(model)[0].sentence_pooling = pretrained.sentence_pooling
    return model


def _from_saved(pretrained, saved, model_class, head, head_args, hint):
    """The model of a `.keras` save `saved`: itself (no class asked, or its own kind with the checkpoint's
    head), else `model_class` on its encoder."""
    if model_class is None:
        return saved
    encoder, pretrainer = split_model(saved)
    kind = model_class.task_kind
    if kind == "encoder":
        return encoder
    if kind == "pretrainer":
        if pretrainer is None:
            report_missing_heads(pretrained.path, ["masked_lm", "next_sentence"])
            return model_class(encoder)
        return pretrainer
    if saved.task_kind != kind:
        return _fresh_task(model_class, encoder, head_args, pretrained.path, "it holds no trained head of "
                           "this task")
    if head == FRESH_HEAD:
        return _fresh_task(model_class, encoder, head_args, pretrained.path, f"head={FRESH_HEAD}")
    check_head_classes(pretrained.path, kind, getattr(saved, "num_classes", None), saved.labels,
                       _classes(head_args), hint)
    for name in model_class.head_arg_names:
        if name not in ("num_classes", "labels") and name in head_args and \
                getattr(saved, name, None) != head_args[name]:
            raise ValueError(f"{pretrained.path} holds a {type(saved).__name__} with {name}="
                             f"{getattr(saved, name)} but {name}={head_args[name]} was asked for")
    if saved.labels is None and head_args.get("labels") is not None:
        saved.labels = [str(label) for label in head_args["labels"]]
    logger.info("model: %s continues with its trained %s head%s", pretrained.path, kind,
                _labels_note(saved.labels))
    return saved


def _from_weights(pretrained, model_class, dtype, head, head_args, hint, weights):
    """`model_class` (None: the class of the checkpoint's task head, else the encoder) built with the
    checkpoint's weights (`weights`, default read from it) and its task head under the policy `head`."""
    stated = pretrained.head
    if model_class is None:
        model_class = _MODEL_CLASSES[stated["task_kind"] if stated else "encoder"]
    if weights is None:
        weights = read_checkpoint(pretrained.path, pretrained.format, pretrained.config)[1]
    encoder = _MODEL_CLASSES["encoder"](pretrained.config, dtype=dtype)
    used = assign_encoder(encoder, weights)
    kind = model_class.task_kind
    taken = ()
    if kind == "encoder":
        model = encoder
    elif kind == "pretrainer":
        model = model_class(encoder)
        head_names, missing = assign_heads(model, weights)
        used |= head_names
        report_missing_heads(weights.path, missing)
    elif stated is None or stated["task_kind"] != kind or head == FRESH_HEAD:
        reason = f"head={FRESH_HEAD}" if stated is not None and head == FRESH_HEAD else \
            "it holds no trained head of this task"
        model = _fresh_task(model_class, encoder, head_args, pretrained.path, reason)
    else:
        check_head_classes(pretrained.path, kind, stated.get("num_classes"), stated.get("labels"),
                           _classes(head_args), hint)
        model = _task_model(model_class, encoder, _with_stated(stated, model_class, head_args),
                            pretrained.path)
        layer = model.get_layer(stated["layer"])
        layer.kernel.assign(stated["kernel"])
        layer.bias.assign(stated["bias"])
        taken = stated.get("names", ())
        logger.info("model: the encoder and trained %s head of %s%s", kind, pretrained.path,
                    _labels_note(named_labels(stated.get("labels"))))
    report_unused(weights, used, taken)
    return model


def _fresh_task(model_class, encoder, head_args, path, reason):
    model = _task_model(model_class, encoder, head_args, path)
    logger.info("model: the encoder of %s and a fresh %s head (%s)", path, model.task_kind, reason)
    return model


def _task_model(model_class, encoder, head_args, path):
    """`model_class(encoder, **head_args)`; a ValueError naming `path` and the arguments when the class
    needs some that neither the caller nor the checkpoint gives (e.g. a multiple-choice head's
    num_choices)."""
    parameters = list(inspect.signature(model_class).parameters.values())[1:]
    needed = [p.name for p in parameters if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
              and p.name not in head_args]
    if needed:
        raise ValueError(f"{path} holds no {', '.join(needed)} for a {model_class.__name__}; pass "
                         f"{model_class.__name__}.from_pretrained(path, {needed[0]}=...)")
    return model_class(encoder, **head_args)


def _with_stated(stated, model_class, head_args):
    """`head_args` completed with what the checkpoint's head `stated` states (those of `model_class`'s
    `stated_head_args`: num_classes, labels, dropout); the stated class count and labels only when
    `head_args` names neither."""
    values = {name: stated[name] for name in model_class.stated_head_args if stated.get(name) is not None}
    if "num_classes" in head_args or "labels" in head_args:
        values = {name: value for name, value in values.items() if name not in ("num_classes", "labels")}
    return {**values, **head_args}


def _classes(head_args):
    """The classes `head_args` ask for: the label list, else the class count, else None (any)."""
    return head_args.get("labels") if head_args.get("labels") is not None else head_args.get("num_classes")


def _labels_note(labels):
    return f" (labels {list(labels)})" if labels else ""


def _under_dtype(saved, dtype, path):
    """The `.keras` model `saved`, rebuilt under the dtype policy `dtype` when it was built under another:
    its encoder (and pre-training heads) from their float weights, its task head's layers copied by
    name."""
    encoder, pretrainer = split_model(saved)
    if dtype is None or encoder.embeddings.dtype_policy.name == dtype:  # the policy its layers were built in
        return saved
    weights = CheckpointWeights(path=path, arrays=collect_weights(encoder, pretrainer))
    rebuilt = type(encoder)(encoder.config, dtype=dtype, preprocessor=encoder.preprocessor,
                            sentence_pooling=encoder.sentence_pooling)
    assign_encoder(rebuilt, weights)
    if saved is encoder:
        return rebuilt
    model = type(saved)(rebuilt, **saved._task_config(), preprocessor=saved.preprocessor)
    if pretrainer is not None:
        assign_heads(model, weights)
        return model
    model.labels = saved.labels
    for layer in saved.layers:
        if layer is not encoder and layer.weights:
            model.get_layer(layer.name).set_weights(layer.get_weights())
    return model


def named_labels(labels):
    """`labels` as a list of str, or None when they name nothing: absent, or transformers' default id2label
    names LABEL_0, LABEL_1, ... (what a BertFor* saved without label names states)."""
    if labels is None:
        return None
    labels = [str(label) for label in labels]
    return None if labels == [f"LABEL_{i}" for i in range(len(labels))] else labels


def check_head_classes(source, kind, stated_count, stated_labels, classes, hint=f'head="{FRESH_HEAD}"'):
    """Raises ValueError naming both when a trained `kind` head of `source` (its `stated_count` outputs and
    `stated_labels`, None: unnamed) does not predict the task's `classes` (a label list in id order, or a
    class count; None: nothing to check): another class count, or other label names (or order). Unnamed
    labels of the same count agree. `hint` names how to start a fresh head instead."""
    if classes is None or stated_count is None:
        return
    count = classes if isinstance(classes, int) else len(classes)
    names = None if isinstance(classes, int) else named_labels(classes)
    stated_labels = named_labels(stated_labels)
    if stated_count == count and (names is None or stated_labels is None or stated_labels == names):
        return
    stated = f"labels {stated_labels}" if stated_labels else f"{stated_count} unnamed classes"
    asked = f"labels {names}" if names else f"{count} classes"
    raise ValueError(f"{source} holds a trained {kind} head of {stated} but the task has {asked}; pass "
                     f"{hint} to start a fresh head")
