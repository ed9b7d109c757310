"""BertClassifier: sentence(-pair) classification or regression on the pooled output."""

import keras
import tensorflow as tf

from keras_bert.layers.dropout import HashDropout
from keras_bert.models.assembly import register
from keras_bert.models.buckets import model_outputs
from keras_bert.models.encoder import encoder_inputs
from keras_bert.models.serving import class_outputs, with_label_names
from keras_bert.models.task_base import EncoderTaskModel, dense_head
from keras_bert.models.text_task import resolve_num_classes
from keras_bert.tasks.classification.spec import Options
from keras_bert.text.windows import piece_windows


@register
@keras.saving.register_keras_serializable(package="keras_bert")
class BertClassifier(EncoderTaskModel):
    """Dropout + dense on `pooled_output`, as the paper's GLUE models.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of classes; 1 for regression (STS-B). Default: len(labels).
        labels: optional class names (list of str; label id i is labels[i]): `fit` then takes them as
            targets, and an export serves the predicted `label`.
        dropout: dropout rate before the output layer (default: the encoder's hidden dropout).
        preprocessor: optional `keras_bert.text.BertPreprocessor`: fit/evaluate/predict then take raw
            text (a sequence of str, or a tuple (texts_a, texts_b) of sentence pairs).
        **kwargs: `keras.Model`'s (e.g. `name`).

    Raises:
        ValueError: neither `num_classes` nor `labels`, or they disagree (num_classes=2 with three
            labels); fewer than two labels; labels that are not distinct.

    Input: the encoder input dict (or raw text, with a preprocessor). Output: float32 logits
    [batch, num_classes] (for regression, the predicted value [batch, 1]). `compile()` with no arguments
    uses sparse categorical cross-entropy on logits + accuracy (regression: mean squared error).

    Examples:

        classifier = BertClassifier.from_pretrained("path/to/hf_bert_dir", labels=["neg", "pos"])
        classifier.compile()   # AdamW, warmup + linear decay over the next fit, loss + accuracy
        classifier.fit(["a good day", "a bad day"], ["pos", "neg"], epochs=3)
        logits = classifier.predict(["what a good day!"])   # [1, 2]
        classifier.save("classifier.keras")                 # vocab and labels inside
    """

    task_kind = "classifier"
    options_class = Options
    stated_head_args = ("num_classes", "labels", "dropout")

    def __init__(self, encoder, num_classes=None, dropout=None, labels=None, preprocessor=None, **kwargs):
        num_classes = resolve_num_classes("BertClassifier", num_classes, labels)
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
        self._init_text(preprocessor, labels)

    def _task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}

    # ----------------------------------------------------------------------------------- serving
    def named_outputs(self, inputs):
        """Regression: `logits` [b, 1]; classes: logits, probabilities, label_id (+ `label` with labels)."""
        logits = self.served_call(inputs)
        if self.num_classes == 1:
            return {"logits": logits}
        return with_label_names(self.labels, class_outputs(logits))

    def check_serving(self, form, preprocessor, options):
        if options.long_text == "windows" and form == "text":
            options.window_stride(preprocessor.seq_length)
        elif options.long_text != "truncate":
            raise ValueError(f"long_text={options.long_text!r} applies to a classifier served on single "
                             f"texts (signature 'text'); this is a {type(self).__name__} with signature "
                             f"{form!r}")

    def whole_text_outputs(self, preprocessor, texts, options):
        """With long_text="windows" and single texts: the outputs averaged over strided windows."""
        if options.long_text != "windows" or "text_b" in texts:
            return None
        return self.windowed_outputs(preprocessor, texts["text"],
                                     options.window_stride(preprocessor.seq_length))

    def windowed_outputs(self, preprocessor, text, stride):
        """Outputs for `text` tf.string [b] of any length: the logits of every window of
        `preprocessor.seq_length - 2` pieces, `stride` apart, averaged per text (float32 [b, C])."""
        windows = piece_windows(preprocessor.tokenizer(text), preprocessor.seq_length - 2, stride)
        logits = tf.cast(model_outputs(self, preprocessor.packer(windows.pieces), preprocessor), tf.float32)
        mean = tf.math.unsorted_segment_mean(logits, windows.row, tf.size(text, out_type=tf.int64))
        return with_label_names(self.labels, class_outputs(mean))

    def task_loss(self):
        """Mean squared error for regression (one output), else sparse cross-entropy on logits."""
        if self.num_classes == 1:
            return keras.losses.MeanSquaredError(), None
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True), None

    def _default_metrics(self):
        return None if self.num_classes == 1 else [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
