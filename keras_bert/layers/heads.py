"""The masked-LM head (the pooler and the next-sentence classifier are plain Dense layers in models/)."""

import keras
from keras import ops

from keras_bert import compat
from keras_bert.layers.initializers import truncated_normal
from keras_bert.layers.layer_norm import LayerNorm
from keras_bert.layers.transformer import ACTIVATIONS


@keras.saving.register_keras_serializable(package="keras_bert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at each masked position.

    Call with `(sequence_output, masked_lm_positions)`: [batch, seq, hidden] float and [batch, num_masked]
    int32. Only the gathered positions go through the transform, so the vocab-sized matmul costs
    num_masked rather than seq rows. Returns float32 logits [batch, num_masked, vocab_size].

    Output weights are tied to `embedding_layer` (the encoder's word embeddings); only the output bias is
    the head's own.
    """

    def __init__(self, embedding_layer, hidden_act="gelu", initializer_range=0.02, layer_norm_eps=1e-12,
                 **kwargs):
        super().__init__(**kwargs)
        self.embedding_layer = embedding_layer
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        hidden_size = embedding_layer.output_dim
        self.transform = keras.layers.Dense(
            hidden_size, activation=ACTIVATIONS[hidden_act],
            kernel_initializer=truncated_normal(initializer_range), dtype=self.dtype_policy, name="transform")
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="layer_norm")

    def build(self, input_shape):
        hidden_size = self.embedding_layer.output_dim
        self.transform.build((None, None, hidden_size))
        self.layer_norm.build((None, None, hidden_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.embedding_layer.input_dim,), initializer="zeros")
        self.built = True

    def call(self, sequence_output, masked_lm_positions):
        gathered = ops.take_along_axis(
            sequence_output, ops.expand_dims(ops.cast(masked_lm_positions, "int32"), -1), axis=1)
        x = self.layer_norm(self.transform(gathered))
        x = ops.cast(x, self.compute_dtype)
        embeddings = ops.cast(compat.float_embeddings(self.embedding_layer), self.compute_dtype)
        logits = ops.matmul(x, ops.transpose(embeddings))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def get_config(self):
        config = super().get_config()
        # The tied embedding layer is rebuilt by the owning model, not serialized twice.
        config.update(hidden_act=self.hidden_act, initializer_range=self.initializer_range,
                      layer_norm_eps=self.layer_norm_eps)
        return config
