"""The one `compile` of keras_bert's models, with the task's defaults: the library's AdamW with warmup and
linear decay over the steps `fit` will run, the task's loss and metrics, the execution chosen for the dtype
and CPU (`keras_bert.execution`) and exact gradient accumulation (`keras_bert.models.accumulation`)."""

import logging

import keras

from keras_bert import compat
from keras_bert.models import user_data
from keras_bert.training.defaults import FINETUNING

logger = logging.getLogger("keras_bert")

# One home for the fine-tuning defaults (keras_bert/training/defaults.py): the paper's and transformers'.
DEFAULT_LEARNING_RATE = FINETUNING.learning_rate
DEFAULT_WARMUP_PROPORTION = FINETUNING.warmup_proportion


class OptimizerBuiltFirst:
    """Mixin of keras_bert's trainable models (the task models, the encoder, `TaskDistiller`; before
    `keras.Model` in the bases): `fit` traces its train step once."""

    def make_train_function(self, force=False):
        """Keras' train function, the optimizer's slots made before its first trace: outside a strategy's
        scope Keras makes them inside the trace, and a tf.function whose first trace made variables traces
        again (two traces of the step, seconds each for a real model). Made here, `fit` traces its step once
        whatever the batch lengths (tests/data/test_padding.py `test_xla_fit_on_trimmed_batches`)."""
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and not optimizer.built and self.built:
            optimizer.build(self.trainable_variables)
        return super().make_train_function(force)


class TaskCompile(OptimizerBuiltFirst):
    """Mixin of keras_bert's models (before `keras.Model` in the bases): `compile` with the task's defaults,
    `task_loss()` / `_default_metrics()` for a task to state, and the schedule `fit` sets for the default
    optimizer (`_schedule_default_optimizer`)."""

    def compile(self, optimizer="auto", loss="auto", metrics="auto", learning_rate=None,
                warmup_proportion=None, *, gradient_accumulation_steps=1, jit_compile="auto", **kwargs):
        """Configures the model for training: `keras.Model.compile` with the task's defaults.

        Args:
            optimizer: "auto" (default): the library's AdamW (peak `learning_rate`, linear warmup over
                `warmup_proportion` of the steps `fit` will run, then linear decay to 0; weight decay 0.01
                off LayerNorm and biases; global-norm clipping at 1.0). Any Keras optimizer (or its name)
                brings its own rate: schedule one with
                `keras_bert.training.optimization.create_optimizer(lr, steps, warmup)`.
            loss: "auto" (default): the task's loss (`task_loss()`, e.g. sparse categorical cross-entropy
                on logits for a classifier), with its output weights; or any Keras loss.
            metrics: "auto" (default): the task's metrics (accuracy for a classifier); or Keras metrics.
            learning_rate: the default optimizer's peak rate (default 5e-5, the paper's and transformers'
                fine-tuning default: `DEFAULT_LEARNING_RATE`).
            warmup_proportion: the default optimizer's warmup share of the steps, in [0, 1) (default 0.1).
            gradient_accumulation_steps: K >= 1 (default 1): each train step takes its batch in K
                sequential micro-batches and applies their summed gradient once, the same step
                (`keras_bert.models.accumulation`); metrics then count real rows only.
            jit_compile: "auto" (default): XLA or TF's kernels, whichever the encoder's dtype and this CPU run
                fastest (`keras_bert.execution`, `model.execution` says which); True / False force it.
            **kwargs: the other arguments of `keras.Model.compile` (`loss_weights`, `run_eagerly`,
                `steps_per_execution`, ...).

        Raises:
            ValueError: `learning_rate` / `warmup_proportion` beside an optimizer passed; a rate not above 0
                or a proportion outside [0, 1); `gradient_accumulation_steps` not an int >= 1, or set on a
                model that does not accumulate, or beside an optimizer that accumulates itself.
        """
        from keras_bert.execution import ChoosesExecution
        from keras_bert.models.accumulation import (
            GradientAccumulation,
            accumulation_steps,
            refuse_optimizer_accumulation,
            weighted_metrics,
        )
        from keras_bert.training.optimization import create_optimizer

        owner = f"{type(self).__name__}.compile"
        self._default_optimizer = optimizer == "auto"
        if not self._default_optimizer and (learning_rate is not None or warmup_proportion is not None):
            raise ValueError(f"{owner}: learning_rate / warmup_proportion set the default optimizer's "
                             "schedule; the optimizer passed brings its own rate (schedule one with "
                             "keras_bert.training.optimization.create_optimizer(lr, steps, warmup))")
        rate = DEFAULT_LEARNING_RATE if learning_rate is None else float(learning_rate)
        warmup = DEFAULT_WARMUP_PROPORTION if warmup_proportion is None else float(warmup_proportion)
        if not (rate > 0 and 0 <= warmup < 1):
            raise ValueError(f"{owner}: learning_rate={rate}, warmup_proportion={warmup}; expected a rate "
                             "above 0 and a proportion in [0, 1)")
        steps = accumulation_steps(gradient_accumulation_steps)
        if steps > 1 and not isinstance(self, GradientAccumulation):
            raise ValueError(f"{owner}: gradient_accumulation_steps={steps}, but {type(self).__name__} "
                             "takes its batches whole")
        self._schedule = rate, warmup
        if self._default_optimizer:
            # A constant rate until fit() knows how many steps the warmup/decay schedule spans.
            optimizer = create_optimizer(rate, num_train_steps=None)
        if loss == "auto":
            loss, loss_weights = self.task_loss()
            kwargs.setdefault("loss_weights", loss_weights)
        if metrics == "auto":
            metrics = self._default_metrics()
        if isinstance(self, ChoosesExecution):
            jit_compile = self._execution_for(jit_compile, kwargs.get("run_eagerly"))
        arguments = {"optimizer": optimizer, "loss": loss, "metrics": metrics, **kwargs}
        if steps > 1:
            arguments = weighted_metrics(arguments)
        super().compile(jit_compile=jit_compile, **arguments)
        if isinstance(self, GradientAccumulation):
            refuse_optimizer_accumulation(self.optimizer, steps)
            self.gradient_accumulation_steps = steps

    def task_loss(self):
        """(loss, loss_weights) of the task: the one loss `compile()` and the fine-tuning recipes train
        with and score eval_loss by (loss_weights None: one output, or equal weights)."""
        return None, None

    def compile_from_config(self, config):
        """Compiles as the saved model was, through this class's `compile` (`keras.saving.load_model` calls
        it with the saved `get_compile_config()`)."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def _default_metrics(self):
        return None

    def _schedule_default_optimizer(self, x, batch_size, epochs, steps_per_epoch, initial_epoch):
        """Warmup + linear decay over the steps of this fit, for an optimizer compile() chose."""
        if not getattr(self, "_default_optimizer", False) or int(self.optimizer.iterations.numpy()) != 0:
            return
        from keras_bert.training.optimization import WarmupLinearDecay

        steps = steps_per_epoch or user_data.steps_per_epoch(x, batch_size)
        if steps is None:
            logger.warning("fit: the number of steps is unknown (pass steps_per_epoch); the default "
                           "optimizer keeps a constant learning rate of %g", self._schedule[0])
            return
        total = max(1, int(steps) * max(1, epochs - initial_epoch))
        rate, warmup = self._schedule
        # Its float rate's variable stays tracked: Keras' setter would untrack it, and tf.train.Checkpoint (a
        # TrainingCheckpoint) then refuses to save the optimizer.
        compat.set_learning_rate_schedule(self.optimizer, WarmupLinearDecay(rate, total, int(total * warmup)))
