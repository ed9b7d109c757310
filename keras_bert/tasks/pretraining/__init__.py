"""Pre-training: `BertPretrainer` (masked LM + next-sentence prediction on an encoder), trained by the
`pretrain` recipe on the data of keras_bert/data/pretraining/."""
