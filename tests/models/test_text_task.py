"""Raw strings straight into fit / evaluate / predict, and a .keras that carries its preprocessing."""

import os
import re
import warnings
import zipfile

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert.config import BertConfig
from keras_bert.models.encoder import BertEncoder
from keras_bert.tasks.classification.model import BertClassifier
from keras_bert.tasks.multiple_choice.model import BertMultipleChoice
from keras_bert.tasks.ner.model import BertTokenClassifier
from keras_bert.tasks.squad.model import BertSpanLabeler
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["good", "bad", "great", "awful", "movie", "film", "plot", "the", "a", "was", "is", "it", "and",
         "what", "who", "where", "then", "he", "she", "ran", "sat", "cat", "dog"]
POSITIVE = ["good movie", "great film", "the plot was good", "a great plot", "it is good and great"]
NEGATIVE = ["bad movie", "awful film", "the plot was bad", "an awful plot", "it is bad and awful"]


def _preprocessor(directory):
    path = directory / "vocab.txt"
    path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "?", *WORDS]) + "\n")
    return BertPreprocessor(BertTokenizer(str(path), lower_case=True), seq_length=16)


@pytest.fixture(scope="module")
def preprocessor(tmp_path_factory):
    """One preprocessor for the module (read-only: a test that deletes its vocab file builds its own)."""
    return _preprocessor(tmp_path_factory.mktemp("vocab"))


def _encoder(preprocessor):
    # One layer: what these tests check (text in, labels, padding, saving) does not depend on the depth.
    config = BertConfig(vocab_size=preprocessor.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertEncoder(config)


def _sentiment(n=4):
    texts = (POSITIVE + NEGATIVE) * n
    labels = (["pos"] * len(POSITIVE) + ["neg"] * len(NEGATIVE)) * n
    return texts, labels


def test_classifier_fits_raw_strings_with_string_labels(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False)  # default loss and metric
    texts, labels = _sentiment()
    history = clf.fit(texts, labels, batch_size=8, epochs=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    loss, accuracy = clf.evaluate(texts, labels, batch_size=8, verbose=0)
    assert accuracy == 1.0
    logits = clf.predict(["good movie", "awful film"], verbose=0)
    assert logits.shape == (2, 2)
    assert [clf.labels[i] for i in logits.argmax(-1)] == ["pos", "neg"]
    # Ids as labels give the same evaluation as names.
    ids = [clf.labels.index(label) for label in labels]
    np.testing.assert_allclose(clf.evaluate(texts, np.array(ids), batch_size=8, verbose=0), [loss, accuracy],
                               rtol=1e-5)


def test_raw_strings_give_the_token_id_outputs(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), num_classes=3, preprocessor=preprocessor)
    texts = ["good movie", "the plot was bad and awful", ""]
    by_text = clf.predict(texts, verbose=0)  # one batch, as the token-id call (oneDNN rounds per batch shape)
    by_ids = clf.predict(preprocessor(tf.constant(texts)), verbose=0)
    np.testing.assert_array_equal(by_text, by_ids)
    # A tf.data of unbatched strings is batched and preprocessed too.
    by_dataset = clf.predict(tf.data.Dataset.from_tensor_slices(texts), verbose=0)
    np.testing.assert_array_equal(by_dataset, by_ids)


def test_text_batches_pay_for_their_tokens(preprocessor, monkeypatch):
    longer = BertPreprocessor(preprocessor.tokenizer, seq_length=32)
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=longer)
    texts, labels = _sentiment(2)  # 20 texts of at most 8 tokens

    def widths(model, **kwargs):
        return {inputs["input_mask"].shape[1] for inputs in model.text_dataset(texts, batch_size=8, **kwargs)}

    # Cut to the longest text rounded up to 16, shuffled or not; 0 keeps seq_length (as per-token models).
    assert widths(clf, shuffle=True, seed=1) == widths(clf) == {16}
    assert widths(clf, pad_to_multiple_of=0) == {32} and widths(clf, pad_to_multiple_of=8) == {8}
    assert widths(BertTokenClassifier(_encoder(preprocessor), num_classes=3, preprocessor=longer)) == {32}
    # The logits do not depend on the padding.
    np.testing.assert_allclose(clf.predict(texts, verbose=0), clf.predict(texts, pad_to_multiple_of=0,
                                                                          verbose=0), atol=1e-5)
    # 3 steps over up to 2 lengths (16, 32): too few to pay an XLA compile each, unless asked for.
    clf.compile()
    clf.fit(texts, labels, batch_size=8, verbose=0)
    assert clf.execution == "kernels" and not clf.jit_compile
    # evaluate batches texts of similar length together (each once, shortest first in a window): fewer
    # padded positions, the same scores as batches in order at full length.
    def lengths(**kwargs):
        return [int(x["input_mask"].shape[1]) for x, _ in clf.text_dataset(texts, labels, batch_size=4,
                                                                            pad_to_multiple_of=4, **kwargs)]
    grouped = lengths(group=True)
    assert grouped == sorted(grouped) == [4, 4, 8, 8, 8] and lengths() == [8] * 5
    np.testing.assert_allclose(clf.evaluate(texts, labels, batch_size=4, pad_to_multiple_of=4, verbose=0),
                               clf.evaluate(texts, labels, batch_size=4, pad_to_multiple_of=0, verbose=0),
                               rtol=1e-5)
    # An explicit jit_compile=True is kept for the same run: the execution Keras' fit is handed (its XLA step
    # is not run here: tests/data/test_padding.py fits XLA on trimmed batches).
    handed = []
    monkeypatch.setattr(keras.Model, "fit", lambda self, *args, **kwargs: handed.append(
        (self.execution, self.jit_compile, kwargs["validation_data"])))
    clf.compile(jit_compile=True)
    clf.fit(texts, labels, batch_size=8, verbose=0, validation_data=(texts, labels), validation_batch_size=4,
            pad_to_multiple_of=4)
    assert [h[:2] for h in handed] == [("xla", True)] and clf.execution == "xla"
    # fit's validation on raw text is an evaluation: its batches grouped by length as evaluate's.
    assert [int(x["input_mask"].shape[1]) for x, _ in handed[0][2]] == grouped


def test_sentence_pairs_and_datasets_of_text_and_labels(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["no", "yes"], preprocessor=preprocessor)
    clf.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    first = ["who ran", "who sat", "where is the cat", "where is the dog"] * 4
    second = ["he ran", "she ran", "the dog sat", "the cat sat"] * 4
    labels = ["yes", "no", "no", "no"] * 4
    pairs = (first, second)
    clf.fit(pairs, labels, batch_size=4, epochs=1, verbose=0)
    packed = preprocessor((tf.constant(first), tf.constant(second)))
    np.testing.assert_array_equal(clf.predict(pairs, verbose=0), clf.predict(packed, verbose=0))
    dataset = tf.data.Dataset.from_tensor_slices(((first, second), labels)).batch(4)
    clf.fit(dataset, epochs=1, verbose=0)  # string labels mapped in the graph
    assert len(clf.evaluate(dataset, verbose=0)) == 2


def test_unknown_label_and_missing_preprocessor_are_refused(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(jit_compile=False)
    with pytest.raises(ValueError, match=r"'meh' \(example 1\) is not one of the model's labels"):
        clf.fit(["good", "bad"], ["pos", "meh"], verbose=0)
    bare = BertClassifier(_encoder(preprocessor), num_classes=2)
    with pytest.raises(ValueError, match="has no preprocessor"):
        bare.predict(["good movie"], verbose=0)


def test_multiple_choice_endings(preprocessor):
    model = BertMultipleChoice(_encoder(preprocessor), num_choices=2, preprocessor=preprocessor)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    contexts = ["the cat", "the dog"] * 4
    endings = [["sat", "ran"], ["ran", "sat"]] * 4
    model.fit((contexts, endings), [0, 0] * 4, batch_size=4, epochs=1, verbose=0)
    logits = model.predict((contexts[:2], endings[:2]), verbose=0)
    packed = preprocessor((tf.constant(["the cat", "the cat", "the dog", "the dog"]),
                           tf.constant(["sat", "ran", "ran", "sat"])))
    expected = model.predict({k: tf.reshape(v, [2, 2, 16]) for k, v in packed.items()}, verbose=0)
    np.testing.assert_array_equal(logits, expected)


def test_span_labeler_token_classifier_and_encoder_predict_text(preprocessor):
    encoder = _encoder(preprocessor)
    spans = BertSpanLabeler(encoder, preprocessor=preprocessor).predict((["who ran"], ["he ran"]), verbose=0)
    assert spans["start_logits"].shape == (1, 16)
    tagger = BertTokenClassifier(encoder, labels=["O", "B-X"], preprocessor=preprocessor)
    assert tagger.predict(["the cat sat"], verbose=0).shape == (1, 16, 2)
    encoder_with_text = BertEncoder(encoder.config, preprocessor=preprocessor)
    assert encoder_with_text.predict(["the cat"], verbose=0)["pooled_output"].shape == (1, 32)


def test_keras_file_is_self_contained(tmp_path):
    preprocessor = _preprocessor(tmp_path)  # its own: the test deletes the vocab file
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    texts, labels = _sentiment(1)
    clf.fit(texts, labels, batch_size=5, epochs=1, verbose=0)
    path = str(tmp_path / "m.keras")
    clf.save(path)
    with zipfile.ZipFile(path) as archive:  # the vocab is an asset too, readable without Keras
        assets = [name for name in archive.namelist()
                  if name.startswith("assets/") and name.endswith("vocab.txt")]
        assert len(assets) == 1
        assert archive.read(assets[0]).decode("utf-8").splitlines() == preprocessor.tokenizer.vocab
    os.remove(preprocessor.tokenizer.vocab_file)
    loaded = keras.saving.load_model(path)  # safe_mode on
    assert loaded.labels == ["neg", "pos"]
    assert loaded.preprocessor.seq_length == 16 and loaded.preprocessor.tokenizer.lower_case
    np.testing.assert_array_equal(loaded.predict(texts, verbose=0), clf.predict(texts, verbose=0))


def test_default_compile_schedules_warmup_and_decay(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(jit_compile=False)
    texts, labels = _sentiment(2)  # 20 examples, batch 8 -> 3 steps an epoch
    clf.fit(texts, labels, batch_size=8, epochs=2, verbose=0)
    schedule = clf.optimizer.learning_rate if callable(clf.optimizer.learning_rate) else None
    schedule = clf.optimizer._learning_rate
    assert schedule.num_train_steps == 6 and schedule.num_warmup_steps == 0
    assert float(schedule(6)) == 0.0 and float(schedule(3)) == pytest.approx(2.5e-5)
    # compile's own rate and warmup keep the schedule (was: no learning rate; an optimizer lost the decay)
    clf.compile(learning_rate=1e-3, warmup_proportion=0.5, jit_compile=False)
    clf.fit(texts, labels, batch_size=8, epochs=2, verbose=0)
    schedule = clf.optimizer._learning_rate
    assert (schedule.num_train_steps, schedule.num_warmup_steps) == (6, 3)
    assert float(schedule(3)) == pytest.approx(1e-3) and float(schedule(6)) == 0.0
    with pytest.raises(ValueError, match="learning_rate / warmup_proportion set the default optimizer's"):
        clf.compile(optimizer="adam", learning_rate=1e-3)


def test_quantize_warns_of_no_layer_it_leaves_alone(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.quantize("int8")
    # was: 7 "Layer LayerNorm does not have a `quantize` method implemented" and alike
    assert [str(w.message) for w in caught if issubclass(w.category, UserWarning)] == []
    assert clf.encoder.transformer_layers[0].qkv.quantization_mode == "int8"


def test_a_changed_vocab_asset_is_refused(preprocessor, tmp_path):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    path, changed = str(tmp_path / "m.keras"), str(tmp_path / "changed.keras")
    clf.save(path)
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(changed, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename.endswith("vocab.txt"):
                data = data.replace(b"good", b"fine")
            target.writestr(item, data)
    with pytest.raises(ValueError, match="vocab.txt asset differs"):
        keras.saving.load_model(changed)


def test_fit_evaluate_predict_iterate_without_tf_data_autotune(preprocessor, monkeypatch):
    """The datasets handed to Keras run without tf.data's autotune thread (keras_bert.data.options: its sleep
    stalled the end of fit / predict calls); a dataset that says autotune=True keeps it."""
    seen = []
    for name in ("fit", "evaluate", "predict"):
        original = getattr(keras.Model, name)

        def record(self, x=None, *args, _original=original, **kwargs):
            seen.append((x, kwargs.get("validation_data")))
            return _original(self, x, *args, **kwargs)

        monkeypatch.setattr(keras.Model, name, record)
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(optimizer="adam", jit_compile=False)
    texts, labels = _sentiment(1)
    ids = preprocessor(tf.constant(texts))
    targets = np.array([clf.labels.index(label) for label in labels])
    by_ids = tf.data.Dataset.from_tensor_slices((ids, targets)).batch(4)
    clf.fit(texts, labels, batch_size=4, validation_data=by_ids, verbose=0)  # raw text; ids to validate
    clf.evaluate(by_ids, verbose=0)
    clf.predict(by_ids.map(lambda x, y: x), verbose=0)
    explicit = tf.data.Options()
    explicit.autotune.enabled = True
    clf.predict(by_ids.map(lambda x, y: x).with_options(explicit), verbose=0)
    autotune = [(x.options().autotune.enabled, v if v is None else v.options().autotune.enabled)
                for x, v in seen]
    # fit (and its validation pass, an evaluate), evaluate, predict, predict with autotune=True
    assert autotune == [(False, False), (False, None), (False, None), (False, None), (True, None)]
    # Arrays become the dataset Keras would build from them (same batches), without autotuning too.
    seen.clear()
    weights = np.linspace(0.5, 1.5, len(texts))
    clf.fit(ids, targets, batch_size=4, sample_weight=weights, validation_data=(ids, targets), verbose=0)
    clf.evaluate(ids, targets, batch_size=4, verbose=0)
    by_arrays = clf.predict(ids, batch_size=3, verbose=0)
    assert [(x.options().autotune.enabled, v if v is None else v.options().autotune.enabled)
            for x, v in seen] == [(False, False), (False, None), (False, None), (False, None)]
    assert int(seen[0][0].cardinality()) == 3  # 10 rows in batches of 4: Keras' progress bar knows the total
    np.testing.assert_allclose(by_arrays, clf.predict(by_ids.map(lambda x, y: x), verbose=0), atol=1e-5)


def test_float_labels_are_class_ids_only_when_integral_and_in_range(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), num_classes=3, preprocessor=preprocessor)
    np.testing.assert_array_equal(clf.label_ids([1.0, 0.0, 2.0]), [1, 0, 2])
    for labels, bad in (([0.0, 0.9], "0.9"), ([1.0, float("nan")], "nan"), ([5.0, 7.0], "5.0")):
        index = 1 if bad != "5.0" else 0
        with pytest.raises(ValueError, match=rf"label {bad} \(example {index}\) is not a class id: "
                                             r"expected an integer in \[0, 3\)"):
            clf.evaluate(["good", "bad"], labels, verbose=0)
    regression = BertClassifier(_encoder(preprocessor), num_classes=1, preprocessor=preprocessor)
    np.testing.assert_array_equal(regression.label_ids([0.9, 2.5]), [0.9, 2.5])  # a score, not a class


def test_empty_inputs_and_label_lists(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(jit_compile=False)
    assert clf.predict([], verbose=0).shape == (0, 2)
    assert clf.predict(([], []), verbose=0).shape == (0, 2)
    with pytest.raises(ValueError, match="fit: there is nothing to fit: x holds no examples"):
        clf.fit([], [], verbose=0)
    for labels in ([], ["only"]):
        with pytest.raises(ValueError,
                           match=re.escape(f"labels={labels}: a classifier needs at least two labels")):
            BertClassifier(_encoder(preprocessor), labels=labels)
    with pytest.raises(ValueError, match="labels=\\['O'\\]: a classifier needs at least two labels"):
        BertTokenClassifier(_encoder(preprocessor), labels=["O"])


def test_unknown_label_in_a_dataset_is_named(preprocessor):
    clf = BertClassifier(_encoder(preprocessor), labels=["neg", "pos"], preprocessor=preprocessor)
    clf.compile(jit_compile=False)
    dataset = tf.data.Dataset.from_tensor_slices((["good", "bad"], ["pos", "meh"])).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"unknown label \(labels: neg, pos\); first unknown value:\] \[meh\]"):
        clf.evaluate(dataset, verbose=0)
