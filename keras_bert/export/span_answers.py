"""The span labeler's answer endpoint: `question` and `context` strings in, finished answers out.

`serve_question_context` (serving_default of a span labeler exported with a preprocessor) takes `question`
and `context`, tf.string [batch], and runs `keras_bert.data.squad_answers.answer_questions`, the decoding
`run_squad --do_predict` writes predictions.json with: every context is cut into doc-stride windows (any
length), all windows of the batch go through the model in one call. Outputs, [batch] each:

    answer        tf.string  context[answer_start:answer_end] (Python str indexes); "" when there is none
    answer_start  int64      character offsets into the context (invalid UTF-8 bytes count as one U+FFFD)
    answer_end    int64
    score         float32    start + end logit of the best span (0.0 when no span fits the rules)
    no_answer_score float32  v2.0 only: the null ([CLS]) score
    has_answer    bool       v2.0 only: no_answer_score - score <= the null_score_diff_threshold of the export
"""

import numpy as np
import tensorflow as tf

from keras_bert.data.squad_answers import answer_questions

SIGNATURE = "question_context"
EXAMPLE_FEATURES = {"question": tf.io.FixedLenFeature([], tf.string),
                    "context": tf.io.FixedLenFeature([], tf.string)}
_FLOAT_OUTPUTS = ("score", "no_answer_score")


def input_spec():
    """{name: tf.TensorSpec} of the endpoint: question, context tf.string [batch]."""
    return {name: tf.TensorSpec([None], tf.string, name=name) for name in ("question", "context")}


def serve_answers(model, preprocessor, rules):
    """The endpoint function (dict of question, context -> dict of the module docstring's outputs) of the
    span labeler `model` with `preprocessor` and `rules` (a `squad_answers.AnswerRules`)."""
    rules.check(preprocessor.seq_length)
    served = ["answer", "answer_start", "answer_end", "score"]
    if rules.version_2_with_negative:
        served += ["no_answer_score", "has_answer"]

    def serve(inputs):
        found = answer_questions(model, preprocessor, inputs["question"], inputs["context"], rules)
        return {name: tf.cast(found[name], tf.float32) if name in _FLOAT_OUTPUTS else found[name]
                for name in served}

    return serve


def warmup_inputs():
    """Numpy inputs of the warmup request: a question with its context, and an empty pair."""
    return {"question": np.array([b"Who warms the model up?", b""], dtype=object),
            "context": np.array([b"TF Serving warms the model up with this request.", b""], dtype=object)}
