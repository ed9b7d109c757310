"""Padding cut from batches (pad_to_multiple_of): only padding goes, the model's outputs do not change, and
pre-training batches group rows of similar length (streamed text and TFRecords)."""

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import padding, pretraining
from keras_bert.data.default_corpus import iter_documents
from keras_bert.data.pretraining import PretrainingDataConfig
from keras_bert.models.encoder import BertEncoder
from tests.data.test_pretraining import _build, tokenizer  # noqa: F401  (fixture)


def _inputs(lengths, seq=128):
    mask = (np.arange(seq)[None, :] < np.asarray(lengths)[:, None]).astype(np.int32)
    ids = np.where(mask, np.arange(1, seq + 1)[None, :] % 50 + 5, 0).astype(np.int32)
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": (ids % 2) * mask}


def test_trim_keeps_every_token_and_cuts_labels_alike():
    inputs = _inputs([5, 40, 33])
    labels = np.tile(np.arange(128), (3, 1))
    trimmed, cut_labels, cut_weights = padding.trim_padding(inputs, 32, (labels, inputs["input_mask"]))
    assert (trimmed["input_word_ids"].shape == (3, 64) and cut_labels.shape == (3, 64)
            and cut_weights.shape == (3, 64))
    for name, value in trimmed.items():
        np.testing.assert_array_equal(value, inputs[name][:, :64])
    assert int(tf.reduce_sum(trimmed["input_mask"])) == 5 + 40 + 33
    # Rounded up to the multiple, never beyond the padded length; [choices] axes trim the same way.
    assert padding.batch_length(_inputs([128, 3])["input_mask"], 32) == 128
    assert padding.batch_length(_inputs([100, 3])["input_mask"], 48) == 128
    assert padding.batch_length(_inputs([0, 0])["input_mask"], 16) == 16
    choices = {k: v.reshape(1, 3, 128) for k, v in inputs.items()}
    assert padding.trim_padding(choices, 16)["input_word_ids"].shape == (1, 3, 48)
    # A dataset of (inputs, label) batches: the per-example labels stay as they are.
    dataset = padding.trim_dataset(tf.data.Dataset.from_tensors((inputs, np.array([0, 1, 2]))), 32)
    batch, label = next(iter(dataset))
    assert batch["input_mask"].shape == (3, 64) and label.shape == (3,)
    assert padding.trim_dataset(dataset, 0) is dataset


def test_prediction_slots_cut_to_the_last_real_one():
    weights = np.zeros((3, 20), np.float32)
    weights[0, :3] = 1
    weights[1, :1] = 1
    assert int(padding.prediction_slots(weights)) == 4  # 3 real, rounded up to 4
    weights[2, 9] = 1  # a real prediction after empty slots keeps them
    assert int(padding.prediction_slots(weights)) == 12
    weights[2, 18] = 1
    assert int(padding.prediction_slots(weights)) == 20  # 19 rounds to 20, capped at max_predictions
    assert int(padding.prediction_slots(np.zeros((2, 20), np.float32))) == 4
    assert int(padding.prediction_slots(np.ones((2, 6), np.float32), 8)) == 6


def test_pretraining_loss_unchanged_with_fewer_slots(tiny_config):
    from keras_bert.tasks.pretraining.model import BertPretrainer

    inputs = _inputs([7, 20, 13], seq=64)
    inputs["input_word_ids"] %= tiny_config.vocab_size
    rng = np.random.default_rng(0)
    positions = np.zeros((3, 20), np.int32)
    weights = np.zeros((3, 20), np.float32)
    for row, count in enumerate([1, 3, 2]):
        positions[row, :count] = np.sort(rng.choice(np.arange(1, [7, 20, 13][row]), count, replace=False))
        weights[row, :count] = 1
    inputs.update(masked_lm_positions=positions, masked_lm_weights=weights,
                  masked_lm_ids=np.where(weights > 0, rng.integers(5, 60, (3, 20)), 0).astype(np.int32),
                  next_sentence_labels=np.array([[0], [1], [0]], np.int32))
    trimmed = {k: np.asarray(v) for k, v in padding.trim_padding(inputs, 16).items()}
    assert trimmed["input_word_ids"].shape == (3, 32)
    assert {trimmed[k].shape for k in padding.PREDICTION_FEATURES} == {(3, 4)}
    model = BertPretrainer(BertEncoder(tiny_config))
    model.compile(optimizer="adam", jit_compile=False)
    full = model.evaluate(inputs, batch_size=3, verbose=0, return_dict=True)
    cut = model.evaluate(trimmed, batch_size=3, verbose=0, return_dict=True)
    assert full["masked_lm_loss"] > 1.0  # ~ln(60) for an untrained model
    for name in ("loss", "masked_lm_loss", "masked_lm_accuracy", "next_sentence_loss"):
        np.testing.assert_allclose(cut[name], full[name], rtol=1e-5, err_msg=name)


def test_encoder_outputs_do_not_change(tiny_config):
    encoder = BertEncoder(tiny_config)
    inputs = _inputs([7, 20, 13], seq=64)
    inputs["input_word_ids"] %= tiny_config.vocab_size
    full = encoder(inputs)
    cut = encoder(padding.trim_padding(inputs, 16))
    np.testing.assert_allclose(cut["pooled_output"], full["pooled_output"], atol=1e-5)
    mask = inputs["input_mask"][:, :32, None]
    np.testing.assert_allclose(cut["sequence_output"] * mask, full["sequence_output"][:, :32] * mask,
                               atol=1e-5)


def _rows(batches, seq, grouped=True, max_predictions=20):
    """Every row of every batch (ids, type ids and masked LM targets, padded back to `seq` and
    `max_predictions`) as bytes, sorted; and the batch lengths seen. `grouped`: check that a batch's rows
    fall in one bucket of width 16."""
    rows, lengths = [], set()
    for batch in batches:
        ids, real = batch["input_word_ids"], batch["input_mask"].sum(1)
        lengths.add(ids.shape[1])
        assert real.max() <= ids.shape[1] and (batch["masked_lm_positions"] < ids.shape[1]).all()
        if grouped:
            assert (real.max() - 1) // 16 == (real.min() - 1) // 16, real
        padded = np.pad(np.stack([ids, batch["input_type_ids"]], 1),
                        [(0, 0), (0, 0), (0, seq - ids.shape[1])])
        slots = [(0, 0), (0, max_predictions - batch["masked_lm_positions"].shape[1])]
        rows.extend(row.tobytes() + positions.tobytes() + bytes([label]) for row, positions, label in zip(
            padded, np.pad(batch["masked_lm_positions"], slots), batch["next_sentence_labels"], strict=True))
    return sorted(rows), lengths


def test_tfrecord_batches_grouped_by_length(tokenizer, tmp_path):  # noqa: F811
    documents = pretraining.tokenize_documents(iter_documents(max_bytes=60_000), tokenizer)
    path = str(tmp_path / "data.tfrecord")
    pretraining.write_examples(_build(documents, tokenizer, max_seq_length=64), path)
    plain = list(pretraining.tfrecord_dataset(path, 8, 64, 20, is_training=False).as_numpy_iterator())
    grouped = list(pretraining.tfrecord_dataset(path, 8, 64, 20, is_training=False,
                                                pad_to_multiple_of=16).as_numpy_iterator())
    # The same examples (and masks), in batches of one length bucket each.
    rows, lengths = _rows(grouped, 64)
    assert rows == _rows(plain, 64, grouped=False)[0]
    assert lengths <= {16, 32, 48, 64} and len(lengths) >= 3, lengths
    assert sum(len(b["input_word_ids"]) for b in grouped) == sum(len(b["input_word_ids"]) for b in plain)
    # Rows of <= 64 tokens have <= 10 real predictions (15%), so batches keep at most 12 of the 20 slots,
    # fewer when short, and no real prediction is cut.
    slots = {b["masked_lm_weights"].shape[1] for b in grouped}
    assert slots <= {4, 8, 12} and len(slots) >= 2, slots
    assert (sum(b["masked_lm_weights"].sum() for b in grouped)
            == sum(b["masked_lm_weights"].sum() for b in plain))
    training = pretraining.tfrecord_dataset(path, 8, 64, 20, pad_to_multiple_of=16)
    assert training.element_spec["input_word_ids"].shape.as_list()[1] is None
    assert all(len(b["input_word_ids"]) == 8 for b in training.take(20).as_numpy_iterator())


def test_streamed_batches_grouped_by_length(tokenizer):  # noqa: F811
    documents = list(iter_documents(max_bytes=60_000))

    def stream(multiple):
        return pretraining.text_dataset(lambda: iter(documents), tokenizer,
                                        PretrainingDataConfig(64, 10, seed=3), 8, is_training=False,
                                        pad_to_multiple_of=multiple)

    plain, grouped = (list(stream(m).as_numpy_iterator()) for m in (0, 16))
    _, lengths = _rows(grouped, 64)
    assert lengths <= {16, 32, 48, 64} and len(lengths) >= 3, lengths
    # The same pairs (masks differ: each batch is masked with its own seed).

    def pairs(batches):
        return sorted((int(m.sum()), int(label)) for b in batches
                      for m, label in zip(b["input_mask"], b["next_sentence_labels"], strict=True))
    assert pairs(grouped) == pairs(plain)
    weights = np.concatenate([b["masked_lm_weights"].sum(1) for b in grouped])
    assert (weights >= 1).all()


def test_xla_fit_on_trimmed_batches(tiny_config):
    import keras

    from keras_bert.tasks.classification.model import BertClassifier

    # One layer: the XLA step on batches of two lengths is what is checked, not the depth.
    model = BertClassifier(BertEncoder(dataclasses.replace(tiny_config, num_hidden_layers=1)), num_classes=2)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    batches = [_inputs(lengths, seq=64) for lengths in ([3, 9], [20, 30])]
    for inputs in batches:
        inputs["input_word_ids"] %= tiny_config.vocab_size
    dataset = tf.data.Dataset.from_tensor_slices(
        ({k: np.stack([b[k] for b in batches]) for k in batches[0]}, np.zeros([2, 2], np.int32)))
    trimmed = padding.trim_dataset(dataset, 16)
    assert [b["input_mask"].shape[1] for b, _ in trimmed.as_numpy_iterator()] == [16, 32]
    # The design (docs/execution.md, "Padding"): one trace of the train step for every batch length (the
    # dataset's element spec leaves the length unknown), XLA compiling that one trace per length.
    traces, train_step = [], model.train_step
    model.train_step = lambda data: traces.append(1) or train_step(data)
    history = model.fit(trimmed.repeat(2), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert len(traces) == 1, f"{len(traces)} traces of the train step for 2 batch lengths, 4 steps"


def test_classification_batches_grouped_by_length(tokenizer):  # noqa: F811
    from keras_bert.data.features import classification_dataset
    from keras_bert.tasks.classification.reader import ClassificationExample
    from keras_bert.text import BertPreprocessor

    sentences = [sentence for document in iter_documents(max_bytes=30_000) for sentence in document]
    examples = [ClassificationExample(f"train-{i}", " ".join(sentences[i:i + 8])[: 40 + 37 * (i % 11)], None,
                                      str(i % 3)) for i in range(200)]
    preprocessor = BertPreprocessor(tokenizer, seq_length=128)

    def batches(**kwargs):
        return list(classification_dataset(examples, preprocessor, ["0", "1", "2"], batch_size=8,
                                           **kwargs).as_numpy_iterator())

    full = np.concatenate([x["input_mask"].sum(1) for x, _ in batches()])
    grouped = batches(shuffle=True, pad_to_multiple_of=16, seed=1)
    # As many batches as unsorted, all full but the last (the schedule counts them), their lengths few.
    assert [len(y) for _, y in grouped] == [8] * 25
    lengths = [x["input_mask"].shape[1] for x, _ in grouped]
    assert set(lengths) <= set(padding.batch_lengths(128, 16)) and len(set(lengths)) >= 4, lengths
    # Sorted within windows of 16 batches: a batch's rows are alike, so its cut drops most padding.
    computed = sum(x["input_mask"].size for x, _ in grouped)
    unsorted = sum(len(rows) * -(-rows.max() // 16) * 16 for rows in np.split(full, range(8, 200, 8)))
    assert computed / full.sum() < 1.3 and unsorted / full.sum() > 1.6, (computed, unsorted, full.sum())
    # Every example once, none cut: the multiset of (length, label) is the full-length one.
    labels = np.concatenate([y for _, y in batches()])
    assert sorted(zip(np.concatenate([x["input_mask"].sum(1) for x, _ in grouped]).tolist(),
                      np.concatenate([y for _, y in grouped]).tolist(), strict=True)) == \
        sorted(zip(full.tolist(), labels.tolist(), strict=True))
    # Unshuffled (evaluation): example order kept, only the padding cut.
    ordered = batches(pad_to_multiple_of=32)
    np.testing.assert_array_equal(np.concatenate([x["input_mask"].sum(1) for x, _ in ordered]), full)


def test_default_multiple_bounds_the_batch_lengths():
    assert [padding.default_multiple(n) for n in (64, 128, 129, 384, 512)] == [16, 16, 32, 48, 64]
    assert padding.batch_lengths(384, 48) == list(range(48, 385, 48))
    assert padding.batch_lengths(100, 16) == [16, 32, 48, 64, 80, 96, 100]
    assert padding.batch_lengths(128, 0) == [128]
    assert padding.resolve_multiple("auto", 512) == 64 and padding.resolve_multiple(0, 512) == 0
    with pytest.raises(ValueError, match=r"pad_to_multiple_of=-8; expected 'auto', 0"):
        padding.resolve_multiple(-8, 128)
