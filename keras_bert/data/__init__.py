"""Data: corpus files, TFRecords, and the readers of the fine-tuning formats (GLUE, SQuAD, CoNLL, SWAG,
CSV/TSV).

Submodules are imported where used (`from keras_bert.data import glue`) so that reading a CSV does not import
TensorFlow Datasets.
"""
