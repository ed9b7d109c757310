"""Export: every model kind is exported, then loaded and run by TF Serving's C++ loader (C API, fresh
process)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
)
from keras_bert.export import ExportError, export_saved_model, servability
from keras_bert.export.saved_model import (
    next_version,
    prediction_log,
    serving_outputs,
    write_warmup,
)
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "over",
         "lazy", "dog", ".", ",", "a", "is", "hello", "world", "##ing", "?", "what"]
SEQ_LENGTH = 16
TEXTS = [b"The quick brown fox jumps over the lazy dog.", b"", b"\xff\xfe dog \xc3", b" dog ",
         ("hello world " * 300).encode()]


def tiny_config():
    return BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=64)


@pytest.fixture(scope="module")
def preprocessor(tmp_path_factory):
    vocab_file = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    return BertPreprocessor(BertTokenizer(str(vocab_file), lower_case=True), SEQ_LENGTH)


def _example(features):
    def feature(value):
        value = np.asarray(value)
        if value.dtype.kind in "SO":
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=list(value.reshape(-1))))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=value.reshape(-1).tolist()))
    return tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in features.items()})).SerializeToString()


def _expected(model, inputs, preprocessor=None):
    tensors = {k: tf.constant(v.tolist(), tf.string, v.shape) if v.dtype == object else tf.constant(v)
               for k, v in inputs.items()}
    if preprocessor is not None:
        tensors = model.text_inputs(tensors, preprocessor)
    return {k: v.numpy() for k, v in serving_outputs(model, tensors).items()}


def _run(tmp_path, label, signature, inputs, expected):
    path = tmp_path / f"{label}.npz"
    servability.save_check_arrays(path, inputs, expected)
    return {"signature": signature, "arrays": path}


@pytest.mark.slow
def test_every_model_kind_loads_and_runs_in_the_c_api(preprocessor, tmp_path):
    encoder = BertEncoder(tiny_config())
    texts = np.array(TEXTS, dtype=object)
    choices = {"text": texts, "text_b": np.stack([texts[::-1], texts], axis=1)}
    token_ids = {"input_word_ids": np.array([[2, 5, 6, 3, 0], [2, 13, 3, 12, 3]], np.int32),
                 "input_mask": np.array([[1, 1, 1, 1, 0], [1] * 5], np.int32),
                 "input_type_ids": np.array([[0] * 5, [0, 0, 0, 1, 1]], np.int32)}
    # (name, model, signature, raw-text inputs of serving_default or None for a token-id export). Raw text
    # for one single-text and the pair-with-choices model only: tracing the tokenizer graph is the slow part.
    exports = [
        ("classifier", BertClassifier(encoder, 3), "text", {"text": texts}),
        ("span_labeler", BertSpanLabeler(encoder), "token_ids", None),
        ("multiple_choice", BertMultipleChoice(encoder, 2), "text_pair", choices),
        ("encoder", encoder, "token_ids", None),
        ("token_classifier", BertTokenClassifier(encoder, 4), "token_ids", None),
        ("pretrainer", BertPretrainer(encoder), "token_ids", None),
    ]
    jobs = []
    for name, model, signature, text_inputs in exports:
        version_dir = export_saved_model(model, tmp_path / name, preprocessor if text_inputs else None,
                                         signature=signature, example_seq_length=5)
        assert version_dir == os.fspath(tmp_path / name / "1")
        assert sorted(os.listdir(tmp_path / name)) == ["1"]  # the temporary directory was renamed
        runs = []
        if text_inputs:
            text_want = _expected(model, text_inputs, preprocessor)
            runs.append(_run(tmp_path, f"{name}-text", "serving_default", text_inputs, text_want))
            empty = {k: v[:0] for k, v in text_inputs.items()}
            runs.append(_run(tmp_path, f"{name}-empty", "serving_default", empty,
                             _expected(model, empty, preprocessor)))
        ids = token_ids
        if name == "multiple_choice":
            ids = {k: np.stack([v, v[::-1]], axis=1) for k, v in token_ids.items()}
        if name == "pretrainer":
            ids = {**ids, "masked_lm_positions": np.array([[1, 2], [3, 1]], np.int32)}
        ids_want = _expected(model, ids)
        runs.append(_run(tmp_path, f"{name}-ids", "serve_token_ids", ids, ids_want))
        if name == "classifier":
            examples = np.array([_example({"text": [t]}) for t in TEXTS], dtype=object)
            runs.append(_run(tmp_path, f"{name}-examples", "serve_examples", {"examples": examples},
                             text_want))
        if name == "encoder":
            examples = np.array([_example({k: v[i] for k, v in token_ids.items()}) for i in range(2)],
                                dtype=object)
            runs.append(_run(tmp_path, f"{name}-examples", "serve_examples", {"examples": examples},
                             ids_want))
        jobs.append({"export_dir": version_dir, "runs": runs})

    # The classic `tf.saved_model.save` of a Keras 3 model: Python loads it, TF Serving's loader does not.
    classic = tmp_path / "classic"
    clf = exports[0][1]
    spec = {k: tf.TensorSpec([None, None], tf.int32, name=k) for k in token_ids}
    tf.saved_model.save(clf, str(classic), signatures=tf.function(
        lambda x: {"logits": clf(x, training=False)}, input_signature=[spec]))
    servability.save_check_arrays(tmp_path / "classic.npz", token_ids, None)
    jobs.append({"export_dir": classic,
                 "runs": [{"signature": "serving_default", "arrays": tmp_path / "classic.npz"}]})

    reports = {r["export_dir"]: r for r in servability.check_servable_subprocess(jobs)}
    assert "Could not find variable" in reports.pop(os.fspath(classic))["error"]
    reports = {os.path.basename(os.path.dirname(path)): r for path, r in reports.items()}

    for name, model, signature, text_inputs in exports:
        # Each weight is saved once (ExportArchive.track of the model would store every variable twice).
        data = [f for f in os.listdir(tmp_path / name / "1" / "variables") if f.startswith("variables.data")]
        size = sum(os.path.getsize(tmp_path / name / "1" / "variables" / f) for f in data)
        weights = sum(int(np.prod(v.shape)) * 4 for v in model.weights)
        assert weights <= size < 1.2 * weights + 4096, (name, size, weights)
        report = reports[name]
        assert "error" not in report, report["error"]
        assert report["warmup_requests"] == 2
        for run in report["runs"]:
            assert run["max_abs_diff"] and max(run["max_abs_diff"].values()) <= 1e-4, (name,
                                                                                        run["max_abs_diff"])
        assert report["ops"]["missing"] == {}
        if text_inputs:
            assert f"serve_{signature}" in report["signatures"]
            assert report["ops"]["tf_text"] == {"FastWordpieceTokenizeWithOffsets": "2.12"}
        else:
            assert report["ops"]["tf_text"] == {}
    # Bad input, as served: invalid UTF-8 bytes are dropped ("\xff\xfe dog \xc3" == " dog "), long text is
    # truncated, an empty string and an empty batch give defined outputs.
    served = reports["classifier"]["runs"][0]["outputs"]
    np.testing.assert_allclose(served["logits"][2], served["logits"][3], atol=1e-6)
    assert np.all(np.isfinite(served["logits"])) and len(served["label_id"]) == len(TEXTS)
    assert reports["classifier"]["runs"][1]["outputs"]["logits"] == []
    long_inputs = preprocessor(tf.constant([TEXTS[-1]]))
    assert int(tf.reduce_sum(long_inputs["input_mask"])) == SEQ_LENGTH
    choices_served = reports["multiple_choice"]["runs"][0]["outputs"]
    assert np.shape(choices_served["logits"]) == (len(TEXTS), 2)


def test_refuses_vocab_mismatch_existing_version_and_bad_signature(preprocessor, tmp_path):
    config = tiny_config()
    config.vocab_size = len(WORDS) + 1
    model = BertClassifier(BertEncoder(config), 2)
    with pytest.raises(ExportError,
                       match=r"vocab\.txt has 23 tokens but the model's config.vocab_size is 24"):
        export_saved_model(model, tmp_path, preprocessor)
    model = BertSpanLabeler(BertEncoder(tiny_config()))
    with pytest.raises(ExportError, match="signature='text_pair'"):
        export_saved_model(model, tmp_path, preprocessor, signature="text")
    with pytest.raises(ExportError, match="needs a preprocessor"):
        export_saved_model(model, tmp_path, None, signature="text_pair")
    (tmp_path / "3").mkdir()
    assert next_version(tmp_path) == 4
    with pytest.raises(ExportError, match=r"3 already exists.*next free: 4"):
        export_saved_model(model, tmp_path, None, version=3)
    assert sorted(os.listdir(tmp_path)) == ["3"]  # nothing half-written left behind


def test_warmup_file_is_a_prediction_log_tfrecord(tmp_path):
    inputs = {"text": np.array([b"hello", b""], dtype=object), "ids": np.array([[1, 2]], np.int32)}
    path = write_warmup(tmp_path, [("serving_default", inputs)])
    records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
    assert len(records) == 1 and records[0] == prediction_log(inputs)
    # The servability check decodes the records itself, signature and arrays as written (was: skipped,
    # "warmup_requests": null, without tensorflow-serving-api).
    ((signature, read),) = servability.warmup_requests(str(tmp_path))
    assert signature == "serving_default" and sorted(read) == ["ids", "text"]
    assert read["text"].tolist() == [b"hello", b""] and read["ids"].tolist() == [[1, 2]]
    prediction_log_pb2 = pytest.importorskip("tensorflow_serving.apis.prediction_log_pb2")
    log = prediction_log_pb2.PredictionLog.FromString(records[0])
    request = log.predict_log.request
    assert request.model_spec.signature_name == "serving_default"
    assert list(request.inputs["text"].string_val) == [b"hello", b""]
    np.testing.assert_array_equal(tf.make_ndarray(request.inputs["ids"]), [[1, 2]])


def test_op_report_flags_ops_serving_lacks():
    core = {"MatMul", "StringSplit"}
    report = servability.op_report({"MatMul", "TFText>RoundRobinTrim", "CaseFoldUTF8"}, core, set(), "2.19")
    assert report["tf_text"] == {"CaseFoldUTF8": "2.2", "TFText>RoundRobinTrim": "2.20"}
    assert list(report["missing"]) == ["TFText>RoundRobinTrim"] and report["min_serving_version"] == "2.20"
    report = servability.op_report({"TFText>Utf8Binarize", "MyCustomOp"}, core, {"TFText>Utf8Binarize"})
    assert "registered by tensorflow-text" in report["missing"]["TFText>Utf8Binarize"]
    assert "no library loaded here" in report["missing"]["MyCustomOp"]
    report = servability.op_report({"QuantizedMatMulWithBiasAndDequantize",
                                    "_MklQuantizedMatMulWithBiasAndDequantize"},
                                   {"QuantizedMatMulWithBiasAndDequantize",
                                    "_MklQuantizedMatMulWithBiasAndDequantize"},
                                   set())
    assert list(report["missing"]) == ["_MklQuantizedMatMulWithBiasAndDequantize"]
    # The calibrated int8 Dense's oneDNN op: reported (it ties the model to x86-64 oneDNN builds), allowed
    # where the loading build registers it.
    report = servability.op_report({"MatMul", "_QuantizedMatMul"}, core | {"_QuantizedMatMul"}, set(), "2.20")
    assert report["onednn"] == {"_QuantizedMatMul": "2.20"} and report["missing"] == {}
    report = servability.op_report({"_QuantizedMatMul"}, core, set(), "2.19")
    assert "lacks it" in report["missing"]["_QuantizedMatMul"]
