"""The classification head in other libraries' formats, declared to the checkpoint converters through
`SPEC` (spec.py): transformers' BertForSequenceClassification (id2label, problem_type: one output or
"regression" reads as a regression, no class names; a regression of several outputs is refused)
and KerasHub's BertTextClassifier task preset."""

import logging

from keras_bert.checkpoints.heads import HuggingFaceHead, KerasHubHead
from keras_bert.checkpoints.mapping import CheckpointError

logger = logging.getLogger("keras_bert")


def _regression(values, count):
    """Whether transformers' config.json `values` of a `count`-output head state a regression. A
    multi-label classifier (independent sigmoids) is refused: BertClassifier serves one label by softmax
    (BUILD.md, "Hugging Face checkpoints"); so is a regression of more than one output."""
    if values.get("problem_type") == "multi_label_classification":
        raise CheckpointError("problem_type='multi_label_classification': a multi-label classifier (an "
                              "independent sigmoid per label) is not served by keras_bert, whose "
                              "BertClassifier picks one label by softmax; expected 'single_label_"
                              "classification' or 'regression'")
    if values.get("problem_type") == "regression" and count != 1:
        # transformers' regression with num_labels > 1 (a value per output): BertClassifier regresses one
        # value (num_classes 1), and would serve these outputs as a softmax over classes.
        id2label = values.get("id2label")
        names = f" (id2label: {', '.join(map(str, id2label.values()))})" if isinstance(id2label, dict) else ""
        raise CheckpointError(f"problem_type='regression' with {count} outputs{names}: keras_bert's "
                              "regression head has one output; expected num_labels 1 for a regression")
    return values.get("problem_type") == "regression" or count == 1


def _problem_type(model):
    return {"problem_type": "regression" if model.num_classes == 1 else "single_label_classification"}


def _read_keras_hub(values, task_file):
    """BertClassifier's num_classes and dropout from a BertTextClassifier's task.json "config" `values`;
    CheckpointError naming `task_file` and the key it refuses."""
    num_classes, dropout = values.get("num_classes"), values.get("dropout", 0.1)
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise CheckpointError(f"{task_file}: num_classes is {num_classes!r}; expected a positive integer")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise CheckpointError(f"{task_file}: dropout is {dropout!r}; expected a number in [0, 1)")
    activation = values.get("activation") or "linear"
    if activation not in ("linear", "softmax"):
        raise CheckpointError(f"{task_file}: activation={activation!r}; expected 'linear' or 'softmax'")
    if activation == "softmax":
        logger.warning("%s: the KerasHub classifier outputs softmax probabilities; BertClassifier outputs "
                       "the logits before it", task_file)
    return {"num_classes": num_classes, "dropout": float(dropout)}


def _write_keras_hub(model):
    if getattr(model, "labels", None):
        logger.info("save_keras_hub: KerasHub's classifier has no label names; class i is %s", model.labels)
    return {"num_classes": model.num_classes, "activation": "linear", "dropout": model.dropout}


HUGGINGFACE = HuggingFaceHead(architecture="BertForSequenceClassification", layer="classifier",
                              prefix="classifier", labelled=True, unnamed=_regression, config=_problem_type)
KERAS_HUB = KerasHubHead(task="keras_hub>BertTextClassifier", module="bert_text_classifier",
                         layer="classifier", read=_read_keras_hub, write=_write_keras_hub,
                         preprocessor=("keras_hub>BertTextClassifierPreprocessor",
                                       "bert_text_classifier_preprocessor"))
