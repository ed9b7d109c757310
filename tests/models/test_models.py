"""The encoder and task models: shapes, masking, losses against hand computation, .keras round-trips."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert as kb
from tests.harness import check_mixed_precision, run_model_test


def _inputs(batch=3, seq=10, vocab=60, seed=0, prefix=()):
    rng = np.random.default_rng(seed)
    shape = prefix + (seq,)
    mask = np.ones((batch,) + shape, "int32")
    mask[0, ..., seq - 3:] = 0  # padded example
    return {
        "input_word_ids": (rng.integers(5, vocab, (batch,) + shape) * mask).astype("int32"),
        "input_mask": mask,
        "input_type_ids": np.concatenate(
            [np.zeros((batch,) + prefix + (seq // 2,), "int32"),
             np.ones((batch,) + prefix + (seq - seq // 2,), "int32")], axis=-1) * mask,
    }


def test_encoder_returns_tf_hub_names_and_shapes(tiny_config, tmp_path):
    encoder = kb.BertEncoder(tiny_config)
    shapes = {"sequence_output": (3, 10, 32), "pooled_output": (3, 32), "encoder_outputs": [(3, 10, 32)] * 2}
    restored = run_model_test(lambda: kb.BertEncoder(tiny_config), _inputs(), shapes, tmp_path, "bfloat16",
                              model=encoder)
    outputs = encoder(_inputs())
    np.testing.assert_array_equal(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    assert restored.config == tiny_config


def test_padding_does_not_change_real_positions(tiny_config):
    encoder = kb.BertEncoder(tiny_config)
    x = _inputs(batch=1, seq=7)
    x["input_mask"][:] = 1
    padded = {k: np.pad(v, ((0, 0), (0, 5))) for k, v in x.items()}
    short = encoder(x)
    long = encoder(padded)
    np.testing.assert_allclose(long["sequence_output"][:, :7], short["sequence_output"], atol=1e-5)
    np.testing.assert_allclose(long["pooled_output"], short["pooled_output"], atol=1e-5)


def test_pretrainer_loss_matches_hand_computation(tiny_config):
    model = kb.BertPretrainer(kb.BertEncoder(tiny_config))
    x = _inputs()
    x["masked_lm_positions"] = np.array([[1, 2, 0], [3, 4, 5], [0, 0, 0]], "int32")
    x["masked_lm_ids"] = np.array([[7, 8, 0], [9, 10, 11], [0, 0, 0]], "int32")
    x["masked_lm_weights"] = np.array([[1, 1, 0], [1, 1, 1], [0, 0, 0]], "float32")
    x["next_sentence_labels"] = np.array([[0], [1], [1]], "int32")
    outputs = model(x)
    logits = np.asarray(outputs["masked_lm_logits"], "float64")
    assert logits.shape == (3, 3, 60)

    # The head sees only the gathered positions: same as running it on the full sequence then gathering.
    sequence = model.encoder(x)["sequence_output"]
    full = model.masked_lm(sequence, np.tile(np.arange(10, dtype="int32"), (3, 1)))
    np.testing.assert_allclose(np.take_along_axis(np.asarray(full), x["masked_lm_positions"][..., None], 1),
                               logits, atol=1e-5)

    def xent(logits, labels):
        logits = logits - logits.max(-1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        return -np.take_along_axis(logp, labels[..., None], -1)[..., 0]

    w = x["masked_lm_weights"]
    mlm = (xent(logits, x["masked_lm_ids"]) * w).sum() / (w.sum() + 1e-5)
    nsp = xent(np.asarray(outputs["next_sentence_logits"], "float64"), x["next_sentence_labels"][:, 0]).mean()
    loss = model.compute_loss(x=x, y_pred=outputs)
    np.testing.assert_allclose(float(loss), mlm + nsp, rtol=1e-5)
    metrics = {m.name: float(m.result()) for m in model.metrics}
    np.testing.assert_allclose(metrics["masked_lm_loss"], mlm, rtol=1e-5)
    np.testing.assert_allclose(metrics["next_sentence_loss"], nsp, rtol=1e-5)

    # MLM accuracy is argmax accuracy over the weighted positions (3 of the 5 labels made the argmax).
    for metric in model.metrics:
        metric.reset_state()
    predicted = logits.argmax(-1).astype("int32")
    x["masked_lm_ids"] = np.where([[1, 0, 0], [1, 1, 0], [1, 1, 1]], predicted, (predicted + 1) % 60)
    model.compute_loss(x=x, y_pred=outputs)
    expected = ((predicted == x["masked_lm_ids"]) * w).sum() / w.sum()
    assert expected == 0.6
    np.testing.assert_allclose(float(model.masked_lm_accuracy.result()), expected, rtol=1e-6)

    # The loss's gradient in the logits (written out, not TF's): (softmax - one_hot) * weight / total weight.
    watched = tf.constant(outputs["masked_lm_logits"])
    with tf.GradientTape() as tape:
        tape.watch(watched)
        loss = model.compute_loss(x=x, y_pred={**outputs, "masked_lm_logits": watched})
    softmax = np.exp(logits - logits.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    one_hot = np.eye(60)[x["masked_lm_ids"]]
    want = (softmax - one_hot) * w[..., None] / (w.sum() + 1e-5)
    np.testing.assert_allclose(tape.gradient(loss, watched), want, atol=1e-6)


def test_pretrainer_fits_with_one_dict_dataset_and_reports_metrics(tiny_config):
    model = kb.BertPretrainer(kb.BertEncoder(tiny_config))
    rng = np.random.default_rng(0)
    n = 32
    features = _inputs(batch=n, seq=12)
    features.update(
        masked_lm_positions=rng.integers(1, 9, (n, 3)).astype("int32"),
        masked_lm_ids=rng.integers(5, 8, (n, 3)).astype("int32"),  # learnable: only 3 ids
        masked_lm_weights=np.ones((n, 3), "float32"),
        next_sentence_labels=(features["input_word_ids"][:, :1] % 2).astype("int32"),
    )
    ds = tf.data.Dataset.from_tensor_slices(features).batch(8)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False)
    history = model.fit(ds, epochs=4, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]
    results = model.evaluate(ds, return_dict=True, verbose=0)
    assert set(results) >= {"loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy",
                            "next_sentence_loss"}
    assert results["masked_lm_accuracy"] > 0.34  # above chance among the 3 ids used


# Output shapes for the batch of 4 examples of 10 tokens (3 choices) in the test below.
TASK_SHAPES = {"pretrainer": {"masked_lm_logits": (4, 2, 60), "next_sentence_logits": (4, 2)},
               "classifier": (4, 3), "span": {"start_logits": (4, 10), "end_logits": (4, 10)},
               "token": (4, 10, 5), "choice": (4, 3)}


def _task_model(kind, config):
    encoder = kb.BertEncoder(config)
    return {"pretrainer": lambda: kb.BertPretrainer(encoder),
            "classifier": lambda: kb.BertClassifier(encoder, num_classes=3),
            "span": lambda: kb.BertSpanLabeler(encoder),
            "token": lambda: kb.BertTokenClassifier(encoder, num_classes=5),
            "choice": lambda: kb.BertMultipleChoice(encoder, num_choices=3)}[kind]()


@pytest.mark.parametrize("kind", ["pretrainer", "classifier", "span", "token", "choice"])
def test_task_models_fit_and_round_trip_through_keras_file(kind, tiny_config, tmp_path):
    model = _task_model(kind, tiny_config)
    x = _inputs(batch=4)
    if kind == "pretrainer":
        x["masked_lm_positions"] = np.array([[1, 2]] * 4, "int32")
        y, loss = None, None
    elif kind == "classifier":
        y = np.array([0, 1, 2, 1])
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    elif kind == "span":
        y = {"start_logits": np.array([1, 2, 3, 4]), "end_logits": np.array([2, 3, 4, 5])}
        loss = {"start_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                "end_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}
    elif kind == "token":
        y = np.zeros((4, 10), "int32")
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    else:
        x = _inputs(batch=4, prefix=(3,))
        y = np.array([0, 1, 2, 0])
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if y is not None:
        model.compile(optimizer="adam", loss=loss, jit_compile=False)
        model.fit(x, y, epochs=1, verbose=0)
    # Task heads compute their logits in float32 under mixed precision (documented per model).
    restored = run_model_test(lambda: _task_model(kind, tiny_config), x, TASK_SHAPES[kind], tmp_path,
                              "float32", model=model)
    assert restored.encoder.config == tiny_config


def test_mlm_output_weights_are_tied_to_word_embeddings(tiny_config):
    model = kb.BertPretrainer(kb.BertEncoder(tiny_config))
    own = [w.path for w in model.masked_lm.weights]
    assert sorted(p.split("/", 1)[1] for p in own if p.startswith("masked_lm")) == [
        "layer_norm/beta", "layer_norm/gamma", "output_bias", "transform/bias", "transform/kernel"]
    # Perturbing the embedding table changes the MLM logits: the weights are shared, not copied.
    x = _inputs(batch=1)
    x["masked_lm_positions"] = np.array([[1]], "int32")
    before = np.asarray(model(x)["masked_lm_logits"])
    table = model.encoder.embeddings.word_embeddings.embeddings
    table.assign(table * 2.0)
    assert not np.allclose(before, model(x)["masked_lm_logits"])


def test_mixed_bfloat16_keeps_layer_norm_and_softmax_in_float32(tiny_config):
    # bf16 keeps ~3 significant digits; LayerNorm output is O(1).
    mixed = check_mixed_precision(lambda: kb.BertEncoder(tiny_config), _inputs(),
                                  lambda model, x: model(x)["sequence_output"], "bfloat16", atol=0.1)
    assert all(w.dtype == "float32" for w in mixed.weights)
    assert mixed.transformer_layers[0].attention_layer_norm.compute_dtype == "float32"
