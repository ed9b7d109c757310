"""GLUE metrics on hand-computed cases (and against scipy/sklearn when they happen to be installed)."""

import math

import numpy as np
import pytest

from keras_bert.metrics import glue
from keras_bert.tasks.classification.metrics import compute_metrics


def test_accuracy_and_f1_hand_computed():
    predictions = [1, 1, 0, 1, 0, 0]
    labels = [1, 0, 0, 1, 1, 0]
    # tp=2 fp=1 fn=1: precision 2/3, recall 2/3.
    assert glue.accuracy(predictions, labels) == pytest.approx(4 / 6)
    assert glue.binary_f1(predictions, labels) == pytest.approx(2 / 3)
    assert glue.binary_f1([0, 0], [1, 0]) == 0.0


def test_matthews_binary_hand_computed():
    # tp=3 tn=2 fp=1 fn=2: (3*2 - 1*2) / sqrt(4*5*3*4) = 4 / sqrt(240)
    labels = [1, 1, 1, 1, 1, 0, 0, 0]
    predictions = [1, 1, 1, 0, 0, 1, 0, 0]
    assert glue.matthews_corrcoef(predictions, labels) == pytest.approx(4 / math.sqrt(240))
    assert glue.matthews_corrcoef([1, 1, 1], [0, 1, 0]) == 0.0  # constant predictions: undefined -> 0
    assert glue.matthews_corrcoef([1, 0, 1], [1, 0, 1]) == pytest.approx(1.0)


def test_matthews_multiclass_hand_computed():
    labels = [0, 0, 1, 1, 2, 2]
    predictions = [0, 1, 1, 1, 2, 0]
    # t=[2,2,2] p=[2,3,1] correct=4 n=6: (4*6-12) / sqrt((36-12)*(36-14)) = 12/sqrt(528)
    assert glue.matthews_corrcoef(predictions, labels) == pytest.approx(12 / math.sqrt(528))


def test_spearman_with_ties_hand_computed():
    np.testing.assert_allclose(glue.rankdata([10, 20, 20, 5, 20]), [2, 4, 4, 1, 4])
    np.testing.assert_allclose(glue.rankdata([3, 1, 3, 1]), [3.5, 1.5, 3.5, 1.5])
    x = [1.0, 2.0, 2.0, 3.0]
    y = [1.0, 3.0, 2.0, 4.0]
    # ranks x [1, 2.5, 2.5, 4], y [1, 3, 2, 4]: centred (-1.5,0,0,1.5), (-1.5,.5,-.5,1.5) -> 4.5/sqrt(4.5*5)
    assert glue.spearman(x, y) == pytest.approx(4.5 / math.sqrt(4.5 * 5.0))
    assert glue.pearson([1, 2, 3], [2, 4, 6.5]) == pytest.approx(np.corrcoef([1, 2, 3], [2, 4, 6.5])[0, 1])
    assert math.isnan(glue.pearson([1, 1, 1], [1, 2, 3]))


def test_against_scipy_and_sklearn_when_installed():
    stats = pytest.importorskip("scipy.stats")
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, size=200).astype(float)  # many ties
    y = x + rng.normal(size=200)
    assert glue.spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    assert glue.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    labels, predictions = rng.integers(0, 3, size=300), rng.integers(0, 3, size=300)
    predictions[:150] = labels[:150]
    assert glue.matthews_corrcoef(predictions, labels) == pytest.approx(
        sklearn_metrics.matthews_corrcoef(labels, predictions), abs=1e-12)


def test_compute_metrics_per_task():
    assert compute_metrics("CoLA", [1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(
        {"mcc": 1 / math.sqrt(3)})
    assert compute_metrics("MRPC", [1, 1, 0], [1, 0, 0]) == pytest.approx(
        {"accuracy": 2 / 3, "f1": 2 / 3})
    assert compute_metrics("qqp", ["1", "0"], ["1", "1"]) == pytest.approx(
        {"accuracy": 0.5, "f1": 2 / 3})
    assert set(compute_metrics("sts-b", [0.1, 2.0, 4.0], [0.0, 2.5, 5.0])) == {"pearson", "spearmanr"}
    mnli = compute_metrics("mnli", ["entailment", "neutral", "neutral"], [1, 2, 0])
    assert mnli == pytest.approx({"accuracy": 2 / 3})
    for task in ("sst2", "qnli", "rte", "wnli"):
        assert list(compute_metrics(task, [0, 1], [0, 0])) == ["accuracy"]
    assert list(compute_metrics("ax", [0, 1, 2], [0, 1, 1])) == ["mcc"]


def test_compute_metrics_bad_input():
    with pytest.raises(ValueError, match="3 predictions but 2 labels"):
        compute_metrics("sst2", [0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="unknown label 'maybe'"):
        compute_metrics("rte", ["maybe"], ["entailment"])
    with pytest.raises(ValueError, match="unknown GLUE task 'squad'"):
        compute_metrics("squad", [0], [0])


def test_nan_prediction_gets_no_correlation():
    # A diverged model: NaN has no rank (scipy answers NaN); ranking it last would give Spearman 0.2.
    assert math.isnan(glue.spearman([1, float("nan"), 3, 2], [1, 2, 3, 4]))
    assert math.isnan(glue.pearson([1, float("nan"), 3, 2], [1, 2, 3, 4]))
    assert all(math.isnan(v) for v in compute_metrics("stsb", [1, float("nan"), 3], [1, 2, 3]).values())
    stats = pytest.importorskip("scipy.stats")
    assert math.isnan(stats.spearmanr([1, float("nan"), 3, 2], [1, 2, 3, 4])[0])
