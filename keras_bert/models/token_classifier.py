"""BertTokenClassifier: a label per token (NER)."""

import keras

from keras_bert.layers.dropout import HashDropout
from keras_bert.models.encoder import encoder_inputs
from keras_bert.models.task_base import EncoderTaskModel, dense_head


@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(EncoderTaskModel):
    """Dropout + dense on every position of `sequence_output`.

    Input: the encoder input dict. Output: float32 logits [batch, seq, num_classes]. Train with
    per-token sample weights that are 1 only on the positions that carry a label (e.g. each word's first
    piece).
    """

    task_kind = "token_classifier"

    def __init__(self, encoder, num_classes, dropout=None, **kwargs):
        config = encoder.config
        dropout = config.hidden_dropout_prob if dropout is None else dropout
        # === Layers ===
        dropout_layer = HashDropout(dropout, name="token_dropout")
        head = dense_head(num_classes, config.initializer_range, "token_classifier", dtype="float32")
        # === Functional model ===
        inputs = encoder_inputs()
        outputs = head(dropout_layer(encoder(inputs)["sequence_output"]))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.num_classes = num_classes
        self.dropout = dropout

    def _task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}
