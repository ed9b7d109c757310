"""Tasks: a fine-tuning task in one folder each (docs/adding_a_task.md), and what every run shares (as Model
Garden's official/nlp/tasks), so that the recipes only turn flags into these calls.

  <task>/                one folder per fine-tuning task: model.py (the model, its head, in-graph decoding),
                         spec.py (its serving Options, its names, its transformers / KerasHub heads),
                         served.py (checks of its served answers), task.py (its `Task`: data files,
                         training data, metrics, prediction files of a run), its readers and metrics:
                         classification/ (GLUE, CSV/TSV, the default task's data), squad/, ner/ (CoNLL),
                         multiple_choice/ (SWAG); pretraining/ (model.py, task.py: run by the `pretrain`
                         recipe, not the driver)
  base.py, driver.py     `Task`, the methods every task.py declares; `finetune(task, run)`, the one driver
                         every run_* recipe calls (read, build, compile, fit, save, evaluate, predict)
  registry.py            lists the task folders: shared code loops over their `TaskSpec`s (task_spec.py),
                         and the checkpoint converters get their heads (keras_bert/checkpoints/heads.py)
  finetuning.py          which model to build from which checkpoint, the checks of a model against the
                         vocab / sequence length / classes, the step arithmetic of a fine-tuning run, the
                         training batches of windows (`window_batches`), and `served_batches`: every
                         prediction file is written from `model.serve`
  labels.py              labels.json: the label list saved beside a fine-tuned model
  feature_extraction.py  per-token vectors of chosen layers as JSON lines (the paper's feature-based use)
  extend_vocab.py        domain WordPieces added to a checkpoint's vocab, embeddings and MLM bias resized

Errors name the data (file, line, value) they reject; a recipe adds the flag the value came from.
"""
