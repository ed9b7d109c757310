"""Gradient accumulation is exact: K micro-batches give the weights of one step on the whole batch (MLM loss
normalised by the whole batch's masked-token count, clipping on the summed gradient), on 1 and 2 replicas."""

import dataclasses
import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert as kb
from keras_bert.training import create_optimizer

BATCH = 12


def _features(rng, vocab=60, seq=10):
    mask = np.ones((BATCH, seq), "int32")
    mask[::3, seq - 4:] = 0
    return {"input_word_ids": rng.integers(5, vocab, (BATCH, seq)).astype("int32") * mask,
            "input_mask": mask, "input_type_ids": np.zeros((BATCH, seq), "int32")}


def _pretraining_data(rng):
    x = _features(rng)
    x["masked_lm_positions"] = rng.integers(0, 6, (BATCH, 4)).astype("int32")
    x["masked_lm_ids"] = rng.integers(5, 60, (BATCH, 4)).astype("int32")
    # Uneven masked counts per example (and so per micro-batch): a mean of micro-batch means is not exact.
    x["masked_lm_weights"] = (rng.random((BATCH, 4))
                              < np.linspace(0.1, 1.0, BATCH)[:, None]).astype("float32")
    x["next_sentence_labels"] = rng.integers(0, 2, (BATCH, 1)).astype("int32")
    return tf.data.Dataset.from_tensors(x)


def _classification_data(rng):
    return tf.data.Dataset.from_tensors((_features(rng), rng.integers(0, 3, (BATCH,)).astype("int32")))


def _build(kind, config):
    encoder = kb.BertEncoder(config)
    if kind == "pretrainer":
        return kb.BertPretrainer(encoder)
    return kb.BertClassifier(encoder, num_classes=3)


@functools.cache
def _strategy(replicas):
    # One per process and size: a second MirroredStrategy over the same CPUs reuses collective instance keys.
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])


def _weights_after_one_step(kind, config, steps, replicas, jit_compile, data):
    keras.utils.set_random_seed(7)
    strategy = _strategy(replicas)
    with strategy.scope():
        model = _build(kind, config)
        # A clip norm the gradient exceeds, so that clipping acts on the summed gradient. A large epsilon:
        # Adam's first update is otherwise ~lr * sign(g), which blows float noise on near-0 entries up to lr;
        # with it the update is ~lr * g, and lr 1 makes it large against the weights.
        optimizer = create_optimizer(1.0, num_train_steps=10, num_warmup_steps=1, clip_global_norm=0.05,
                                     epsilon=1.0)
        model.compile(optimizer=optimizer,
                      loss="auto" if kind == "classifier" else None, metrics=None, jit_compile=jit_compile,
                      gradient_accumulation_steps=steps)
    before = [w.numpy() for w in model.weights]
    model.fit(data, epochs=2, verbose=0)  # 2 optimizer steps: the warmup's first rate is 0
    assert int(model.optimizer.iterations.numpy()) == 2
    return before, [w.numpy() for w in model.weights]


# 12 rows in 5 micro-batches: the last is padding-weighted (one replica's 6 rows in 5: likewise). XLA is not
# tried on 2 replicas: on logical CPUs it cannot reach the second one's variables (plain Keras steps neither).
@pytest.mark.parametrize("kind,replicas,steps,jit_compile", [
    ("pretrainer", 1, 5, True), ("pretrainer", 2, 2, False), ("classifier", 1, 4, True),
    ("classifier", 2, 5, False)])
def test_accumulated_step_equals_the_whole_batch_step(tiny_config, kind, replicas, steps, jit_compile):
    # One layer: the accumulated gradient is exact or not whatever the depth.
    config = dataclasses.replace(tiny_config, num_hidden_layers=1, hidden_dropout_prob=0.0,
                                 attention_probs_dropout_prob=0.0)
    make_data = _pretraining_data if kind == "pretrainer" else _classification_data
    data = make_data(np.random.default_rng(0))
    start, whole = _weights_after_one_step(kind, config, 1, replicas, jit_compile, data)
    _, accumulated = _weights_after_one_step(kind, config, steps, replicas, jit_compile, data)
    for w1, w2 in zip(whole, accumulated, strict=True):
        np.testing.assert_allclose(w2, w1, rtol=1e-5, atol=1e-7)
    # The updates themselves agree (as one vector: single entries below a weight's float spacing do not).
    update_whole = np.concatenate([(w1 - w0).ravel() for w0, w1 in zip(start, whole, strict=True)])
    update_accumulated = np.concatenate([(w2 - w0).ravel()
                                         for w0, w2 in zip(start, accumulated, strict=True)])
    assert np.linalg.norm(update_whole) > 1e-2
    assert np.linalg.norm(update_accumulated - update_whole) < 1e-4 * np.linalg.norm(update_whole)


def test_rejects_a_bad_number_of_steps(tiny_config):
    config = dataclasses.replace(tiny_config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = kb.BertClassifier(kb.BertEncoder(config), num_classes=2)
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be an integer >= 1, got 0"):
        model.compile(gradient_accumulation_steps=0)


def test_metrics_count_real_rows_when_k_does_not_divide_the_batch(tiny_config):
    # 8 rows in 3 micro-batches of 3: one padding row; accuracy must be out of 8, not 9 (5/9 before).
    rng = np.random.default_rng(0)
    x = {"input_word_ids": rng.integers(5, 60, (8, 6)).astype("int32"),
         "input_mask": np.ones((8, 6), "int32"), "input_type_ids": np.zeros((8, 6), "int32")}
    y = np.array([0, 1, 0, 1, 1, 1, 0, 0])
    config = dataclasses.replace(tiny_config, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = kb.BertClassifier(kb.BertEncoder(config), num_classes=2)
    accuracy = {}
    for steps in (1, 3):
        model.compile(optimizer=keras.optimizers.SGD(0.0), gradient_accumulation_steps=steps,
                      jit_compile=False)
        accuracy[steps] = model.fit(x, y, batch_size=8, verbose=0).history["accuracy"][0]
    assert accuracy[3] == accuracy[1] and accuracy[1] * 8 == round(accuracy[1] * 8)
