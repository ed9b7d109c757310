"""The scores GLUE reports, in numpy: accuracy, binary F1, Matthews correlation, Pearson and Spearman
correlation. Values are fractions in [0, 1] (correlations in [-1, 1]), as in the GLUE leaderboard's raw
scores. Which task reports which: keras_bert/tasks/classification/metrics.py `compute_metrics`.

    accuracy(predicted_ids, label_ids)   # 0.84
"""

import numpy as np


def accuracy(predictions, labels):
    """Fraction of `predictions` equal to `labels` (two equal-length 1-D sequences)."""
    predictions, labels = _pair(predictions, labels)
    return float(np.mean(predictions == labels))


def binary_f1(predictions, labels, positive=1):
    """F1 of the class `positive` (harmonic mean of precision and recall; 0.0 when there is no true
    positive)."""
    predictions, labels = _pair(predictions, labels)
    true_positives = np.sum((predictions == positive) & (labels == positive))
    if true_positives == 0:
        return 0.0
    precision = true_positives / np.sum(predictions == positive)
    recall = true_positives / np.sum(labels == positive)
    return float(2 * precision * recall / (precision + recall))


def matthews_corrcoef(predictions, labels):
    """Matthews correlation coefficient; for K > 2 classes Gorodkin's R_K (the GLUE AX score).

    Returns 0.0 when it is undefined (all predictions or all labels in one class).
    """
    predictions, labels = _pair(predictions, labels)
    classes, encoded = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    true_ids, predicted_ids = encoded[: len(labels)], encoded[len(labels):]
    confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
    np.add.at(confusion, (true_ids, predicted_ids), 1.0)
    true_counts, predicted_counts = confusion.sum(axis=1), confusion.sum(axis=0)
    total, correct = confusion.sum(), np.trace(confusion)
    covariance = correct * total - true_counts @ predicted_counts
    variance_true = total**2 - true_counts @ true_counts
    variance_predicted = total**2 - predicted_counts @ predicted_counts
    if variance_true == 0 or variance_predicted == 0:
        return 0.0
    return float(covariance / np.sqrt(variance_true * variance_predicted))


def pearson(predictions, labels):
    """Pearson correlation of two equal-length float sequences (nan when one is constant or holds a NaN)."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    x, y = x - x.mean(), y - y.mean()
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(x @ y / denominator) if denominator > 0 else float("nan")


def rankdata(values):
    """1-based ranks of `values`; tied values get the mean of the ranks they span (as scipy's "average").

    All NaN when any value is NaN (scipy's default): a NaN has no rank, and ranking it last would score it.
    """
    values = np.asarray(values, dtype=np.float64)
    if np.isnan(values).any():
        return np.full(len(values), np.nan)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    # Start of each run of equal values in sorted order.
    run_starts = np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])
    run_ids = np.cumsum(run_starts) - 1
    starts = np.flatnonzero(run_starts)
    ends = np.concatenate([starts[1:], [len(values)]])
    mean_ranks = (starts + 1 + ends) / 2.0  # mean of the 1-based ranks starts+1 .. ends
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = mean_ranks[run_ids]
    return ranks


def spearman(predictions, labels):
    """Spearman rank correlation: Pearson correlation of tie-averaged ranks (NaN when a value is NaN)."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    return pearson(rankdata(x), rankdata(y))


def _pair(predictions, labels, dtype=None):
    predictions = np.asarray(predictions, dtype=dtype).reshape(-1)
    labels = np.asarray(labels, dtype=dtype).reshape(-1)
    if predictions.shape != labels.shape:
        raise ValueError(f"{predictions.shape[0]} predictions but {labels.shape[0]} labels")
    if predictions.size == 0:
        raise ValueError("no predictions to score")
    return predictions, labels
