"""BertSpanLabeler: start/end logits over the sequence, for SQuAD-style extractive QA."""

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert.models.assembly import register
from keras_bert.models.encoder import encoder_inputs
from keras_bert.models.served_inputs import checked_inputs
from keras_bert.models.serving import Endpoint
from keras_bert.models.task_base import EncoderTaskModel, dense_head
from keras_bert.tasks.squad.answers import AnswerRules, answer_questions
from keras_bert.tasks.squad.spec import ANSWER_OUTPUTS, NBEST_OUTPUTS, NULL_OUTPUTS, QUESTION_CONTEXT, Options

# Logits are float32 values widened to float64 for the sums: served as float32 without loss.
_FLOAT_OUTPUTS = ("score", "no_answer_score", "nbest_start_logit", "nbest_end_logit", "null_start_logit",
                  "null_end_logit")


@register
@keras.saving.register_keras_serializable(package="keras_bert")
class BertSpanLabeler(EncoderTaskModel):
    """One dense layer mapping each token to (start, end) scores, as the paper's SQuAD model.

    Args:
        encoder: a `BertEncoder`.
        preprocessor: optional `keras_bert.text.BertPreprocessor`: predict then takes raw text, and
            `serve` / the exports answer questions.
        **kwargs: `keras.Model`'s (e.g. `name`).

    Input: the encoder input dict. Output: dict `start_logits`, `end_logits`, float32 [batch, seq].
    Padding positions get a large negative logit so they are never predicted. With a `preprocessor`,
    predict also takes raw text: a tuple (questions [batch], contexts [batch]), packed as one pair each.
    `compile()` with no arguments uses `task_loss()`: the mean of the start and end cross-entropies.

    Served (`serve`, and an export's serving_default) as `question` + `context` tf.string [batch] of any
    length -> the answers of `keras_bert.tasks.squad.answers.answer_questions` (the decoding of
    `run_squad --do_predict`): `answer` (tf.string, context[answer_start:answer_end] in Python str
    indexes; "" when none), `answer_start` / `answer_end` int64, `score` float32 (start + end logit);
    with `answer_rules.version_2_with_negative` also `no_answer_score` and `has_answer` (bool); with
    `nbest=True` also `NBEST_OUTPUTS` (the n-best lists of nbest_predictions.json, `decode_answers`).

    Examples:

        span_labeler = BertSpanLabeler.from_pretrained("path/to/hf_bert_dir", seq_length=384)
        logits = span_labeler.predict((["What sat?"], ["The cat sat on the mat."]))
        logits["start_logits"], logits["end_logits"]   # float32 [1, 384] each
        span_labeler.serve({"question": ["What sat?"], "context": ["The cat sat on the mat."]})["answer"]
        from keras_bert.export import export_saved_model
        export_saved_model(span_labeler, "/srv/models/squad")   # serves the same answers
    """

    task_kind = "span_labeler"
    trains_pooler = False  # spans read sequence_output: no loss reaches the pooler
    options_class = Options

    def __init__(self, encoder, preprocessor=None, **kwargs):
        config = encoder.config
        # === Layers ===
        head = dense_head(2, config.initializer_range, "span_head", dtype="float32")
        # float32 logits under mixed precision too
        split = _SplitSpanLogits(dtype="float32", name="span_logits")
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

    # ----------------------------------------------------------------------------------- serving
    serving_forms = (QUESTION_CONTEXT, "text_pair")
    # Positions past a row's tokens, where length buckets pad outputs back: masked as _SplitSpanLogits masks.
    serving_pad_values = {"start_logits": -1e4, "end_logits": -1e4}

    def named_outputs(self, inputs):
        out = self.served_call(inputs)
        return {"start_logits": out["start_logits"], "end_logits": out["end_logits"]}

    def check_serving(self, form, preprocessor, options):
        if form == QUESTION_CONTEXT:
            (options.answer_rules or AnswerRules()).check(preprocessor.seq_length)
        elif options.nbest:
            raise ValueError(f"nbest=True applies to a span labeler served on 'question_context'; this is a "
                             f"{type(self).__name__} with signature {form!r}")

    def form_endpoint(self, form, preprocessor, options):
        if form != QUESTION_CONTEXT:
            return super().form_endpoint(form, preprocessor, options)
        rules = options.answer_rules or AnswerRules()
        served = (ANSWER_OUTPUTS + (NULL_OUTPUTS if rules.version_2_with_negative else ())
                  + (NBEST_OUTPUTS if options.nbest else ()))
        spec = {name: tf.TensorSpec([None], tf.string, name=name) for name in ("question", "context")}

        def function(inputs):
            inputs = checked_inputs(inputs, spec)
            found = answer_questions(self, preprocessor, inputs["question"], inputs["context"], rules)
            return {name: tf.cast(found[name], tf.float32) if name in _FLOAT_OUTPUTS else found[name]
                    for name in served}

        warmup = {"question": np.array([b"Who warms the model up?", b""], dtype=object),
                  "context": np.array([b"TF Serving warms the model up with this request.", b""],
                                      dtype=object)}
        return Endpoint(function, spec, {name: tf.io.FixedLenFeature([], tf.string) for name in spec}, warmup)

    def task_loss(self):
        """The original run_squad's loss: the mean of the start and end sparse cross-entropies."""
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"start_logits": loss, "end_logits": loss}, {"start_logits": 0.5, "end_logits": 0.5}


@keras.saving.register_keras_serializable(package="keras_bert")
class _SplitSpanLogits(keras.layers.Layer):
    """[batch, seq, 2] logits + [batch, seq] mask -> masked start and end logits, each [batch, seq]."""

    def call(self, logits, input_mask):
        penalty = (1.0 - ops.cast(input_mask, "float32")) * -1e4
        return logits[..., 0] + penalty, logits[..., 1] + penalty
