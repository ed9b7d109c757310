"""GLUE's official metrics per task, from the scores of `keras_bert.metrics.glue`.

    compute_metrics("mrpc", predicted_ids, label_ids)   # {"accuracy": 0.84, "f1": 0.88}
    compute_metrics("stsb", predicted_scores, scores)   # {"pearson": ..., "spearmanr": ...}
"""

from keras_bert.metrics.glue import accuracy, binary_f1, matthews_corrcoef, pearson, spearman
from keras_bert.tasks.classification.glue import get_glue_task

_METRICS = {
    "accuracy": accuracy,
    "f1": binary_f1,
    "mcc": matthews_corrcoef,
    "pearson": pearson,
    "spearmanr": spearman,
}


def compute_metrics(task_name, predictions, labels):
    """The official metrics of a GLUE task.

    Args:
      task_name: GLUE task name in any spelling ("CoLA", "sst-2", "STS-B", "mnli", ...).
      predictions, labels: 1-D sequences of equal length: class ids (ints indexing `task.label_list`) or
        label strings for classification tasks; floats for STS-B.

    Returns:
      dict metric name -> float: CoLA and AX {"mcc"}; SST-2, MNLI, QNLI, RTE, WNLI {"accuracy"};
      MRPC, QQP {"accuracy", "f1"} (F1 of class "1"); STS-B {"pearson", "spearmanr"}.
    """
    task = get_glue_task(task_name)
    if not task.is_regression:
        predictions = _to_ids(predictions, task.label_list, "predictions")
        labels = _to_ids(labels, task.label_list, "labels")
    return {name: _METRICS[name](predictions, labels) for name in task.metric_names}


def _to_ids(values, label_list, what):
    ids = []
    for value in values:
        if isinstance(value, str):
            if value not in label_list:
                raise ValueError(f"{what}: unknown label {value!r}; expected one of {list(label_list)}")
            ids.append(label_list.index(value))
        else:
            ids.append(int(value))
    return ids
