"""The one home of every training default: the library (`compile()`'s optimizer, `fit`'s batches, the
distiller, `create_optimizer`), the recipes' flag defaults (`recipes/flags.py` and each recipe read these
rather than restating numbers) and the docs quote these values; tests/door/test_defaults.py holds every
recipe flag's default to them.

Two concepts, kept apart:
- FINETUNING: BERT's fine-tuning (the paper's Appendix A.3; Google's run_classifier.py and run_squad.py,
  transformers' Trainer): peak rate 5e-5 (within the paper's {5e-5, 3e-5, 2e-5}), 10% linear warmup, batch
  32, 3 epochs, 128 pieces (a SQuAD window: the task's own `SquadSettings.max_seq_length`, 384).
  DISTILLATION is it with the student's rate (1e-4: the best of docs/distillation.md's measurements).
- PRETRAINING: pre-training from scratch or continued: peak rate 1e-4 (the paper's Appendix A.2), a fixed
  number of steps with a fixed warmup (not epochs); batch and steps sized for one machine rather than the
  paper's 256 x 1M steps (BUILD.md gives the paper's command).
Both: AdamW with decoupled weight decay 0.01 off LayerNorm and biases, global-norm clipping at 1.0.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class TrainingDefaults:
    """The defaults of one kind of training; a recipe flag of the same name (`--learning_rate`,
    `--train_batch_size` = `batch_size`, ...) defaults to the value here."""

    learning_rate: float
    batch_size: int
    max_seq_length: int = 128
    warmup_proportion: float = 0.1  # of the train steps, when num_warmup_steps is 0
    num_warmup_steps: int = 0
    num_train_epochs: float | None = None  # fine-tuning counts epochs ...
    num_train_steps: int | None = None  # ... pre-training steps
    weight_decay: float = 0.01
    clip_global_norm: float = 1.0


FINETUNING = TrainingDefaults(learning_rate=5e-5, batch_size=32, num_train_epochs=3.0)
DISTILLATION = dataclasses.replace(FINETUNING, learning_rate=1e-4)
PRETRAINING = TrainingDefaults(learning_rate=1e-4, batch_size=32, num_warmup_steps=100, num_train_steps=1000)
