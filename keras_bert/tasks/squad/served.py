"""The served answers of a span labeler (answers): their consistency check (`keras_bert.export.servability`)
and their readable lines (export/client.py), listed in `keras_bert.tasks.registry.SERVED`."""

import numpy as np

# Served answer fields ([batch] each) of `answer_questions`; v2.0 adds the null score and has_answer.
ANSWER_OUTPUTS = ("answer", "answer_start", "answer_end", "score")
NULL_OUTPUTS = ("no_answer_score", "has_answer")


def check_answers(inputs, outputs):
    """A served `answer` must be context[answer_start:answer_end] (Python character indexes)."""
    if "answer" not in outputs or "context" not in inputs:
        return None
    for row, context in enumerate(np.asarray(inputs["context"]).reshape(-1)):
        text = context.decode("utf-8", "replace") if isinstance(context, bytes) else str(context)
        start, end = int(outputs["answer_start"][row]), int(outputs["answer_end"][row])
        answer = outputs["answer"][row].decode("utf-8", "replace")
        if text[start:end] != answer:
            return f"answer {answer!r} of example {row} is not context[{start}:{end}] = {text[start:end]!r}"
    return None


def describe(example):
    """(["'Zürich' [22:28]  score 1.250"], the names shown) of one served answer, or None."""
    if "answer" not in example:
        return None
    answer = example["answer"]
    answer = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else answer
    line = f"{answer!r} [{example['answer_start']}:{example['answer_end']}]" if answer else "(none)"
    line += f"  score {example['score']:.3f}"
    if "no_answer_score" in example:
        line += f"  no-answer score {example['no_answer_score']:.3f}"
    return [line], ANSWER_OUTPUTS + NULL_OUTPUTS
