"""Shared test setup: quiet TensorFlow, deterministic seeds, tiny configs."""

import gc
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Scripts the tests run as files (`python recipes/X.py`) import `recipes` and `keras_bert` from the checkout
# under test, as `make install`'s editable install has them (docs/scripts.md), whichever checkout the
# environment's install points at.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)

import keras  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

# Two logical CPUs, for MirroredStrategy tests (set before TensorFlow starts; a plain run uses only CPU:0).
tf.config.set_logical_device_configuration(
    tf.config.list_physical_devices("CPU")[0], [tf.config.LogicalDeviceConfiguration()] * 2)

from keras_bert.config import BertConfig  # noqa: E402


@pytest.fixture
def tiny_config():
    """A 2-layer, 32-wide BERT over a 60-token vocab: builds and runs in well under a second."""
    return BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64)


# The modules of the slowest tests (seconds on 2 cores, --durations of `make test`), run first: xdist hands
# out tests in collection order, so a slow test collected late runs alone at the end while the other worker
# idles. Whole modules move (their module fixtures stay shared), the rest keep their order.
SLOW_MODULES = (
    "tests/test_docs_examples.py", "tests/models/test_task_harness.py", "tests/export/test_dynamic_length.py",
    "tests/recipes/test_transfer.py", "tests/export/test_distilled_answers.py",
    "tests/recipes/test_pretrain.py", "tests/recipes/test_from_keras.py", "tests/export/test_export.py",
    "tests/export/test_span_answers.py", "tests/recipes/test_distill.py", "tests/models/test_text_task.py",
    "tests/tasks/test_served_predictions.py", "tests/export/test_scripts.py",
    "tests/export/test_answers.py", "tests/export/test_tfhub.py", "tests/export/test_adapted_export.py",
    "tests/export/test_litert.py", "tests/recipes/test_resume_finetuning.py",
    "tests/export/test_cli_loading.py",
)


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def pytest_collection_finish(session):
    """Freezes the heap of the imports and the collected tests: Python's full collections and the gc.collect()
    Keras runs (per layer in quantize, per deleted variable) then skip its half-million objects."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """After each test: its garbage collected while it is small, then what survives frozen with the rest.

    Left to Python's own schedule, a worker's heap grew to 2-4 million objects (the graphs of every model it
    had traced) and single full collections inside later tests took 40-55 s, 16% of the suite. A collection
    here sees only one test's objects; the price is the memory of frozen objects that die later in cycles
    (6.5-7.7 GB peak RSS per worker; docs/serving_measurements.md, "The test suite's time")."""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _seed_and_policy():
    keras.utils.set_random_seed(1234)
    yield
    keras.mixed_precision.set_global_policy("float32")
