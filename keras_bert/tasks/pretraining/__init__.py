"""Pre-training: `BertPretrainer` (model.py: masked LM + next-sentence prediction on an encoder) and
`PretrainingTask` (task.py: its data sources, batches of keras_bert/data/pretraining/ and metrics), run by
the `pretrain` recipe."""
