"""`TaskDistiller`: a `keras.distillation.Distiller` of a task model into its student, with the output and
hidden-state loss terms it trains by (the package docstring says how they combine)."""

import keras
import tensorflow as tf

from keras_bert import compat
from keras_bert.distillation.students import check_student, spread_layers
from keras_bert.execution import ChoosesExecution
from keras_bert.models.task_compile import OptimizerBuiltFirst

# The best of the measured settings (docs/distillation.md): alpha 0.2 beat 0.5 and 1 (gold labels only).
DEFAULT_TEMPERATURE = 2.0
DEFAULT_ALPHA = 0.2
# Keys of a batch's inputs that carry the teacher's outputs read from a cache (teacher_cache.py).
CACHED_OUTPUTS, CACHED_HIDDEN = "teacher_outputs", "teacher_hidden"


def feature_model(model):
    """A functional model sharing `model`'s layers: inputs -> {"outputs": its outputs, "hidden": the encoder's
    per-layer outputs ([N, seq, hidden] each; N = batch, or batch x choices)}."""
    hidden = compat.called_outputs(model.encoder)["encoder_outputs"]
    inputs, outputs = compat.functional_structure(model)
    return keras.Model(inputs, {"outputs": outputs, "hidden": list(hidden)}, name=f"{model.name}_features")


def _mask(model, inputs, reference):
    """float32 weights of `model.distillation_mask(inputs)` shaped as `reference`'s leading axes (None: 1)."""
    hook = getattr(model, "distillation_mask", None)
    mask = hook(inputs) if hook is not None else None
    return None if mask is None else tf.cast(tf.reshape(mask, tf.shape(reference)[:-1]), tf.float32)


def _masked_mean(values, mask):
    if mask is None:
        return tf.reduce_mean(values)
    return tf.reduce_sum(values * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


class OutputDistillation(keras.distillation.LogitsDistillation):
    """`LogitsDistillation` over a task model's outputs: KL(teacher || student) of the softmax at
    `temperature` over the last axis, x temperature^2, averaged over the positions of `mask`; a one-wide
    output (a regression value) by squared error. Dict outputs are summed with the task's `weights`."""

    def __init__(self, temperature=DEFAULT_TEMPERATURE, weights=None):
        super().__init__(temperature=temperature, loss="kl_divergence")
        self.weights = weights

    def compute_loss(self, teacher_outputs, student_outputs, mask=None, **kwargs):
        def one(teacher, student):
            teacher, student = tf.cast(teacher, tf.float32), tf.cast(student, tf.float32)
            if teacher.shape[-1] == 1:
                return _masked_mean(tf.square(teacher - student)[..., 0], mask)
            t = self.temperature
            log_p = tf.nn.log_softmax(teacher / t, axis=-1)
            log_q = tf.nn.log_softmax(student / t, axis=-1)
            kl = tf.reduce_sum(tf.exp(log_p) * (log_p - log_q), axis=-1)
            return _masked_mean(kl, mask) * (t * t)

        if isinstance(teacher_outputs, dict):
            weights = self.weights or {name: 1.0 for name in teacher_outputs}
            return tf.add_n([weights[name] * one(teacher_outputs[name], student_outputs[name])
                             for name in sorted(teacher_outputs)])
        return one(teacher_outputs, student_outputs)

    def get_config(self):
        return {"temperature": self.temperature, "weights": self.weights}


class HiddenStateDistillation(keras.distillation.DistillationLoss):
    """Mean squared error of student layer i's output (projected to the teacher's width) from teacher layer
    `mapping[i]`'s, over the real tokens (`mask` [N, seq]), averaged over the layers."""

    def __init__(self, mapping):
        self.mapping = list(mapping)
        self.teacher_layer_name = self.student_layer_name = None  # our features, not Keras' extractors

    def compute_loss(self, teacher_outputs, student_outputs, mask=None, **kwargs):
        losses = []
        for student_hidden, index in zip(student_outputs, self.mapping, strict=True):
            error = tf.reduce_mean(tf.square(tf.cast(teacher_outputs[index], tf.float32)
                                             - tf.cast(student_hidden, tf.float32)), axis=-1)
            losses.append(_masked_mean(error, mask))
        return tf.add_n(losses) / len(losses)

    def validate_outputs(self, teacher_outputs, student_outputs):
        if len(student_outputs) != len(self.mapping):
            raise ValueError(f"{len(student_outputs)} student layers but a mapping of {len(self.mapping)}")

    def get_config(self):
        return {"mapping": self.mapping}


class TaskDistiller(ChoosesExecution, OptimizerBuiltFirst, keras.distillation.Distiller):
    """`keras.distillation.Distiller` of a task model `teacher` (frozen) into `student` (`make_student`).

    Args:
        teacher, student: task models of one class (`check_student`).
        temperature: softmax temperature of the output distillation (default 2).
        alpha: weight of the gold-label task loss (Keras' `student_loss_weight`); 1 - alpha goes to the
            distillation terms.
        hidden_weight: weight of the hidden-state term beside the output term (1); 0: off.
        layer_map: the teacher layer each student layer stands for (default `spread_layers`).

    Data: batches of (inputs, targets, sample_weight) (`distillation_dataset`); unlabelled rows have sample
    weight 0. `compile()` defaults: the library's AdamW, the student's `task_loss()`; XLA or not as the task
    models choose. Logs `student_loss`, `distillation_loss`, `total_loss`.
    """

    def __init__(self, teacher, student, temperature=DEFAULT_TEMPERATURE, alpha=DEFAULT_ALPHA,
                 hidden_weight=0.0, layer_map=None, name="distiller", **kwargs):
        check_student(teacher, student)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha={alpha}; expected a weight in [0, 1]")
        if not temperature > 0:
            raise ValueError(f"temperature={temperature}; expected a number above 0")
        if hidden_weight < 0:
            raise ValueError(f"hidden_weight={hidden_weight}; expected a weight of at least 0")
        teacher_config, student_config = teacher.encoder.config, student.encoder.config
        mapping = list(layer_map or spread_layers(teacher_config.num_hidden_layers,
                                                  student_config.num_hidden_layers))
        losses = [OutputDistillation(temperature, teacher.task_loss()[1])]
        if hidden_weight:
            losses.append(HiddenStateDistillation(mapping))
        super().__init__(teacher, student, losses, [1.0, hidden_weight][: len(losses)],
                         student_loss_weight=float(alpha), name=name, **kwargs)
        self.temperature, self.alpha, self.hidden_weight = temperature, alpha, hidden_weight
        self.layer_map = mapping
        self._teacher_features = feature_model(teacher)
        self._student_features = feature_model(student) if hidden_weight else None
        self.projections = []
        if hidden_weight and student_config.hidden_size != teacher_config.hidden_size:
            self.projections = [keras.layers.Dense(teacher_config.hidden_size, name=f"projection_{i}")
                                for i in range(len(mapping))]
            for projection in self.projections:
                projection.build((None, None, student_config.hidden_size))
        # Its weights are the teacher's, the student's and the projections', all made by now: built, so that
        # `fit` makes the optimizer's slots before tracing its step (`OptimizerBuiltFirst`).
        self.built = teacher.built and student.built

    @property
    def encoder(self):
        """The student's encoder (its dtype policy chooses the execution; its config is the run's)."""
        return self.student.encoder

    @property
    def trained(self):
        """What training changes, for a checkpoint (`TrainingCheckpoint(tracked=...)`): the student and the
        hidden-state projections, never the teacher, whose weights are the run's input."""
        return {"student": self.student, "projections": self.projections}

    def teacher_features(self, inputs):
        """{"outputs": the teacher's outputs, "hidden": {str(i): layer i's output}, for the layers that the
        hidden-state term reads (none without it)}, in float32: what a step distils, or a cache holds."""
        teacher = self._teacher_features(inputs, training=False)
        hidden = {str(i): tf.cast(teacher["hidden"][i], tf.float32)
                  for i in (sorted(set(self.layer_map)) if self.hidden_weight else [])}
        return {"outputs": tf.nest.map_structure(lambda t: tf.cast(t, tf.float32), teacher["outputs"]),
                "hidden": hidden}

    def call(self, inputs, training=None):
        inputs, _ = _split_cached(inputs)
        if self._student_features is None:
            return self.student(inputs, training=training)
        return self._student_features(inputs, training=training)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        x, cached = _split_cached(x)
        if y_pred is None:
            y_pred = self(x, training=training)
        features = y_pred if self._student_features is not None else {"outputs": y_pred, "hidden": []}
        outputs = features["outputs"]
        student_loss = 0.0
        if self.student_loss_weight > 0.0 and y is not None:
            student_loss = self._gold_loss(y, outputs, sample_weight)
        distillation_loss = 0.0
        if self.student_loss_weight < 1.0:
            teacher = cached or self.teacher_features(x)  # cached: the teacher is not run
            teacher = dict(teacher, hidden={int(i): h for i, h in teacher["hidden"].items()})
            first = keras.tree.flatten(outputs)[0]
            terms = [self.distillation_losses[0].compute_loss(
                teacher["outputs"], outputs, mask=_mask(self.student, x, first))]
            if self._student_features is not None:
                hidden = features["hidden"]
                if self.projections:
                    hidden = [projection(h) for projection, h in zip(self.projections, hidden, strict=True)]
                mask = tf.cast(tf.reshape(x["input_mask"], tf.shape(hidden[0])[:-1]), tf.float32)
                terms.append(self.distillation_losses[1].compute_loss(teacher["hidden"], hidden, mask=mask))
            distillation_loss = tf.add_n([weight * term for weight, term in
                                          zip(self.distillation_loss_weights, terms, strict=True)])
        # Keras' losses return a replica's share (1 / replicas) of the loss, so that summed gradients are the
        # global batch's; the terms computed here are scaled alike, the trackers get whole values.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        student_loss = student_loss * replicas
        total = self.student_loss_weight * student_loss + (1.0 - self.student_loss_weight) * distillation_loss
        self.student_loss_tracker.update_state(student_loss)
        self.distillation_loss_tracker.update_state(distillation_loss)
        self.total_loss_tracker.update_state(total)
        return total / replicas

    def _gold_loss(self, y, outputs, sample_weight):
        """The task's own loss (`student.task_loss()`, its output weights) on gold labels."""
        loss, weights = self._student_loss, self._task_loss_weights
        if not isinstance(loss, dict):
            return loss(y, outputs, sample_weight=sample_weight)
        weights = weights or {name: 1.0 for name in loss}
        return tf.add_n([weights[name] * loss[name](
            y[name], outputs[name],
            sample_weight=sample_weight[name] if isinstance(sample_weight, dict) else sample_weight)
            for name in sorted(loss)])

    def compile(self, optimizer="auto", loss="auto", metrics=None, *, jit_compile="auto", **kwargs):
        """`Distiller.compile` with the task's defaults: optimizer "auto" = the library's AdamW at the
        student's rate, `training.defaults.DISTILLATION` (constant: pass a scheduled one, e.g.
        `create_optimizer(lr, steps, warmup)`);
        loss "auto" = the student's `task_loss()` (with its output weights); jit_compile "auto" = XLA or
        not as the task models choose (`keras_bert.execution`)."""
        from keras_bert.training.defaults import DISTILLATION
        from keras_bert.training.optimization import create_optimizer

        if optimizer == "auto":
            optimizer = create_optimizer(DISTILLATION.learning_rate, num_train_steps=None)
        self._task_loss_weights = None
        if loss == "auto":
            loss, self._task_loss_weights = self.student.task_loss()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics,
                        jit_compile=self._execution_for(jit_compile, kwargs.get("run_eagerly")), **kwargs)

    def get_config(self):
        return {"name": self.name, "temperature": self.temperature, "alpha": self.alpha,
                "hidden_weight": self.hidden_weight, "layer_map": self.layer_map,
                "teacher": keras.saving.serialize_keras_object(self.teacher),
                "student": keras.saving.serialize_keras_object(self.student)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        teacher = keras.saving.deserialize_keras_object(config.pop("teacher"))
        student = keras.saving.deserialize_keras_object(config.pop("student"))
        return cls(teacher, student, **config)


def _split_cached(x):
    """(the model inputs of batch inputs `x`, the teacher features cached with them or None)."""
    if not isinstance(x, dict) or CACHED_OUTPUTS not in x:
        return x, None
    x = dict(x)
    return x, {"outputs": x.pop(CACHED_OUTPUTS), "hidden": x.pop(CACHED_HIDDEN, {})}


