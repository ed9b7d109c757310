"""Training plumbing: optimizer + schedule, distribution strategies, checkpoint/resume callbacks."""

from keras_bert.training.callbacks import CheckpointCallback, ScalarSummaries, StopAtStep, TrainingCheckpoint
from keras_bert.training.distribute import get_strategy, is_chief
from keras_bert.training.optimization import AdamW, Lamb, WarmupLinearDecay, create_optimizer

__all__ = ["AdamW", "CheckpointCallback", "Lamb", "ScalarSummaries", "StopAtStep", "TrainingCheckpoint",
           "WarmupLinearDecay", "create_optimizer", "get_strategy", "is_chief"]
