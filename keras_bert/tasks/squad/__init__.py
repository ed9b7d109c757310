"""Span labeling (SQuAD): BertSpanLabeler (model.py), its in-graph answer decoding (answers.py), the
run's windows, prediction files and EM/F1 (task.py)."""
