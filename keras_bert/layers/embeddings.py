"""BertEmbeddings: word + position + segment embeddings, then LayerNorm and dropout."""

import keras
from keras import ops

from keras_bert import compat
from keras_bert.layers.dropout import HashDropout
from keras_bert.layers.initializers import truncated_normal
from keras_bert.layers.layer_norm import LayerNorm


@keras.saving.register_keras_serializable(package="keras_bert")
class BertEmbeddings(keras.layers.Layer):
    """Sums word, learned absolute position and token-type embeddings, then LayerNorm + dropout.

    Call with `(input_word_ids, input_type_ids)`, both int32 [batch, seq]; returns [batch, seq, hidden].
    `word_embeddings` is exposed so the masked-LM head can tie its output weights to it.
    """

    def __init__(self, vocab_size, hidden_size, max_position_embeddings=512, type_vocab_size=2,
                 initializer_range=0.02, layer_norm_eps=1e-12, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.dropout_rate = dropout

        init = truncated_normal(initializer_range)
        self.word_embeddings = keras.layers.Embedding(
            vocab_size, hidden_size, embeddings_initializer=init, dtype=self.dtype_policy,
            name="word_embeddings")
        self.position_embeddings = keras.layers.Embedding(
            max_position_embeddings, hidden_size, embeddings_initializer=init, dtype=self.dtype_policy,
            name="position_embeddings")
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=init, dtype=self.dtype_policy,
            name="token_type_embeddings")
        # LayerNorm statistics in float32 even under a mixed policy.
        self.layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="layer_norm")
        self.dropout = HashDropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, input_shape):
        self.word_embeddings.build(None)
        self.position_embeddings.build(None)
        self.token_type_embeddings.build(None)
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_word_ids, input_type_ids, training=None):
        seq_length = ops.shape(input_word_ids)[1]
        positions = compat.float_embeddings(self.position_embeddings)[:seq_length]
        x = (self.word_embeddings(input_word_ids)
             + ops.expand_dims(ops.cast(positions, self.compute_dtype), 0)
             + self.token_type_embeddings(input_type_ids))
        x = self.layer_norm(x, training=training)
        return self.dropout(ops.cast(x, self.compute_dtype), training=training)

    def compute_output_shape(self, input_word_ids_shape, input_type_ids_shape):
        del input_type_ids_shape
        return (*input_word_ids_shape, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
            dropout=self.dropout_rate,
        )
        return config
