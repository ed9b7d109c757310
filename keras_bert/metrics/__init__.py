"""Official evaluation metrics shared by fine-tuning tasks: GLUE's (those of SQuAD and CoNLL live in their
task folders, keras_bert/tasks/squad/metrics.py and keras_bert/tasks/ner/metrics.py).

Pure Python/numpy; submodules are imported where used (`from keras_bert.metrics import glue`).
"""
