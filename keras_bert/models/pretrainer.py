"""BertPretrainer: masked-LM + next-sentence prediction on a BertEncoder, with its own losses."""

import keras
import tensorflow as tf
from keras import ops

from keras_bert.execution import ChoosesExecution
from keras_bert.layers.heads import MaskedLMHead
from keras_bert.layers.initializers import truncated_normal
from keras_bert.models.encoder import INPUT_NAMES, encoder_inputs

# Feature names of a pre-training example (the original TFRecord's, with TF Hub names for the inputs).
PRETRAINING_FEATURES = INPUT_NAMES + (
    "masked_lm_positions", "masked_lm_ids", "masked_lm_weights", "next_sentence_labels")


def _global_sum(value):
    """Sum of `value` over all replicas (identity outside a multi-replica strategy)."""
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        return context.all_reduce("sum", value)
    return value


@keras.saving.register_keras_serializable(package="keras_bert")
class BertPretrainer(ChoosesExecution, keras.Model):
    """BERT's pre-training model: the encoder, a masked-LM head tied to the word embeddings, and a
    next-sentence head on the pooled output.

    Args:
        encoder: a `BertEncoder`.

    Inputs: a dict with the encoder inputs plus `masked_lm_positions` (int32 [batch, max_predictions]).
    Outputs: dict `masked_lm_logits` (float32 [batch, max_predictions, vocab]) and `next_sentence_logits`
    (float32 [batch, 2]; index 0 = "B follows A", as the original).

    `fit`/`evaluate` take datasets whose elements are ONE dict holding also `masked_lm_ids`,
    `masked_lm_weights` and (optionally) `next_sentence_labels`; the model computes the original's losses
    (weighted mean MLM cross-entropy over real predictions + mean NSP cross-entropy) and reports
    `masked_lm_accuracy`, `masked_lm_loss`, `next_sentence_accuracy`, `next_sentence_loss`.
    """

    def __init__(self, encoder, **kwargs):
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

    def call(self, inputs, training=None):
        # Datasets carry the labels in the same dict; the functional graph takes only its inputs.
        return super().call({name: inputs[name] for name in self._input_names}, training=training)

    @property
    def _input_names(self):
        return INPUT_NAMES + ("masked_lm_positions",)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        del y, sample_weight  # labels travel in x, under the original feature names
        logits = y_pred["masked_lm_logits"]
        ids = ops.cast(x["masked_lm_ids"], "int32")
        weights = ops.cast(x["masked_lm_weights"], "float32")
        per_token = keras.losses.sparse_categorical_crossentropy(ids, logits, from_logits=True)
        # Normalised by the masked-token count of the GLOBAL batch, so replicas with more masks weigh more
        # and a multi-replica step equals the single-device one.
        local_weight = ops.sum(weights)
        global_weight = _global_sum(local_weight)
        mlm_loss = ops.sum(per_token * weights) / (global_weight + 1e-5)
        # Correct where the label's logit is the row maximum: a plain max-reduce, where argmax's (value, index)
        # reduce over the vocab is not vectorized by XLA on CPU (~10% of a mini step). Differs only on exact ties.
        label_logit = ops.take_along_axis(logits, ops.expand_dims(ids, -1), axis=-1)[..., 0]
        correct = ops.cast(label_logit >= ops.max(logits, axis=-1), "float32")
        num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
        self.masked_lm_loss_tracker.update_state(mlm_loss * num_replicas)
        self.masked_lm_accuracy.update_state(
            ops.sum(correct * weights) / ops.maximum(local_weight, 1e-5), sample_weight=local_weight)
        loss = mlm_loss
        if "next_sentence_labels" in x:
            labels = ops.reshape(ops.cast(x["next_sentence_labels"], "int32"), (-1,))
            nsp_logits = y_pred["next_sentence_logits"]
            nsp_loss = ops.mean(
                keras.losses.sparse_categorical_crossentropy(labels, nsp_logits, from_logits=True))
            self.next_sentence_loss_tracker.update_state(nsp_loss)
            self.next_sentence_accuracy.update_state(labels, nsp_logits)
            loss = loss + nsp_loss / num_replicas
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        trackers = [self.masked_lm_accuracy, self.masked_lm_loss_tracker, self.next_sentence_accuracy,
                    self.next_sentence_loss_tracker]
        # The total-loss tracker exists once the model is compiled.
        return ([self._loss_tracker] if self._loss_tracker is not None else []) + trackers

    def get_config(self):
        return {"encoder": keras.saving.serialize_keras_object(self.encoder), "name": self.name,
                "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)

    @classmethod
    def from_pretrained(cls, path, **kwargs):
        """Loads encoder and heads from a Google TF1 checkpoint, a Hugging Face directory or our save.
        Heads missing from the checkpoint are initialised (and reported in one line)."""
        from keras_bert.checkpoints import load_pretrainer

        return load_pretrainer(path, **kwargs)

