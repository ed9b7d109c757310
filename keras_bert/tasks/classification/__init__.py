"""Classification: BertClassifier (model.py: head, windowed long texts), its serving Options (spec.py),
GLUE / CSV runs (task.py)."""
