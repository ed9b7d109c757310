"""Data: corpus files, pre-training data, TFRecords, raw text into model features, and the shared
plumbing of the fine-tuning readers (formats.py); each task's own readers live in its folder
(keras_bert/tasks/<task>/).

Submodules are imported where used (`from keras_bert.data import pretraining`).
"""
