"""Data: corpus files, TFRecords, and the readers of the classification formats (GLUE, CSV/TSV); SQuAD,
CoNLL and SWAG are read in their task's folder (`keras_bert/tasks/<task>/`).

Submodules are imported where used (`from keras_bert.data import glue`) so that reading a CSV does not import
TensorFlow Datasets.
"""
