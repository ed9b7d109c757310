"""What the span labeling (SQuAD) task declares to shared code (`keras_bert.tasks.registry`): its serving
Options, its distinctive names and its transformers head (no KerasHub task preset)."""

import dataclasses

from keras_bert.checkpoints.heads import HuggingFaceHead
from keras_bert.models import options
from keras_bert.tasks.squad.answers import AnswerRules
from keras_bert.tasks.squad.served import ANSWER_OUTPUTS, NULL_OUTPUTS
from keras_bert.tasks.task_spec import TaskSpec

QUESTION_CONTEXT = "question_context"
# With nbest=True: [batch, k] candidates best first (nbest_valid False past a question's), [batch] the rest.
NBEST_OUTPUTS = ("nbest_text", "nbest_start", "nbest_end", "nbest_start_logit", "nbest_end_logit",
                 "nbest_valid", "null_start_logit", "null_end_logit", "num_windows")


@dataclasses.dataclass(frozen=True)
class Options(options.Options):
    """A span labeler's serving options.

    Attributes:
        answer_rules: an `AnswerRules` (windows and answer choice); default: run_squad's.
        nbest: the `question_context` endpoint also returns each question's n-best spans and null logits
            (what nbest_predictions.json and null_odds.json list).
    """

    answer_rules: AnswerRules | None = options.option(
        None, "How run_squad cut windows and chose answers.", "a span labeler", fields=AnswerRules)
    nbest: bool = options.option(
        False, "Span labeler: also serve each question's n-best spans (nbest_text, nbest_start, nbest_end, "
        "nbest_*_logit, nbest_valid) and null logits, as run_squad's nbest_predictions.json.",
        "a span labeler served on 'question_context'")


SPEC = TaskSpec(kind="span_labeler",
                names=("BertSpanLabeler", "span_labeler", QUESTION_CONTEXT, "AnswerRules", "answer_rules",
                       "nbest", *(field.name for field in dataclasses.fields(AnswerRules)),
                       *ANSWER_OUTPUTS[:3], *NULL_OUTPUTS, *NBEST_OUTPUTS),
                options=Options, forms=(QUESTION_CONTEXT,),
                huggingface=HuggingFaceHead(architecture="BertForQuestionAnswering", layer="span_head",
                                            prefix="qa_outputs", pooler=False))
