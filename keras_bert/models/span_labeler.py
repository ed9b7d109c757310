"""BertSpanLabeler: start/end logits over the sequence, for SQuAD-style extractive QA."""

import keras
from keras import ops

from keras_bert.models.encoder import encoder_inputs
from keras_bert.models.task_base import EncoderTaskModel, dense_head


@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(EncoderTaskModel):
    """One dense layer mapping each token to (start, end) scores, as the paper's SQuAD model.

    Input: the encoder input dict. Output: dict `start_logits`, `end_logits`, float32 [batch, seq].
    Padding positions get a large negative logit so they are never predicted. With a `preprocessor`,
    predict also takes raw text: a tuple (questions [batch], contexts [batch]), packed as one pair each.

    Examples:

        span_labeler = BertSpanLabeler.from_pretrained("path/to/hf_bert_dir", seq_length=384)
        logits = span_labeler.predict((["What sat?"], ["The cat sat on the mat."]))
        logits["start_logits"], logits["end_logits"]   # float32 [1, 384] each
        from keras_bert.export import export_saved_model
        export_saved_model(span_labeler, "/srv/models/squad")   # serves answer texts
    """

    task_kind = "span_labeler"

    def __init__(self, encoder, preprocessor=None, **kwargs):
        config = encoder.config
        # === Layers ===
        head = dense_head(2, config.initializer_range, "span_head", dtype="float32")
        split = _SplitSpanLogits(dtype="float32", name="span_logits")  # float32 logits under mixed precision too
        # === Functional model ===
        inputs = encoder_inputs()
        logits = head(encoder(inputs)["sequence_output"])
        start, end = split(logits, inputs["input_mask"])
        super().__init__(inputs=inputs, outputs={"start_logits": start, "end_logits": end}, **kwargs)
        # === Config ===
        self.encoder = encoder
        self._init_text(preprocessor)

    def _task_config(self):
        return {}

    def _default_loss(self):
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": loss, "end_logits": loss}


@keras.saving.register_keras_serializable(package="keras_bert")
class _SplitSpanLogits(keras.layers.Layer):
    """[batch, seq, 2] logits + [batch, seq] mask -> masked start and end logits, each [batch, seq]."""

    def call(self, logits, input_mask):
        penalty = (1.0 - ops.cast(input_mask, "float32")) * -1e4
        return logits[..., 0] + penalty, logits[..., 1] + penalty
