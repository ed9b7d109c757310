"""Pre-training (masked LM + next-sentence prediction) in the words of the fine-tuning tasks, where they fit:
`PretrainingTask.read(split)` is the data source of a split, `dataset(...)` its batches (the data of
keras_bert/data/pretraining/), `results(...)` the metrics of `BertPretrainer.evaluate`.

    task = PretrainingTask(PretrainingSource(files=["data/*.tfrecord"]), config=PretrainingDataConfig(128))
    data = task.dataset(task.read("train"), tokenizer, batch_size=256, seed=step)
    model.fit(strategy.distribute_datasets_from_function(data.batches), steps_per_epoch=1000, ...)
    results = task.results(model, strategy.distribute_datasets_from_function(eval_data.batches), steps=20)

Not a `keras_bert.tasks.base.Task` run by `keras_bert.tasks.driver.finetune`: the driver reads every split
whole before the first step, counts its examples into epochs, checkpoints and re-seeds at each epoch's end
and writes per-example predictions. Pre-training reads an endless stream (text paired and masked afresh each
epoch, or TFRecords) for a number of steps, each worker's share made by a `dataset_fn` for
`strategy.distribute_datasets_from_function`, is checkpointed every so many steps and re-seeded by the step
it resumes from, is scored on a number of batches and predicts nothing; the `pretrain` recipe runs it.
"""

import dataclasses

from keras_bert.data.pretraining import PretrainingDataConfig, PretrainingSource, pretraining_dataset_fn
from keras_bert.tasks.base import TRAIN, TrainingData
from keras_bert.tasks.pretraining.model import BertPretrainer


class PretrainingTask:
    """Pre-training on `train_source` (a `PretrainingSource`; default: the default corpus), scored on
    `eval_source` (default: the training source; of the default corpus, its held-out documents),
    examples paired and masked as `config` (a `PretrainingDataConfig`; its seed replaced by each
    `dataset`'s) says.

    Attributes:
        model_class: the model it trains, `BertPretrainer`.
    """

    model_class = BertPretrainer

    def __init__(self, train_source=None, eval_source=None, config=None):
        train_source = train_source or PretrainingSource()
        self.sources = {TRAIN: train_source, "eval": eval_source or train_source}
        self.config = config or PretrainingDataConfig()

    def read(self, split):
        """The `PretrainingSource` of `split` ("train" or "eval"): read by `dataset`, as it streams."""
        return self.sources[split]

    def dataset(self, source, tokenizer, batch_size=32, training=True, seed=0, pad_to_multiple_of=0):
        """The `TrainingData` of `source`: `batches` a `dataset_fn(input_context)` for
        `strategy.distribute_datasets_from_function` (global `batch_size` over the replicas, tokenized by
        `tokenizer`, paired and masked with `seed`, repeated without end when `training`, each batch cut to
        `pad_to_multiple_of`; 0: full length), `num_examples` None. A text source is checked now: ValueError
        naming it."""
        config = dataclasses.replace(self.config, seed=seed)
        return TrainingData(pretraining_dataset_fn(source, tokenizer, config, batch_size, training,
                                                   pad_to_multiple_of), None)

    def identity(self):
        """What defines a run's training data, by content ({name: JSON-able}; a resume with another is
        refused): the training files' fingerprints, the TFDS dataset, split and feature, or the default
        corpus."""
        from keras_bert.training.callbacks import file_fingerprint

        source = self.sources[TRAIN]
        return {"training data": (file_fingerprint(source.files) if source.files
                                  else [source.tfds_name, source.tfds_split, source.tfds_text_key]
                                  if source.tfds_name else "default corpus")}

    def results(self, model, batches, steps=None):
        """{metric: value} of `model` (a compiled `BertPretrainer`) over `steps` of `batches` (None: one
        pass): masked_lm_accuracy, masked_lm_loss, next_sentence_accuracy, next_sentence_loss and loss."""
        return model.evaluate(batches, steps=steps, return_dict=True, verbose=0)
