"""Evaluation scores shared by fine-tuning tasks (glue.py: accuracy, F1, Matthews and rank correlations);
which task reports which lives in its folder (keras_bert/tasks/classification/metrics.py, squad/metrics.py,
ner/metrics.py).

Pure Python/numpy; submodules are imported where used (`from keras_bert.metrics import glue`).
"""
