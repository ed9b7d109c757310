"""Exact gradient accumulation: one optimizer step on a batch, computed K micro-batches at a time.

`model.compile(..., gradient_accumulation_steps=K)` makes each train step split its batch (per replica)
into K micro-batches, run them one after another in a `tf.while_loop` (only one micro-batch's activations
alive at a time), sum their gradients and apply them once. Each micro-batch's loss is scaled so that the
sum over micro-batches IS the whole batch's loss, so the step equals the plain step on the whole batch
(float rounding apart): mean-reduced Keras losses are weighted by the micro-batch's share of the rows, and a
model whose loss is normalised by a batch statistic (the pre-trainer's masked-token count) computes that
statistic once on the whole batch (`_loss_normalizers`). Clipping sees the summed gradient and the schedule
counts optimizer steps. Keras optimizers' own `gradient_accumulation_steps` instead averages per-micro-batch
mean losses, which differs whenever micro-batches carry different loss weights.

A batch whose size is not a multiple of K (the last one of an epoch) is padded to one by repeating its last
row with weight 0; metrics count the real rows only (compiled `metrics` are made weighted ones, so with
K > 1 they also take the `sample_weight` given to fit). Dropout draws its masks per micro-batch, so with
dropout the draws (not the maths) differ from the whole-batch step. The dataset yields the whole batches:
the batch size stays that of an optimizer step.
"""

import keras
import tensorflow as tf
from keras import ops

from keras_bert import compat


def _rows(structure):
    return tf.shape(next(t for t in tf.nest.flatten(structure) if t is not None))[0]


def _split(tensor, index, steps, micro_rows):
    """[rows, ...] -> [steps, micro_rows, ...], rows picked by `index` (padding repeats the last row)."""
    if tensor is None:
        return None
    picked = tf.gather(tensor, index)
    return tf.reshape(picked, tf.concat([[steps, micro_rows], tf.shape(tensor)[1:]], axis=0))


def weighted_rows(sample_weight, row_weight):
    """`sample_weight` ([rows] or [rows, ...], or None) times the 0/1 `row_weight` [rows] of real rows."""
    if sample_weight is None:
        return row_weight
    row_weight = ops.cast(row_weight, sample_weight.dtype)
    return sample_weight * ops.reshape(row_weight, (-1,) + (1,) * (len(sample_weight.shape) - 1))


def accumulation_steps(gradient_accumulation_steps):
    """`gradient_accumulation_steps` checked: an int >= 1 (1 = the plain Keras step), else ValueError."""
    steps = int(gradient_accumulation_steps)
    if steps < 1 or steps != gradient_accumulation_steps:
        raise ValueError("gradient_accumulation_steps must be an integer >= 1, "
                         f"got {gradient_accumulation_steps!r}")
    return steps


def weighted_metrics(arguments):
    """Keras compile `arguments` (a dict) with `metrics` moved to `weighted_metrics`: Keras' unweighted
    metrics ignore sample weights, so they would count the padding rows that the 0/1 row weights drop."""
    metrics = arguments.get("metrics")
    if not isinstance(metrics, (list, tuple)):
        return arguments
    return {**arguments, "metrics": None,
            "weighted_metrics": [*metrics, *(arguments.get("weighted_metrics") or [])]}


def refuse_optimizer_accumulation(optimizer, steps):
    """ValueError when `optimizer` accumulates gradients itself beside the model's `steps` > 1."""
    if steps > 1 and getattr(optimizer, "gradient_accumulation_steps", None):
        raise ValueError("the optimizer accumulates gradients itself (its gradient_accumulation_steps="
                         f"{optimizer.gradient_accumulation_steps}); set only the model's, which is exact")


class GradientAccumulation:
    """Mixin of keras_bert's models (before `keras.Model` in the bases): after the model's `compile` set
    `gradient_accumulation_steps` (int >= 1, default 1 = the plain Keras step), `train_step` (TF backend)
    accumulates as the module docstring says."""

    gradient_accumulation_steps = 1

    def get_compile_config(self):
        config = super().get_compile_config()
        if config and self.gradient_accumulation_steps > 1:
            config["gradient_accumulation_steps"] = self.gradient_accumulation_steps
        return config

    def _loss_normalizers(self, x, y, sample_weight):
        """Statistics of the whole batch the loss is normalised by (a dict of tensors, computed once per
        step, before the micro-batches; may all-reduce over replicas). None: mean-reduced losses only."""
        del x, y, sample_weight
        return {}

    def _micro_batch_loss(self, x, y, y_pred, sample_weight, row_weight, rows, normalizers):
        """This micro-batch's part of the whole batch's loss (the parts sum to it): the compiled loss of the
        micro-batch (mean over its `micro_rows` rows, padding weighted 0) times micro_rows / `rows`."""
        del normalizers
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred,
                                 sample_weight=weighted_rows(sample_weight, row_weight), training=True)
        return loss * ops.cast(ops.shape(row_weight)[0], loss.dtype) / ops.cast(rows, loss.dtype)

    def train_step(self, data):
        steps = self.gradient_accumulation_steps
        if steps == 1:
            return super().train_step(data)
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        rows = _rows(x)
        micro_rows = (rows + steps - 1) // steps
        positions = tf.range(steps * micro_rows)
        index = tf.minimum(positions, rows - 1)
        row_weight = tf.reshape(tf.cast(positions < rows, "float32"), (steps, micro_rows))
        micro = tf.nest.map_structure(lambda t: _split(t, index, steps, micro_rows), (x, y, sample_weight))
        normalizers = self._loss_normalizers(x, y, sample_weight)
        variables = self.trainable_variables

        def body(step, total, sums):
            mx, my, msw = tf.nest.map_structure(lambda t: None if t is None else t[step], micro)
            mrw = row_weight[step]
            with tf.GradientTape() as tape:
                y_pred = self(mx, training=True)
                loss = self._micro_batch_loss(mx, my, y_pred, msw, mrw, rows, normalizers)
                scaled = self.optimizer.scale_loss(loss)
            grads = tape.gradient(scaled, variables)
            self.compute_metrics(mx, my, y_pred, sample_weight=weighted_rows(msw, mrw))
            sums = [s if g is None else s + tf.convert_to_tensor(g) for s, g in zip(sums, grads, strict=True)]
            return step + 1, total + loss, sums

        zeros = [tf.zeros(v.shape, v.dtype) for v in variables]
        # parallel_iterations=1: one micro-batch at a time, which is the point.
        _, total, sums = tf.while_loop(lambda step, *_: step < steps, body,
                                       (tf.constant(0), tf.constant(0.0), zeros), parallel_iterations=1)
        self.optimizer.apply_gradients(zip(sums, variables, strict=True))
        compat.loss_tracker(self).update_state(_unscale(total), sample_weight=rows)
        return self.get_metrics_result()


def _unscale(loss):
    """The loss before Keras divided it by the number of replicas (what Keras' loss tracker records)."""
    return loss * tf.distribute.get_strategy().num_replicas_in_sync
