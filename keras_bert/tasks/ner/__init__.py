"""Token classification (NER): BertTokenClassifier (model.py), its in-graph entities (entities.py),
conlleval's chunking and scores (metrics.py), the run's prediction files (task.py)."""
