"""labels.json: the label list of a fine-tuned model, saved beside its model.keras as {"labels": [...]}."""

import json
import os

from keras_bert.checkpoints import keras_file, saved_config
from keras_bert.models.pretrained import LABELS_FILE, saved_labels


def write_labels(directory, labels):
    """Writes `labels` (list of str, in class-id order) to `<directory>/labels.json` atomically; returns
    the path."""
    path = os.path.join(directory, LABELS_FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as f:
        json.dump({"labels": list(labels)}, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(f"{path}.tmp", path)
    return path


def read_labels(model_path):
    """The label list of the `.keras` model at `model_path` (the file or our save directory): the labels
    the model carries, else the labels.json beside it; None when `model_path` is not such a model or has
    neither."""
    model_file = model_path and keras_file(model_path)
    if not model_file:
        return None
    return saved_labels(model_file, saved_config(model_file).get("config", {}))
