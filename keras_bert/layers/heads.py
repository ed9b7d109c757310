"""The masked-LM head (the pooler and the next-sentence classifier are plain Dense layers in models/)."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert import compat
from keras_bert.layers.initializers import truncated_normal
from keras_bert.layers.layer_norm import LayerNorm
from keras_bert.layers.transformer import ACTIVATIONS, column_sums, dense_in_training


@tf.custom_gradient
def _biased_in_float32(logits, bias):
    """float32(`logits`) + `bias` for low-precision logits [rows, vocab], differentiated in their dtype: the
    upstream gradient is cast once, and the bias's is its `column_sums`, so no float32 gradient of the
    vocab-sized logits is kept for a reduction."""

    def gradient(upstream):
        d_logits = tf.cast(upstream, logits.dtype)
        return d_logits, tf.cast(column_sums(d_logits), bias.dtype)

    return tf.cast(logits, bias.dtype) + bias, gradient


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

    def call(self, sequence_output, masked_lm_positions, training=None):
        gathered = ops.take_along_axis(
            sequence_output, ops.expand_dims(ops.cast(masked_lm_positions, "int32"), -1), axis=1)
        embeddings = ops.cast(compat.float_embeddings(self.embedding_layer), self.compute_dtype)
        bias = ops.cast(self.output_bias, "float32")
        if not training:
            x = ops.cast(self.layer_norm(self.transform(gathered)), self.compute_dtype)
            return ops.cast(ops.matmul(x, ops.transpose(embeddings)), "float32") + bias
        # Training, on the [batch * predictions, hidden] rows: the transform as `dense_in_training`, and one
        # 2-D product with the table as it is stored, so the table's gradient comes out of its matmul as
        # [vocab, hidden] (a transposed operand's gradient is a [hidden, vocab] product and a transpose);
        # low-precision logits keep their gradient in their dtype (`_biased_in_float32`).
        rows = dense_in_training(self.transform, tf.reshape(gathered, (-1, gathered.shape[-1])))
        rows = ops.cast(self.layer_norm(rows, training=training), self.compute_dtype)
        logits = tf.linalg.matmul(rows, embeddings, transpose_b=True)
        logits = _biased_in_float32(logits, bias) if logits.dtype != tf.float32 else logits + bias
        return tf.reshape(logits, tf.concat([tf.shape(gathered)[:-1], tf.shape(embeddings)[:1]], 0))

    def get_config(self):
        config = super().get_config()
        # The tied embedding layer is rebuilt by the owning model, not serialized twice.
        config.update(hidden_act=self.hidden_act, initializer_range=self.initializer_range,
                      layer_norm_eps=self.layer_norm_eps)
        return config
