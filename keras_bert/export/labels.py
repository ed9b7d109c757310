"""Label names in a classifier's served outputs: `label` (tf.string) = labels[label_id], so a client gets
the class name the model was trained with, not only its index."""

import tensorflow as tf


def class_outputs(logits):
    """logits [..., C] -> probabilities (softmax) and label_id (int32 argmax) next to the logits."""
    return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_id": tf.argmax(logits, axis=-1, output_type=tf.int32)}


def with_label_names(model, outputs):
    """`outputs` (with int32 `label_id`) plus `label`: tf.string, same shape, the name from `model.labels`;
    unchanged when the model has no label names."""
    labels = getattr(model, "labels", None)
    if not labels:
        return outputs
    return dict(outputs, label=tf.gather(tf.constant(labels, tf.string), outputs["label_id"]))
