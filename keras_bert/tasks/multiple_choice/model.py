"""BertMultipleChoice: scores each (context, ending) pair and picks among them (SWAG)."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert.layers.dropout import HashDropout
from keras_bert.models import user_data
from keras_bert.models.assembly import register
from keras_bert.models.encoder import INPUT_NAMES, encoder_inputs
from keras_bert.models.serving import class_outputs, text_spec
from keras_bert.models.task_base import HEAD_ARGS, EncoderTaskModel, dense_head
from keras_bert.tasks.multiple_choice.spec import SPEC
from keras_bert.text.packer import pack_choices


@register
@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(EncoderTaskModel):
    """The paper's SWAG model: a score per choice from its pooled output, softmax over choices.

    Args:
        encoder: a `BertEncoder`.
        num_choices: the number of choices of every example (int; SWAG's: 4).
        dropout: dropout rate before the score layer (default: the encoder's hidden dropout).
        preprocessor: optional `keras_bert.text.BertPreprocessor`: fit/evaluate/predict then take raw
            text (see Input below).
        **kwargs: `keras.Model`'s (e.g. `name`).

    Input: encoder input dict whose tensors are int32 [batch, num_choices, seq] (or, with a
    `preprocessor`, raw text: a tuple (contexts [batch], endings [batch, num_choices]); each choice is
    packed as the pair (context, ending)). Output: float32 logits [batch, num_choices]. `compile()` with no
    arguments uses sparse categorical cross-entropy on logits + accuracy.

    Examples:

        chooser = BertMultipleChoice.from_pretrained("path/to/hf_bert_dir", num_choices=2)
        logits = chooser.predict((["The cat"], [["sat on the mat.", "is a dog."]]))   # [1, 2]
    """

    task_kind = "multiple_choice"
    head_arg_names = (*HEAD_ARGS, "num_choices")
    stated_head_args = ("dropout",)
    options_class = SPEC.options

    def __init__(self, encoder, num_choices, dropout=None, preprocessor=None, **kwargs):
        config = encoder.config
        dropout = config.hidden_dropout_prob if dropout is None else dropout
        # === Layers ===
        flatten = _FlattenChoices(name="flatten_choices")
        dropout_layer = HashDropout(dropout, name="choice_dropout")
        head = dense_head(1, config.initializer_range, "choice_score", dtype="float32")
        # logits stay float32
        unflatten = _UnflattenChoices(num_choices, dtype="float32", name="choice_logits")
        # === Functional model ===
        inputs = encoder_inputs(prefix_shape=(num_choices,))
        flat = {name: flatten(inputs[name]) for name in INPUT_NAMES}
        outputs = unflatten(head(dropout_layer(encoder(flat)["pooled_output"])))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.num_choices = num_choices
        self.dropout = dropout
        self._init_text(preprocessor)

    def _task_config(self):
        return {"num_choices": self.num_choices, "dropout": self.dropout}

    def text_dataset(self, x, *args, **kwargs):
        """`TextTaskModel.text_dataset` (the raw text of fit, evaluate and predict), with the endings checked
        first (`serve` checks them as every served input of a fixed width: `served_inputs.served_arrays`)."""
        texts = None if isinstance(x, tf.data.Dataset) else user_data.text_features(x)
        if texts is not None and "text_b" in texts:
            check_choices(texts["text_b"], self.num_choices)
        return super().text_dataset(x, *args, **kwargs)

    def text_inputs(self, texts, preprocessor=None):
        """{"text": contexts [b], "text_b": endings [b, num_choices]} -> inputs [b, num_choices, seq]."""
        preprocessor = preprocessor or self.preprocessor
        if preprocessor is None or "text_b" not in texts:
            return super().text_inputs(texts, preprocessor)  # raises the error that says what is missing
        return pack_choices(preprocessor, texts["text"], tf.reshape(texts["text_b"], [-1, self.num_choices]))

    # ----------------------------------------------------------------------------------- serving
    serving_forms = ("text_pair",)
    serving_calibration = False  # a choice needs its context and ending

    def token_id_spec(self):
        return {name: tf.TensorSpec([None, self.num_choices, None], tf.int32, name=name)
                for name in INPUT_NAMES}

    def token_id_warmup(self, length):
        return {name: np.stack([value] * self.num_choices, axis=1)
                for name, value in super().token_id_warmup(length).items()}

    def token_id_features(self, seq_length):
        return {name: tf.io.FixedLenFeature([self.num_choices, seq_length], tf.int64) for name in INPUT_NAMES}

    def target_classes(self):
        return self.num_choices

    def text_spec(self, form):
        return text_spec(form, self.num_choices)

    def named_outputs(self, inputs):
        return class_outputs(self.served_call(inputs))

    def answer_outputs(self, inputs, outputs, options):
        """+ `choice` int32 [b], the index of the most probable ending."""
        return dict(outputs, choice=outputs["label_id"])

    def task_loss(self):
        """Sparse cross-entropy on the logits over the choices (softmax over their scores)."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True), None

    def _default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


def check_choices(endings, num_choices):
    """Raises ValueError naming the first example of `endings` (a list of rows, an array or a tensor
    [examples, choices]) that has another number of endings than `num_choices`, or one string in place of
    its row; checked before any work, where the packing would fail late on a reshape, or reshape a batch of
    three-ending rows into the wrong examples."""
    shape = getattr(endings, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] == num_choices:
        return  # a whole array of the right shape: no row to look at
    for i, row in enumerate(endings):
        count = None if np.ndim(row) == 0 else len(row)
        if count != num_choices:
            got = ("one ending (a string, not a list of them)" if count is None
                   else f"{count} ending{'s' * (count != 1)}")
            raise ValueError(f"multiple choice example {i} has {got}; expected {num_choices} (the model's "
                             "num_choices)")


@keras.saving.register_keras_serializable(package="keras_bert")
class _FlattenChoices(keras.layers.Layer):
    """[batch, num_choices, seq] -> [batch * num_choices, seq]."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))


@keras.saving.register_keras_serializable(package="keras_bert")
class _UnflattenChoices(keras.layers.Layer):
    """[batch * num_choices, 1] -> [batch, num_choices]."""

    def __init__(self, num_choices, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = num_choices

    def call(self, x):
        return ops.reshape(x, (-1, self.num_choices))

    def get_config(self):
        return {**super().get_config(), "num_choices": self.num_choices}
