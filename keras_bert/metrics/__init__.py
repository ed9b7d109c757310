"""Official evaluation metrics of the fine-tuning tasks: GLUE, SQuAD v1.1/v2.0 (EM/F1), CoNLL (conlleval).

Pure Python/numpy; submodules are imported where used (`from keras_bert.metrics import squad`).
"""
