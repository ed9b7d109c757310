"""BertMultipleChoice: scores each (context, ending) pair and picks among them (SWAG)."""

import keras
from keras import ops

from keras_bert.layers.dropout import HashDropout
from keras_bert.models.encoder import INPUT_NAMES, encoder_inputs
from keras_bert.models.task_base import EncoderTaskModel, dense_head


@keras.saving.register_keras_serializable(package="keras_bert")
class BertMultipleChoice(EncoderTaskModel):
    """The paper's SWAG model: a score per choice from its pooled output, softmax over choices.

    Input: encoder input dict whose tensors are int32 [batch, num_choices, seq]. Output: float32 logits
    [batch, num_choices].
    """

    task_kind = "multiple_choice"

    def __init__(self, encoder, num_choices, dropout=None, **kwargs):
        config = encoder.config
        dropout = config.hidden_dropout_prob if dropout is None else dropout
        # === Layers ===
        flatten = _FlattenChoices(name="flatten_choices")
        dropout_layer = HashDropout(dropout, name="choice_dropout")
        head = dense_head(1, config.initializer_range, "choice_score", dtype="float32")
        unflatten = _UnflattenChoices(num_choices, dtype="float32", name="choice_logits")  # logits stay float32
        # === Functional model ===
        inputs = encoder_inputs(prefix_shape=(num_choices,))
        flat = {name: flatten(inputs[name]) for name in INPUT_NAMES}
        outputs = unflatten(head(dropout_layer(encoder(flat)["pooled_output"])))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.num_choices = num_choices
        self.dropout = dropout

    def _task_config(self):
        return {"num_choices": self.num_choices, "dropout": self.dropout}


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
