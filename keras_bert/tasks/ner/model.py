"""BertTokenClassifier: a label per token (NER)."""

import keras

from keras_bert.layers.dropout import HashDropout
from keras_bert.models.assembly import register
from keras_bert.models.encoder import encoder_inputs
from keras_bert.models.serving import class_outputs
from keras_bert.models.task_base import EncoderTaskModel, dense_head
from keras_bert.models.text_task import resolve_num_classes
from keras_bert.tasks.ner.entities import entity_outputs
from keras_bert.tasks.ner.spec import Options


@register
@keras.saving.register_keras_serializable(package="keras_bert")
class BertTokenClassifier(EncoderTaskModel):
    """Dropout + dense on every position of `sequence_output`.

    Args:
        encoder: a `BertEncoder`.
        num_classes: number of tags (default: len(labels)).
        dropout: dropout rate before the output layer (default: the encoder's hidden dropout).
        labels: optional tag names (list of str, e.g. ["O", "B-PER", "I-PER"]; tag id i is labels[i]).
        preprocessor: optional `keras_bert.text.BertPreprocessor`: fit/evaluate/predict then take raw
            text [batch].
        **kwargs: `keras.Model`'s (e.g. `name`).

    Raises:
        ValueError: neither `num_classes` nor `labels`, or they disagree; fewer than two labels; labels
            that are not distinct.

    Input: the encoder input dict (or, with a `preprocessor`, raw text [batch]). Output: float32 logits
    [batch, seq, num_classes]. Train with per-token sample weights that are 1 only on the positions that
    carry a label (e.g. each word's first piece). `labels` optionally names the classes (tag names, e.g.
    "B-PER"); `num_classes` defaults to len(labels). With labels, served on raw `text` as its entities
    (`keras_bert.tasks.ner.entities`; `word_tags=True` adds every word's tag).

    Examples:

        tagger = BertTokenClassifier.from_pretrained("path/to/hf_bert_dir", labels=["O", "B-PER", "I-PER"])
        logits = tagger.predict(["Ada Lovelace wrote it"])   # float32 [1, seq_length, 3]
        from keras_bert.export import export_saved_model
        export_saved_model(tagger, "/srv/models/ner")   # serves entities with offsets
    """

    task_kind = "token_classifier"
    trains_pooler = False  # tags read sequence_output: no loss reaches the pooler
    options_class = Options
    stated_head_args = ("num_classes", "labels", "dropout")

    def __init__(self, encoder, num_classes=None, dropout=None, labels=None, preprocessor=None, **kwargs):
        num_classes = resolve_num_classes("BertTokenClassifier", num_classes, labels)
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
        self._init_text(preprocessor, labels)

    def _task_config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}

    # ----------------------------------------------------------------------------------- serving
    def named_outputs(self, inputs):
        return class_outputs(self.served_call(inputs))

    def check_serving(self, form, preprocessor, options):
        if form == "text" and self.labels is not None:
            options.window_stride(preprocessor.seq_length)
        elif options.word_tags:
            raise ValueError(f"word_tags=True applies to a token classifier with labels served on 'text'; "
                             f"this is a {type(self).__name__} with signature {form!r}")

    def whole_text_outputs(self, preprocessor, texts, options):
        """With `labels`, single texts of any length: their entities (`keras_bert.tasks.ner.entities`), and
        with `options.word_tags` every word's tag."""
        if self.labels is None or "text_b" in texts:
            return None
        return entity_outputs(self, self.labels, preprocessor, texts["text"],
                              options.window_stride(preprocessor.seq_length), with_words=options.word_tags)

    def distillation_mask(self, inputs):
        """A student imitates the tag distributions of the real tokens."""
        return inputs["input_mask"]

    def task_loss(self):
        """Sparse cross-entropy on logits; train with per-piece sample weights that are 1 only on the
        positions that carry a label (`windows.training_windows`: each word's first piece)."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True), None

    def _default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
