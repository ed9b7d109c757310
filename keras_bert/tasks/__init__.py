"""Fine-tuning tasks: what a run needs beyond the data readers and the models (as Model Garden's
official/nlp/tasks), so that the recipes only turn flags into these calls.

  finetuning.py          which model to build from which checkpoint, the checks of a model against the
                         vocab / sequence length / classes, the step arithmetic of a fine-tuning run, and
                         `served_batches`: every prediction file is written from `model.serve`
  labels.py              labels.json: the label list saved beside a fine-tuned model
  classification.py      GLUE (TSV or TFDS) and custom CSV/TSV tasks: metrics, prediction files
  squad.py               SQuAD windows, predictions / null odds / nbest files, official EM/F1
  ner.py                 CoNLL tags, predictions in conlleval's format, entity-level scores
  multiple_choice.py     SWAG: predictions CSV and accuracy
  feature_extraction.py  per-token vectors of chosen layers as JSON lines (the paper's feature-based use)
  extend_vocab.py        domain WordPieces added to a checkpoint's vocab, embeddings and MLM bias resized

Errors name the data (file, line, value) they reject; a recipe adds the flag the value came from.
"""
