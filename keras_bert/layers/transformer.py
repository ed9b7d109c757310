"""The paper's post-LayerNorm transformer block, with one fused query/key/value projection."""

import contextvars
import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert import compat
from keras_bert.contexts import setting
from keras_bert.layers.dropout import HashDropout
from keras_bert.layers.initializers import truncated_normal
from keras_bert.layers.layer_norm import LayerNorm


def _in_float32(activation):
    """`activation` computed in float32 and returned in its input's dtype. Under mixed_bfloat16 GELU's
    erf/exp chain (forward and gradient) would otherwise round every intermediate to bf16: less exact, and
    on CPU XLA spent ~4 ms per layer and step (mini, b32 s128) on the convert pairs; a no-op in float32."""
    def in_float32(x):
        return ops.cast(activation(ops.cast(x, "float32")), x.dtype)

    in_float32.in_compute_dtype = activation
    return in_float32


_SQRT_HALF = 0.7071067811865476


# Set while a graph is traced for the LiteRT converter (`litert_gelu`).
_LITERT_GELU = contextvars.ContextVar("litert_gelu", default=False)


def litert_gelu():
    """Within this context, the exact GELU is traced in the op order LiteRT's converter fuses into its GELU
    builtin, `(x * 0.5) * (erf(x / sqrt 2) + 1)`: it has no kernel for a lone Erf."""
    return setting(_LITERT_GELU)


# Set while a layer's training forward is traced (`training_gradients`).
_TRAINING_GRADIENTS = contextvars.ContextVar("training_gradients", default=False)


def training_gradients():
    """Within this context the activations trace their training form: GELU with its gradient written out
    (`_gelu_with_gradient`). Inference traces the plain ops."""
    return setting(_TRAINING_GRADIENTS)


_INV_SQRT_2PI = 0.3989422804014327


@tf.custom_gradient
def _gelu_with_gradient(x):
    """x * Phi(x) with d/dx = Phi(x) + x * phi(x) written out. TF's gradient of erf is
    `exp(-square(x))`, a chain of unary ops that grappler fuses into a _UnaryOpsComposition, which XLA
    cannot compile: in a fused step it ran on TF's kernels and split the layer's XLA cluster."""
    cdf = (tf.math.erf(x * _SQRT_HALF) + 1.0) * 0.5

    def gradient(upstream):
        return upstream * (cdf + x * tf.exp(x * x * -0.5) * _INV_SQRT_2PI)

    return cdf * x, gradient


def _gelu_exact(x):
    """x * Phi(x) written as `x * ((erf(x / sqrt 2) + 1) * 0.5)` on purpose: after a Dense's MatMul and
    BiasAdd, grappler's oneDNN remapper fuses exactly this op pattern into one _FusedMatMul (Keras's own
    gelu, `0.5 * x * erfc(-x / sqrt 2)`, stays four separate ops); within `litert_gelu`, LiteRT's order;
    within `training_gradients`, `_gelu_with_gradient`."""
    if _TRAINING_GRADIENTS.get():
        return _gelu_with_gradient(x)
    erf_plus_one = ops.add(ops.erf(ops.multiply(x, _SQRT_HALF)), 1.0)
    if _LITERT_GELU.get():
        return ops.multiply(ops.multiply(x, 0.5), erf_plus_one)
    return ops.multiply(ops.multiply(erf_plus_one, 0.5), x)


# `hidden_act` names -> activation functions, shared by the block and the masked-LM head.
ACTIVATIONS = {
    "gelu": _in_float32(_gelu_exact),
    "gelu_tanh": _in_float32(lambda x: keras.activations.gelu(x, approximate=True)),
    "relu": keras.activations.relu,
    "tanh": _in_float32(keras.activations.tanh),
    "silu": _in_float32(keras.activations.silu),
}


# How a served block lays out its rows (`real_rows`): None outside the served graph, else "gather" or
# "padded".
_SERVED_ROWS = contextvars.ContextVar("served_rows", default=None)


def real_rows(gather=True):
    """Within this context, a `TransformerBlock` with float32 matmuls runs its Dense layers, LayerNorms and
    residuals on the real (unpadded) tokens of the batch only, gathered by the attention bias; attention
    alone runs on the padded [batch, seq] layout. Padded positions of the block's output are then 0. Real
    tokens' outputs are those of the padded computation (padding never reaches them), and a batch pays
    its real tokens in its matmuls, not batch x seq. The served graph traces the model in it
    (`serving.inference_function`); training and Keras predict do not (the row count is data-dependent:
    no XLA). Blocks with bfloat16 or int8 matmuls keep the padded rows: there the gathers and scatters
    cost as much as the padding they save (docs/serving.md, "Real rows").
    `gather=False` (a lone row's run: at most 7 padded positions, fewer than the gathers and scatters
    cost) keeps the float32 blocks on the padded rows and zeroes their output at padded positions, so a
    text answers the same alone as in a batch."""
    return setting(_SERVED_ROWS, "gather" if gather else "padded")


def served_layout():
    """The `real_rows` layout traced now: "gather", "padded", or None outside `real_rows`."""
    return _SERVED_ROWS.get()


def attention_bias(input_mask, dtype="float32"):
    """[batch, seq] 0/1 mask -> [batch, 1, 1, seq] additive bias: 0 where attended, -1e9 where padded."""
    mask = ops.cast(input_mask, dtype)
    return ops.expand_dims(ops.expand_dims((1.0 - mask) * -1e9, 1), 1)


# A train step's attention, differentiated with its gradients written out. TF's gradient of a batched matmul
# whose batch dimensions are unknown when traced (batch and heads here) and of a broadcasting add carries
# their shape arithmetic and reductions (~18 and ~7 ops each); these are the products and softmax alone,
# traced, optimised and (under XLA) compiled before a run's first step. The forward ops are those of
# inference (tests/layers/test_layers.py compares both).
def _product(a, b, transpose_b=False):
    """Batched `a @ b` (`a @ b^T` with `transpose_b`) of operands with the same batch dimensions."""

    @tf.custom_gradient
    def product(a, b):
        def gradient(upstream):
            if transpose_b:  # y = a b^T: da = dy b, db = dy^T a
                return (tf.linalg.matmul(upstream, b),
                        tf.linalg.matmul(upstream, a, transpose_a=True))
            return (tf.linalg.matmul(upstream, b, transpose_b=True),  # y = a b: da = dy b^T, db = a^T dy
                    tf.linalg.matmul(a, upstream, transpose_a=True))

        return tf.linalg.matmul(a, b, transpose_b=transpose_b), gradient

    return product(a, b)


def _plain_product(a, b, transpose_b=False):
    """`_product` differentiated by TF: inference's ops."""
    return ops.matmul(a, ops.swapaxes(b, -1, -2) if transpose_b else b)


def _sum(a, b):
    """a + b for operands of one shape, as AddN: its gradient is the upstream one as it is, where an AddV2's,
    traced with unknown shapes, carries a broadcast's shape arithmetic and reductions (7 ops)."""
    return tf.add_n([a, b])


def _softmax_of_scores(scores, bias):
    """softmax(scores + bias) over the last axis, differentiated in `scores` only (the bias is the input
    mask's): d scores = p * (dp - sum(dp * p))."""

    @tf.custom_gradient
    def softmax(scores):
        probs = tf.nn.softmax(scores + bias, axis=-1)

        def gradient(upstream):
            return probs * (upstream - tf.reduce_sum(upstream * probs, axis=-1, keepdims=True))

        return probs, gradient

    return softmax(scores)


def _plain_softmax(scores, bias):
    """`_softmax_of_scores` differentiated by TF: inference's ops."""
    return ops.softmax(scores + bias, axis=-1)


def column_sums(rows):
    """Sums over the rows of a 2-D low-precision tensor, as the product of a row of ones with it: oneDNN's
    matmul accumulates in float32. TF's bf16 BiasAddGrad on CPU accumulates in bf16 (22% relative error
    over 4096 rows of a random gradient, against 0.14% here, the rounding of the result) and is slower."""
    return tf.linalg.matmul(tf.ones((1, tf.shape(rows)[0]), rows.dtype), rows)[0]


@tf.custom_gradient
def _bias_added(rows, bias):
    """BiasAdd of a 2-D low-precision tensor, the bias's gradient from `column_sums`."""

    def gradient(upstream):
        return upstream, column_sums(upstream)

    return tf.nn.bias_add(rows, bias), gradient


def _plain_dense(layer, rows):
    """`dense_in_training` differentiated by TF: inference's call."""
    return layer(rows)


def dense_in_training(layer, rows):
    """`layer(rows)` for a Dense on 2-D `rows`, as a training step traces it: in a low-precision policy, the
    same product, bias and activation with the bias's gradient from `column_sums`, and the activation's
    training form (`training_gradients`). Float32, quantized and bias-free layers are called as they are."""
    with training_gradients():
        if layer.compute_dtype == "float32" or layer.bias is None or layer.quantization_mode is not None:
            return layer(rows)
        outputs = _bias_added(tf.linalg.matmul(rows, ops.cast(layer.kernel, rows.dtype)),
                              ops.cast(layer.bias, rows.dtype))
        return layer.activation(outputs)  # Keras' Dense holds `linear` where it was given none


@keras.saving.register_keras_serializable(package="keras_bert")
class TransformerBlock(keras.layers.Layer):
    """Self-attention -> add & LayerNorm -> feed-forward -> add & LayerNorm (Vaswani et al., post-LN).

    Call with `(hidden_states, bias)`: hidden_states [batch, seq, hidden] and the additive attention bias
    from `attention_bias` ([batch, 1, 1, seq], float32). Returns [batch, seq, hidden].

    Query, key and value come from one [hidden, 3 * hidden] kernel (laid out q | k | v), so the three
    projections are a single matmul; checkpoint converters split or concatenate it.
    Softmax and LayerNorm run in float32 under mixed precision. Dropout masks come from `HashDropout`
    (a cheap integer hash instead of Philox; same distribution). In training the attention products, the
    masked softmax, the residual sums, the LayerNorms and dropout carry their gradients written out (the
    same values as TF's autodiff, and over a quarter fewer ops for a run to trace and optimise before its
    first step); inference traces the plain ops.
    """

    def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu",
                 hidden_dropout=0.1, attention_dropout=0.1, initializer_range=0.02, layer_norm_eps=1e-12,
                 **kwargs):
        super().__init__(**kwargs)
        if hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act={hidden_act!r}; expected one of {sorted(ACTIVATIONS)}")
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.head_size = hidden_size // num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout = hidden_dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps

        def dense(units, name, activation=None):
            return keras.layers.Dense(units, activation=activation,
                                      kernel_initializer=truncated_normal(initializer_range),
                                      dtype=self.dtype_policy, name=name)

        self.qkv = dense(3 * hidden_size, "qkv")
        self.attention_output = dense(hidden_size, "attention_output")
        self.attention_layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="attention_layer_norm")
        self.intermediate = dense(intermediate_size, "intermediate", activation=ACTIVATIONS[hidden_act])
        self.output_dense = dense(hidden_size, "output")
        self.output_layer_norm = LayerNorm(
            epsilon=layer_norm_eps, dtype="float32", name="output_layer_norm")
        self.attention_probs_dropout = HashDropout(attention_dropout, dtype=self.dtype_policy)
        self.attention_output_dropout = HashDropout(hidden_dropout, dtype=self.dtype_policy)
        self.output_dropout = HashDropout(hidden_dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        # Every Dense sees [batch * seq, features]: a 2-D MatMul + BiasAdd (+ GELU, + the residual) is what
        # grappler's oneDNN remapper fuses into one op (a 3-D Dense is a Tensordot: Reshape, MatMul, Reshape).
        hidden_shape = (None, self.hidden_size)
        self.qkv.build(hidden_shape)
        self.attention_output.build(hidden_shape)
        self.attention_layer_norm.build(hidden_shape)
        self.intermediate.build(hidden_shape)
        self.output_dense.build((None, self.intermediate_size))
        self.output_layer_norm.build(hidden_shape)
        self.built = True

    def call(self, hidden_states, bias, training=None):
        batch, seq = ops.shape(hidden_states)[0], ops.shape(hidden_states)[1]
        rows = ops.reshape(hidden_states, (-1, self.hidden_size))
        # Serving (`real_rows`): the real positions of the flattened batch (bias 0 there, -1e9 at padding).
        # Every block traces the same ops on the same bias; the loaded graph runs them once (grappler's
        # dedup: one Where per call in the served trace).
        layout = self._served_float32()
        is_real = ops.reshape(bias, (-1,)) > -1.0 if layout else None
        real = ops.where(is_real)[0] if layout == "gather" else None
        if real is not None:
            rows = ops.take(rows, real, axis=0)
        # Training differentiates the products, the softmax, the residual sums and the Dense layers' biases
        # and activation with their gradients written out; inference traces the plain ops (the same
        # forward values).
        product, softmax, add, dense = (
            (_product, _softmax_of_scores, _sum, dense_in_training) if training
            else (_plain_product, _plain_softmax, ops.add, _plain_dense))
        qkv = dense(self.qkv, rows)
        if real is not None:
            qkv = ops.scatter(real[:, None], qkv, (batch * seq, 3 * self.hidden_size))
        # [rows, 3 * hidden] -> [3, batch, heads, seq, head_size]: one transpose for query, key and value.
        qkv = ops.reshape(qkv, (batch, seq, 3, self.num_attention_heads, self.head_size))
        query, key, value = ops.unstack(ops.transpose(qkv, (2, 0, 3, 1, 4)), 3, axis=0)
        # q @ k^T (the transpose folds into the batched matmul), scaled: [batch, heads, seq, seq].
        scores = ops.multiply(product(query, key, transpose_b=True),
                              ops.cast(1.0 / math.sqrt(self.head_size), query.dtype))
        probs = softmax(ops.cast(scores, "float32"), ops.cast(bias, "float32"))
        probs = self.attention_probs_dropout(ops.cast(probs, self.compute_dtype), training=training)
        context = ops.transpose(product(probs, value), (0, 2, 1, 3))  # [batch, seq, heads, head_size]
        context = ops.reshape(context, (-1, self.hidden_size))
        if real is not None:
            context = ops.take(context, real, axis=0)

        attended = self.attention_output_dropout(dense(self.attention_output, context), training=training)
        attended = self.attention_layer_norm(add(ops.cast(rows, "float32"), ops.cast(attended, "float32")),
                                             training=training)
        attended_c = ops.cast(attended, self.compute_dtype)

        ffn = self.output_dropout(dense(self.output_dense, dense(self.intermediate, attended_c)),
                                  training=training)
        out = self.output_layer_norm(add(attended, ops.cast(ffn, "float32")), training=training)
        if real is not None:
            out = ops.scatter(real[:, None], out, (batch * seq, self.hidden_size))
        elif layout == "padded":
            out = out * ops.cast(is_real[:, None], out.dtype)
        return ops.cast(ops.reshape(out, (batch, seq, self.hidden_size)), self.compute_dtype)

    def compute_output_shape(self, hidden_states_shape, bias_shape):
        # Stated, so that building a functional model (from_pretrained, load_model) does not trace the block
        # to learn it: 6 MiniLM blocks were 0.2 s of a load.
        del bias_shape
        return tuple(hidden_states_shape)

    def _served_float32(self):
        """The `real_rows` layout of this float32 block ("gather" or "padded"); None outside the served
        graph and for blocks with bfloat16 or int8 matmuls (padded rows, left as computed)."""
        dense = (self.qkv, self.attention_output, self.intermediate, self.output_dense)
        if all(layer.compute_dtype == "float32" and getattr(layer, "quantization_mode", None) is None
               for layer in dense):
            return _SERVED_ROWS.get()
        return None

    def _on_real_rows(self):
        """Whether this call runs on real rows (`real_rows`): in that context, with float32 matmuls."""
        return self._served_float32() == "gather"

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout=self.hidden_dropout,
            attention_dropout=self.attention_dropout,
            initializer_range=self.initializer_range,
            layer_norm_eps=self.layer_norm_eps,
        )
        return config


def gathers_real_rows(model):
    """Whether any `TransformerBlock` of `model` runs on real rows when served (float32 matmuls); where none
    does, `real_rows(gather=False)` traces the same graph as `real_rows()`."""
    with real_rows():
        return any(isinstance(layer, TransformerBlock) and layer._on_real_rows()
                   for layer in compat.sublayers(model))
