"""Finished answers out of the serving graph, besides the logits: entities, labels of long texts, the
chosen ending, sentence embeddings. `saved_model.build_archive` asks this module for them.

    options = AnswerOptions(long_text="windows", stride=64)        # classifier: logits averaged over windows
    options = AnswerOptions(pooling="mean", normalize=True)        # encoder: + sentence_embedding [b, hidden]

What each model kind serves on top of `saved_model.serving_outputs`:
    token classifier with `labels`, single raw `text`: the entities of `entities.py` (any length);
    classifier with long_text="windows", raw `text`: logits / probabilities / label_id averaged over strided
        windows (`text.windows`) of the whole text, and `label` (tf.string name) when the model has labels;
    multiple choice: `choice` int32 [b], the index of the most probable ending;
    encoder with `pooling`: `sentence_embedding` float32 [b, hidden], the [CLS] vector ("cls") or the mean
        over the real tokens of sequence_output ("mean"), L2-normalized with `normalize`.
"""

import dataclasses

import tensorflow as tf

from keras_bert.export import entities
from keras_bert.export.errors import ExportError
from keras_bert.export.labels import class_outputs, with_label_names
from keras_bert.text.windows import default_stride, piece_windows

LONG_TEXT = ("truncate", "windows")
POOLING = ("cls", "mean")
# torch.nn.functional.normalize's floor on the norm, as sentence-transformers' Normalize module uses it.
NORMALIZE_EPSILON = 1e-12


@dataclasses.dataclass(frozen=True)
class AnswerOptions:
    """How the export answers, beyond the logits.

    Attributes:
        long_text: classifier texts over the sequence length: "truncate" (cut, as in training) or "windows".
        stride: pieces between window starts (windowed classifier, token classifier); default: half the
            window (`seq_length - 2`).
        pooling: encoder `sentence_embedding`: None (not served), "cls" or "mean".
        normalize: L2-normalize the sentence embedding.

    Raises ExportError (a ValueError) naming the option that is not allowed.
    """

    long_text: str = "truncate"
    stride: int | None = None
    pooling: str | None = None
    normalize: bool = False

    def __post_init__(self):
        if self.long_text not in LONG_TEXT:
            raise ExportError(f"long_text={self.long_text!r}; expected one of {LONG_TEXT}")
        if self.pooling not in (None, *POOLING):
            raise ExportError(f"pooling={self.pooling!r}; expected None or one of {POOLING}")
        if self.normalize and self.pooling is None:
            raise ExportError("normalize=True needs a pooling ('cls' or 'mean') to normalize")

    def window_stride(self, seq_length):
        """The stride in pieces for windows of `seq_length - 2` pieces; ExportError if it does not fit."""
        window = seq_length - 2
        stride = self.stride or default_stride(window)
        if not 0 < stride <= window:
            raise ExportError(f"stride={stride}; expected 0 < stride <= {window} (the sequence length "
                             f"{seq_length} less [CLS] and [SEP])")
        return stride


def check_options(model, kind, signature, preprocessor, options):
    """Raises ExportError when `options` do not apply to this model kind, signature and preprocessor."""
    if options.long_text == "windows" and (kind != "classifier" or signature != "text"):
        raise ExportError(f"long_text='windows' applies to a classifier served on single texts (signature "
                         f"'text'); this is a {type(model).__name__} with signature {signature!r}")
    if signature == "text" and (options.long_text == "windows" or serves_entities(model, kind)):
        options.window_stride(preprocessor.seq_length)
    if options.pooling is not None and kind != "encoder":
        raise ExportError(f"pooling={options.pooling!r} applies to an encoder; this is a {type(model).__name__}")


def serves_entities(model, kind):
    """Whether the raw-text endpoint of `model` serves entities (a token classifier that names its tags)."""
    return kind == "token_classifier" and getattr(model, "labels", None) is not None


def whole_text_outputs(model, kind, preprocessor, texts, options):
    """The raw-text outputs that need the whole text (entities, windowed classification), or None when the
    model kind packs a text into one sequence as usual."""
    if serves_entities(model, kind) and "text_b" not in texts:
        return entities.entity_outputs(model, preprocessor, texts["text"],
                                       options.window_stride(preprocessor.seq_length))
    if kind == "classifier" and options.long_text == "windows":
        return windowed_classes(model, preprocessor, texts["text"], options.window_stride(preprocessor.seq_length))
    return None


def with_answers(model, kind, inputs, outputs, options):
    """`outputs` (serving_outputs of `inputs`) plus `choice` (multiple choice) or `sentence_embedding`
    (encoder with pooling)."""
    outputs = dict(outputs)
    if kind == "multiple_choice":
        outputs["choice"] = outputs["label_id"]
    if kind == "encoder" and options.pooling is not None:
        outputs["sentence_embedding"] = sentence_embedding(outputs["sequence_output"], inputs["input_mask"],
                                                           options.pooling, options.normalize)
    return outputs


def windowed_classes(model, preprocessor, text, stride):
    """Classifier outputs for `text` tf.string [b] of any length: the logits of every window of
    `preprocessor.seq_length - 2` pieces, `stride` apart, averaged per text (float32 [b, C])."""
    windows = piece_windows(preprocessor.tokenizer(text), preprocessor.seq_length - 2, stride)
    logits = tf.cast(model(preprocessor.packer(windows.pieces), training=False), tf.float32)
    mean = tf.math.unsorted_segment_mean(logits, windows.row, tf.size(text, out_type=tf.int64))
    return with_label_names(model, class_outputs(mean))


def sentence_embedding(sequence_output, input_mask, pooling, normalize):
    """float32 [b, hidden] from sequence_output [b, s, hidden] and input_mask [b, s]: the first ([CLS])
    vector, or the mean over positions where input_mask is 1; divided by its L2 norm with `normalize`."""
    sequence_output = tf.cast(sequence_output, tf.float32)
    if pooling == "cls":
        pooled = sequence_output[:, 0]
    else:
        mask = tf.cast(input_mask, tf.float32)[..., None]
        pooled = tf.reduce_sum(sequence_output * mask, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)
    if normalize:
        pooled /= tf.maximum(tf.norm(pooled, axis=-1, keepdims=True), NORMALIZE_EPSILON)
    return pooled
