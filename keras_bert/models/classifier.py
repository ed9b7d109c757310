"""BertClassifier: sentence(-pair) classification or regression on the pooled output."""

import keras

from keras_bert.layers.dropout import HashDropout
from keras_bert.models.encoder import encoder_inputs
from keras_bert.models.task_base import EncoderTaskModel, dense_head


@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(EncoderTaskModel):
    """Dropout + dense on `pooled_output`, as the paper's GLUE models.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of classes; 1 for regression (STS-B).
        dropout: dropout rate before the output layer (default: the encoder's hidden dropout).

    Input: the encoder input dict. Output: float32 logits [batch, num_classes] (for regression, the
    predicted value [batch, 1]). Compile with e.g. SparseCategoricalCrossentropy(from_logits=True).
    """

    task_kind = "classifier"

    def __init__(self, encoder, num_classes, dropout=None, **kwargs):
        config = encoder.config
        dropout = config.hidden_dropout_prob if dropout is None else dropout
        # === Layers ===
        dropout_layer = HashDropout(dropout, name="classifier_dropout")
        head = dense_head(num_classes, config.initializer_range, "classifier", dtype="float32")
        # === Functional model ===
        inputs = encoder_inputs()
        outputs = head(dropout_layer(encoder(inputs)["pooled_output"]))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.num_classes = num_classes
        self.dropout = dropout

    def _task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}
