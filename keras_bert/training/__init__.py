"""Training plumbing: optimizer + schedule, distribution strategies, checkpoint/resume callbacks."""

from keras_bert.training.callbacks import (
    CheckpointCallback,
    CompileLog,
    FailOnNaN,
    ScalarSummaries,
    StopAtStep,
    TrainingCheckpoint,
    TrainingDivergedError,
)
from keras_bert.training.distribute import get_strategy, is_chief
from keras_bert.training.optimization import AdamW, Lamb, WarmupLinearDecay, create_optimizer

__all__ = ["AdamW", "CheckpointCallback", "CompileLog", "FailOnNaN", "Lamb", "ScalarSummaries", "StopAtStep",
           "TrainingCheckpoint", "TrainingDivergedError", "WarmupLinearDecay", "create_optimizer",
           "get_strategy", "is_chief"]
