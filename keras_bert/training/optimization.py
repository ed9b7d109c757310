"""BERT's optimizer: linear warmup then linear decay to 0, AdamW or LAMB, global-norm clipping.

`create_optimizer(...)` returns a Keras optimizer ready for `model.compile`. Weight decay is not applied to
LayerNorm parameters and biases (as the original `AdamWeightDecayOptimizer`); gradients are clipped by
their global norm AFTER the cross-replica sum, so an N-replica step equals the single-device step.
"""

import contextvars

import keras
import tensorflow as tf
from keras import ops

from keras_bert import compat
from keras_bert.contexts import setting
from keras_bert.training.defaults import FINETUNING

# Within `AdamW.update_scope`: (the optimizer, {dtype: its step's scalars}).
_STEP_SCALARS = contextvars.ContextVar("step_scalars", default=(None, None))

# Variable-name patterns the original excludes from weight decay (Keras names LayerNorm's gamma/beta).
NO_DECAY_PATTERNS = ("LayerNorm", "layer_norm", "gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="keras_bert")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """lr(step) = peak * step / warmup for step < warmup, then peak * (total - step) / (total - warmup),
    reaching 0 at `num_train_steps` (and staying there).

    Args:
        learning_rate: peak learning rate (float).
        num_train_steps: total optimizer steps (int > 0).
        num_warmup_steps: steps of linear warmup from 0 (int >= 0).

    Raises:
        ValueError: `num_train_steps` not above 0, or `num_warmup_steps` outside [0, num_train_steps].
    """

    def __init__(self, learning_rate, num_train_steps, num_warmup_steps=0):
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
        if not 0 <= num_warmup_steps <= num_train_steps:
            raise ValueError(
                f"num_warmup_steps must be in [0, num_train_steps={num_train_steps}], got {num_warmup_steps}")
        self.learning_rate = float(learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(self.num_warmup_steps, "float32")
        total = ops.cast(self.num_train_steps, "float32")
        warmup_lr = self.learning_rate * step / ops.maximum(warmup, 1.0)
        decay_lr = self.learning_rate * (total - step) / ops.maximum(total - warmup, 1.0)
        return ops.where(step < warmup, warmup_lr, ops.maximum(decay_lr, 0.0))

    def get_config(self):
        return {"learning_rate": self.learning_rate, "num_train_steps": self.num_train_steps,
                "num_warmup_steps": self.num_warmup_steps}


class _ClipAfterAllReduce(compat.OptimizerHooks):
    """Clips by global norm the gradient summed over replicas (Keras clips each replica's own part), and
    updates with sparse gradients made dense; a file without optimizer state loads the model alone."""

    def __init__(self, *args, clip_global_norm=1.0, **kwargs):
        super().__init__(*args, **kwargs)
        self.clip_global_norm = clip_global_norm

    def load_own_variables(self, store):
        if not len(store.keys()):  # a file saved without optimizer state (save_without_optimizer)
            return
        super().load_own_variables(store)

    def transform_summed_gradients(self, grads_and_vars):
        trainable_variables = [v for _, v in grads_and_vars]
        if self.clip_global_norm:
            grads = [g for g, _ in grads_and_vars]
            norm = tf.linalg.global_norm([_summed_duplicates(g) for g in grads])
            grads, _ = tf.clip_by_global_norm(grads, self.clip_global_norm, use_norm=norm)
            grads_and_vars = list(zip(grads, trainable_variables, strict=True))
        # A lookup's sparse gradient as the dense tensor it stands for: Keras' Adam would square each
        # looked-up row before summing a repeated id's (g1^2 + g2^2, not (g1 + g2)^2), unlike the original's
        # Adam and the fused update; the same on every strategy.
        return [(tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g, v)
                for g, v in grads_and_vars]

    def get_config(self):
        config = super().get_config()
        config["clip_global_norm"] = self.clip_global_norm
        return config


def _summed_duplicates(gradient):
    """An embedding's sparse gradient with the rows of repeated ids summed: the norm of the dense gradient
    (tf.clip_by_global_norm alone takes the norm of the unsummed rows)."""
    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    ids, positions = tf.unique(gradient.indices)
    return tf.math.unsorted_segment_sum(gradient.values, positions, tf.shape(ids)[0])


def _tf_variable(variable):
    """The tf.Variable of a Keras variable (a tf.Variable as it is)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


@keras.saving.register_keras_serializable(package="keras_bert")
class AdamW(_ClipAfterAllReduce, keras.optimizers.AdamW):
    """AdamW (Loshchilov & Hutter's decoupled decay) with `clip_global_norm` applied to the all-reduced
    gradient.

    The step is the paper's (and torch's / Hugging Face's): var -= lr * m_hat / (sqrt(v_hat) + epsilon)
    with m_hat, v_hat the bias-corrected moments. Keras' Adam adds epsilon to the uncorrected sqrt(v), which
    makes it 1 / sqrt(1 - beta_2^t) times larger (31x at step 1, 6x at step 24): the updates of small
    gradients shrink, which a short fine-tuning pays for in accuracy (docs/optimizer.md).

    On one device (no strategy, or `OneDeviceStrategy`) the update runs as TF's fused kernels: the decay as
    one multiply (var * (1 - lr * wd)) and the Adam step as `ResourceApplyAdam` with its epsilon scaled to
    the bias-corrected form, one multi-threaded pass over the variable each instead of the ~10 elementwise
    ops (each a pass over memory) the unfused update builds (measured in docs/execution.md). Under a
    mirroring strategy, the same step from Keras ops.

    Args:
        *args: `keras.optimizers.AdamW`'s, in its order (`learning_rate`, `weight_decay`, `beta_1`,
            `beta_2`, `epsilon`, ...); `create_optimizer` builds one with BERT's values.
        **kwargs: the same by name, and `clip_global_norm` (default 1.0; None or 0: no clipping).

    Raises:
        ValueError: `amsgrad=True` (BERT's AdamW has no AMSGrad variant).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.amsgrad:
            raise ValueError("keras_bert.training.AdamW: amsgrad=True is not supported (BERT's AdamW has no "
                             "AMSGrad variant); use keras.optimizers.AdamW(amsgrad=True)")

    def _fused(self, variable=None):
        # Under a strategy that mirrors variables the update sees per-device copies: Keras ops there.
        strategy = tf.distribute.get_strategy()
        single = not tf.distribute.has_strategy() or isinstance(strategy, tf.distribute.OneDeviceStrategy)
        return single and (variable is None or variable.dtype == tf.float32)

    def apply_weight_decay(self, variables):
        if self.weight_decay is None or not all(self._fused(v) for v in variables):
            return super().apply_weight_decay(variables)
        keep = {}  # per dtype: 1 - lr * wd, the schedule evaluated once a step
        for variable in map(_tf_variable, variables):
            if compat.uses_weight_decay(self, variable):
                if variable.dtype not in keep:
                    keep[variable.dtype] = 1.0 - (tf.cast(self.learning_rate, variable.dtype)
                                                  * tf.cast(self.weight_decay, variable.dtype))
                variable.assign(variable * keep[variable.dtype])

    def update_scope(self):
        # The step's scalars are made once per dtype while Keras calls `update_step` for each variable (a
        # traced step of MiniLM: 81 variables; per variable they were a fifth of the step's trace). Kept in a
        # context variable, not an attribute: an optimizer's attributes are its checkpoint's dependencies.
        return setting(_STEP_SCALARS, (self, {}))

    def _scalars(self, dtype, learning_rate):
        """(learning rate, beta_1, beta_2, their powers at this step, epsilon) as `dtype` tensors; made once
        per step and dtype within `update_scope`. The epsilon is the one that, added to the uncorrected
        sqrt(v), is `epsilon` added to sqrt(v_hat)."""
        owner, cache = _STEP_SCALARS.get()
        if owner is self and dtype in cache:
            return cache[dtype]
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        beta_1_power, beta_2_power = tf.pow(beta_1, step), tf.pow(beta_2, step)
        scalars = (tf.cast(learning_rate, dtype), beta_1, beta_2, beta_1_power, beta_2_power,
                   tf.cast(self.epsilon, dtype) * tf.sqrt(1 - beta_2_power))
        if owner is self:
            cache[dtype] = scalars
        return scalars

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        momentum, velocity = compat.adam_slots(self, variable)
        scalars = self._scalars(dtype, learning_rate)
        learning_rate, beta_1, beta_2, beta_1_power, beta_2_power, epsilon = scalars
        gradient = tf.cast(gradient, dtype)
        if self._fused(variable):  # (float32 variables: what mixed precision keeps)
            tf.raw_ops.ResourceApplyAdam(
                var=_tf_variable(variable).handle, m=_tf_variable(momentum).handle,
                v=_tf_variable(velocity).handle, beta1_power=beta_1_power, beta2_power=beta_2_power,
                lr=learning_rate, beta1=beta_1, beta2=beta_2, epsilon=epsilon,
                grad=tf.convert_to_tensor(gradient))
            return
        self.assign_add(momentum, (gradient - momentum) * (1 - beta_1))
        self.assign_add(velocity, (tf.square(gradient) - velocity) * (1 - beta_2))
        step_size = learning_rate * tf.sqrt(1 - beta_2_power) / (1 - beta_1_power)
        self.assign_sub(variable, momentum * step_size / (tf.sqrt(velocity) + epsilon))


@keras.saving.register_keras_serializable(package="keras_bert")
class Lamb(_ClipAfterAllReduce, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb` with decoupled weight decay and `clip_global_norm` on the all-reduced
    gradient.

    Args:
        *args: `keras.optimizers.Lamb`'s, in its order (`learning_rate`, `beta_1`, `beta_2`, `epsilon`,
            ...); `create_optimizer(..., optimizer="lamb")` builds one with BERT's values.
        clip_global_norm: clip the gradient summed over replicas to this global norm (default 1.0; None
            or 0: no clipping).
        **kwargs: `keras.optimizers.Lamb`'s by name (`weight_decay`, ...).
    """


def create_optimizer(learning_rate, num_train_steps, num_warmup_steps=0, optimizer="adamw",
                     weight_decay=FINETUNING.weight_decay, clip_global_norm=FINETUNING.clip_global_norm,
                     beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                     no_decay_patterns=NO_DECAY_PATTERNS):
    """Builds BERT's optimizer.

    Args:
        learning_rate: peak learning rate of the warmup/linear-decay schedule.
        num_train_steps: schedule length (optimizer steps); None: a constant `learning_rate` (its
            schedule can be set later, before the first step).
        num_warmup_steps: warmup length (optimizer steps).
        optimizer: "adamw" (the original's) or "lamb" (You et al. 2019, for large batches).
        weight_decay: decoupled weight-decay rate; variables whose name matches `no_decay_patterns`
            (LayerNorm gamma/beta, biases) are not decayed.
        clip_global_norm: clip the summed gradient to this global norm (None/0: no clipping).
        beta_1: Adam's first-moment decay (default 0.9).
        beta_2: Adam's second-moment decay (default 0.999).
        epsilon: Adam's epsilon, added to sqrt of the bias-corrected second moment (default 1e-6, the
            original's).
        no_decay_patterns: substrings of the variable names kept from weight decay (default: LayerNorm,
            layer_norm, gamma, beta, bias).

    Returns:
        A `keras_bert.training.AdamW` or `Lamb` instance whose learning rate is a `WarmupLinearDecay`
        (or the constant `learning_rate` when `num_train_steps` is None).

    Raises:
        ValueError: an unknown `optimizer`; `num_train_steps` not above 0 or `num_warmup_steps` outside
            [0, num_train_steps].
    """
    schedule = learning_rate
    if num_train_steps is not None:
        schedule = WarmupLinearDecay(learning_rate, num_train_steps, num_warmup_steps)
    classes = {"adamw": AdamW, "lamb": Lamb}
    if optimizer not in classes:
        raise ValueError(f"optimizer must be one of {sorted(classes)}, got {optimizer!r}")
    result = classes[optimizer](learning_rate=schedule, weight_decay=weight_decay, beta_1=beta_1,
                                beta_2=beta_2, epsilon=epsilon, clip_global_norm=clip_global_norm)
    if weight_decay:
        result.exclude_from_weight_decay(var_names=list(no_decay_patterns))
    return result
