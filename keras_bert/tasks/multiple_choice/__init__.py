"""Multiple choice (SWAG): BertMultipleChoice (model.py), the SWAG reader (swag.py), predictions and
accuracy (task.py)."""
