"""labels.json: the label list of a fine-tuned model, saved beside its model.keras as {"labels": [...]}."""

import json
import os

from keras_bert.models.pretrained import LABELS_FILE


def write_labels(directory, labels):
    """Writes `labels` (list of str, in class-id order) to `<directory>/labels.json` atomically; returns
    the path."""
    path = os.path.join(directory, LABELS_FILE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as f:
        json.dump({"labels": list(labels)}, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(f"{path}.tmp", path)
    return path

