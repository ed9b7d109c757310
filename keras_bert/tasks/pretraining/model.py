"""BertPretrainer: masked-LM + next-sentence prediction on a BertEncoder, with its own losses."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert import compat
from keras_bert.layers.heads import MaskedLMHead
from keras_bert.layers.initializers import truncated_normal
from keras_bert.models.assembly import assemble, register
from keras_bert.models.encoder import INPUT_NAMES, encoder_inputs
from keras_bert.models.pretrained import resolve_pretrained
from keras_bert.models.task_base import EncoderTaskModel

# Feature names of a pre-training example (the original TFRecord's, with TF Hub names for the inputs).
PRETRAINING_FEATURES = INPUT_NAMES + (
    "masked_lm_positions", "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def _global_sum(value):
    """Sum of `value` over all replicas (identity outside a multi-replica strategy)."""
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        return context.all_reduce("sum", value)
    return value


@tf.custom_gradient
def _cross_entropy_and_top(logits, ids):
    """Per-row softmax cross-entropy of float32 `logits` [..., vocab] against int `ids` [...], and 1.0 where
    the label's logit is the row's maximum (0.0 elsewhere; ties count as correct). The gradient is
    `softmax - one_hot(ids)`, recomputed from the logits and each row's log-sum-exp: the softmax is never
    kept. Written with LogSoftmax and Max (no Sum op), so a fused step compiles it whole (Sum runs on TF's
    kernels there, `execution.REDUCTION_OPS`)."""
    batch_dims = len(ids.shape)
    label_logit = tf.gather(logits, ids, batch_dims=batch_dims)
    loss = -tf.gather(tf.nn.log_softmax(logits), ids, batch_dims=batch_dims)
    log_sum = label_logit + loss
    top = tf.cast(label_logit >= tf.reduce_max(logits, axis=-1), logits.dtype)

    def gradient(d_loss, d_top):
        del d_top  # an indicator: no gradient
        probabilities = tf.exp(logits - log_sum[..., None])
        one_hot = tf.one_hot(ids, tf.shape(logits)[-1], dtype=logits.dtype)
        return (probabilities - one_hot) * d_loss[..., None], None

    return (loss, top), gradient


@register
@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(EncoderTaskModel):
    """BERT's pre-training model: the encoder, a masked-LM head tied to the word embeddings, and a
    next-sentence head on the pooled output.

    Args:
        encoder: a `BertEncoder`.
        preprocessor: optional `keras_bert.text.BertPreprocessor`, saved with the model (the vocab and
            casing it pre-trains on); `fit` takes the masked batches either way.
        **kwargs: `keras.Model`'s (e.g. `name`).

    Inputs: a dict with the encoder inputs plus `masked_lm_positions` (int32 [batch, max_predictions]).
    Outputs: dict `masked_lm_logits` (float32 [batch, max_predictions, vocab]) and `next_sentence_logits`
    (float32 [batch, 2]; index 0 = "B follows A", as the original).

    `fit`/`evaluate` take datasets whose elements are ONE dict holding also `masked_lm_ids`,
    `masked_lm_weights` and (optionally) `next_sentence_labels`; the model computes the original's losses
    (weighted mean MLM cross-entropy over real predictions + mean NSP cross-entropy) and reports
    `masked_lm_accuracy`, `masked_lm_loss`, `next_sentence_accuracy`, `next_sentence_loss`.

    Examples:

        pretrainer = BertPretrainer(BertEncoder(BertConfig.from_preset("tiny", vocab_size=30522)))
        pretrainer.compile(optimizer=keras_bert.training.create_optimizer(1e-4, num_train_steps=10000))
        # batches: preprocessor + MaskedLMMasker output plus next_sentence_labels (or recipes.pretrain)
        pretrainer.fit(batches, epochs=1)
        pretrainer.encoder.save("encoder.keras")
    """

    task_kind = "pretrainer"

    def __init__(self, encoder, preprocessor=None, **kwargs):
        config = encoder.config
        # === Layers ===
        masked_lm = MaskedLMHead(encoder.embeddings.word_embeddings, hidden_act=config.hidden_act,
                                 initializer_range=config.initializer_range,
                                 layer_norm_eps=config.layer_norm_eps, dtype=encoder.dtype_policy,
                                 name="masked_lm")
        next_sentence = keras.layers.Dense(2, kernel_initializer=truncated_normal(config.initializer_range),
                                           dtype="float32", name="next_sentence")

        # === Functional model ===
        inputs = dict(encoder_inputs())
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        encoded = encoder({name: inputs[name] for name in INPUT_NAMES})
        outputs = {
            "masked_lm_logits": masked_lm(encoded["sequence_output"], inputs["masked_lm_positions"]),
            "next_sentence_logits": next_sentence(encoded["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.encoder = encoder
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
        self.masked_lm_loss_tracker = keras.metrics.Mean(name="masked_lm_loss")
        self.masked_lm_accuracy = keras.metrics.Mean(name="masked_lm_accuracy")
        self.next_sentence_loss_tracker = keras.metrics.Mean(name="next_sentence_loss")
        self.next_sentence_accuracy = keras.metrics.SparseCategoricalAccuracy(name="next_sentence_accuracy")
        self._init_text(preprocessor)

    def text_inputs(self, texts, preprocessor=None):
        """Raw text -> inputs with `masked_lm_positions` at every position (predict scores each token)."""
        inputs = dict(super().text_inputs(texts, preprocessor))
        word_ids = inputs["input_word_ids"]
        positions = tf.range(tf.shape(word_ids)[-1], dtype=tf.int32)
        inputs["masked_lm_positions"] = tf.tile(positions[None], [tf.shape(word_ids)[0], 1])
        return inputs

    # ----------------------------------------------------------------------------------- serving
    serving_calibration = False  # it also needs masked_lm_positions

    def token_id_spec(self):
        return {**super().token_id_spec(),
                "masked_lm_positions": tf.TensorSpec([None, None], tf.int32, name="masked_lm_positions")}

    def token_id_warmup(self, length):
        return {**super().token_id_warmup(length), "masked_lm_positions": np.zeros([2, 1], np.int32)}

    def token_id_features(self, seq_length):
        return {**super().token_id_features(seq_length), "masked_lm_positions": tf.io.VarLenFeature(tf.int64)}

    def named_outputs(self, inputs):
        """masked_lm_logits [b, k, vocab], masked_lm_ids int32 [b, k] (argmax), next_sentence_logits [b, 2];
        without `masked_lm_positions` in `inputs`, k = seq: every position."""
        inputs = dict(inputs)
        if "masked_lm_positions" not in inputs:
            word_ids = inputs["input_word_ids"]
            positions = tf.range(tf.shape(word_ids)[1], dtype=tf.int32)
            inputs["masked_lm_positions"] = tf.tile(positions[None], [tf.shape(word_ids)[0], 1])
        out = self.served_call(inputs)
        return {"masked_lm_logits": out["masked_lm_logits"],
                "masked_lm_ids": tf.argmax(out["masked_lm_logits"], axis=-1, output_type=tf.int32),
                "next_sentence_logits": out["next_sentence_logits"]}

    def call(self, inputs, training=None):
        # Datasets carry the labels in the same dict; the functional graph takes only its inputs.
        return super().call({name: inputs[name] for name in self._input_names}, training=training)

    @property
    def _input_names(self):
        return INPUT_NAMES + ("masked_lm_positions",)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        del y, sample_weight  # labels travel in x, under the original feature names
        normalizers = self._loss_normalizers(x, None, None)
        return self._pretraining_loss(x, y_pred, None, ops.shape(x["masked_lm_ids"])[0],
                                      normalizers["masked_lm_weight"])

    def _loss_normalizers(self, x, y, sample_weight):
        # Normalised by the masked-token count of the GLOBAL batch, so replicas with more masks weigh more
        # and a multi-replica (or accumulated) step equals the single-device one.
        return {"masked_lm_weight": _global_sum(ops.sum(ops.cast(x["masked_lm_weights"], "float32")))}

    def _micro_batch_loss(self, x, y, y_pred, sample_weight, row_weight, rows, normalizers):
        return self._pretraining_loss(x, y_pred, row_weight, rows, normalizers["masked_lm_weight"],
                                      parts=self.gradient_accumulation_steps)

    def _pretraining_loss(self, x, y_pred, row_weight, rows, masked_lm_weight, parts=1):
        """MLM + NSP loss of these rows as their part of a step's loss: MLM cross-entropy summed over the
        masked tokens / `masked_lm_weight` (the step's masked-token weight, all replicas); NSP cross-entropy
        summed / `rows` (the step's rows on this replica) / replicas. `row_weight` [rows of x] (None: all 1)
        drops padding rows; `parts` is the number of parts a step's metrics are updated in."""
        logits = y_pred["masked_lm_logits"]
        ids = ops.cast(x["masked_lm_ids"], "int32")
        weights = ops.cast(x["masked_lm_weights"], "float32")
        if row_weight is not None:
            weights = weights * row_weight[:, None]
        per_token, correct = _cross_entropy_and_top(logits, ids)
        local_weight = ops.sum(weights)
        mlm_loss = ops.sum(per_token * weights) / (masked_lm_weight + 1e-5)
        num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
        # A step's part weighs 1/parts in the loss means, so that they record the step's whole loss once.
        self.masked_lm_loss_tracker.update_state(mlm_loss * num_replicas * parts, sample_weight=1.0 / parts)
        self.masked_lm_accuracy.update_state(
            ops.sum(correct * weights) / ops.maximum(local_weight, 1e-5), sample_weight=local_weight)
        loss = mlm_loss
        if "next_sentence_labels" in x:
            labels = ops.reshape(ops.cast(x["next_sentence_labels"], "int32"), (-1,))
            nsp_logits = y_pred["next_sentence_logits"]
            per_example = keras.losses.sparse_categorical_crossentropy(labels, nsp_logits, from_logits=True)
            if row_weight is not None:
                per_example = per_example * row_weight
            nsp_loss = ops.sum(per_example) / ops.cast(rows, "float32")
            self.next_sentence_loss_tracker.update_state(nsp_loss * parts, sample_weight=1.0 / parts)
            self.next_sentence_accuracy.update_state(labels, nsp_logits, sample_weight=row_weight)
            loss = loss + nsp_loss / num_replicas
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        trackers = [self.masked_lm_accuracy, self.masked_lm_loss_tracker, self.next_sentence_accuracy,
                    self.next_sentence_loss_tracker]
        # The total-loss tracker exists once the model is compiled.
        tracker = compat.loss_tracker(self)
        return ([tracker] if tracker is not None else []) + trackers

    def _task_config(self):
        return {}

    @classmethod
    def from_pretrained(cls, path, *, seq_length=None, lower_case=None, vocab_file=None, dtype=None):
        """Loads encoder and heads from a Google TF1 checkpoint, a Hugging Face directory, a KerasHub preset
        or our save (`assemble`: a head the checkpoint lacks, e.g. an encoder-only `BertModel`'s, is
        initialised and reported in one warning line; a head present in part, or any encoder mismatch,
        raises CheckpointError), with a preprocessor as `BertEncoder.from_pretrained` gives one.

        Args:
            path: a Google TF1 checkpoint, a Hugging Face directory (BertForPreTraining, or BertModel:
                fresh heads), a KerasHub preset, our own save (`.keras` or directory) or a hub name.
            seq_length: the preprocessor's packed length (default: the length the checkpoint states,
                else min(128, max_position_embeddings)).
            lower_case: casing when the checkpoint does not state it (default True).
            vocab_file: a vocab.txt instead of the one beside `path`.
            dtype: the Keras dtype policy to build with (default float32).

        Returns:
            A built `BertPretrainer` (the masked-LM head tied to the word embeddings), its `preprocessor`
            set (None without a vocab).

        Raises:
            FileNotFoundError: `path` (or `vocab_file`) does not exist.
            CheckpointError: (a ValueError) an unreadable checkpoint, a missing or misshapen encoder
                variable, a head present in part (each named).
            ValueError: `lower_case` against the casing the checkpoint states; `seq_length` outside
                [3, max_position_embeddings].
        """
        pretrained = resolve_pretrained(path, seq_length=seq_length, lower_case=lower_case,
                                        vocab_file=vocab_file)
        return assemble(pretrained, cls, dtype)


def load_pretrainer(path, dtype=None):
    """`BertPretrainer.from_pretrained(path, dtype=dtype)`: a `BertPretrainer` with encoder and heads from
    `path`.

    Args:
        path: a Google TF1 checkpoint, a Hugging Face directory, a KerasHub preset, our own save or a hub
            name.
        dtype: the Keras dtype policy to build with (default float32).

    Returns:
        A built `BertPretrainer` with the checkpoint's encoder and heads (a head the checkpoint lacks is
        initialised, with a warning).

    Raises:
        FileNotFoundError: `path` does not exist.
        CheckpointError: (a ValueError) an unreadable checkpoint, a missing or misshapen encoder variable,
            a head present in part (each named).
    """
    return BertPretrainer.from_pretrained(path, dtype=dtype)
