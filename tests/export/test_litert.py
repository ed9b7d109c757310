"""LiteRT: a tiny model of each task converted once (module fixture), run through `load_litert` on LiteRT's
own runtime, answers equal to `serve()`; the dense packer against `BertPacker`; refusals; the runner's
input checks (serve()'s own), its threads, and what its loads and the export print. The tokenizer's ids on
the parity corpus: tests/text/test_fast_ops.py."""

import contextlib
import os
import sys
import tempfile

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertMultipleChoice,
    BertSpanLabeler,
    BertTokenClassifier,
    native_logs,
)
from keras_bert.export import ExportError, export_litert, litert, load_litert
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import run_in_process  # noqa: F401  (a fixture: the export_litert script)

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "over",
         "lazy", "dog", ".", ",", "a", "is", "hello", "world", "##ing", "?", "what", "cafe"]
WORDS += [f"[unused{i}]" for i in range(60 - len(WORDS))]  # the 60 ids of the tiny_config fixture
TEXTS = np.array(["The quick brown fox jumps over the lazy dog.", "", "Café? hello world " * 9, "Dogs!",
                  "naïve fox, ЖЖ 狗 jumping"], dtype=object)
PAIRS = TEXTS[::-1]


def _own_pooling(encoder):
    """`encoder` with a sentence-transformers checkpoint's pooling, which the export serves by default."""
    encoder.sentence_pooling = ("mean", True)
    return encoder


# name: (model maker, serving options, inputs): one of each kind of served answers.
TASKS = {
    "encoder": (_own_pooling, {}, {"text": TEXTS}),
    "classifier": (lambda encoder: BertClassifier(encoder, labels=["neg", "pos", "mixed"]), {},
                   {"text": TEXTS}),
    "pair_classifier": (lambda encoder: BertClassifier(encoder, labels=["no", "yes"]), {},
                        {"text": TEXTS, "text_b": PAIRS}),
    "multiple_choice": (lambda encoder: BertMultipleChoice(encoder, 2), {},
                        {"text": TEXTS, "text_b": np.stack([PAIRS, TEXTS], axis=1)}),
}


@pytest.fixture(scope="module")
def preprocessor(tmp_path_factory):
    vocab_file = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    return BertPreprocessor(BertTokenizer(str(vocab_file), lower_case=True), 16)


@contextlib.contextmanager
def _fd2_lines(into):
    """Appends to `into` the lines file descriptor 2 receives in the block (the C++ logs' stream)."""
    with tempfile.TemporaryFile() as file:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(file.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            file.seek(0)
            into.extend(file.read().decode(errors="replace").splitlines())


@pytest.fixture(scope="module")
def printed():
    """The stderr lines of the conversions and loads of `converted` (the process's first LiteRT loads when
    this file runs alone: XNNPACK prints its line once per process)."""
    return []


@pytest.fixture(scope="module")
def converted(preprocessor, tmp_path_factory, printed):
    """{task: (model, options, inputs, {quantize: runner})}: each converted once in float32, the encoder
    in int8 too; what they print lands in `printed`."""
    config = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    folder = tmp_path_factory.mktemp("litert")
    result = {}
    with pytest.MonkeyPatch.context() as env, _fd2_lines(printed):
        env.delenv("KERAS_BERT_VERBOSE", raising=False)
        for name in TASKS:
            result[name] = _convert(name, config, preprocessor, folder)
    return result


def _convert(name, config, preprocessor, folder):
    """(model, options, inputs, {quantize: runner}) of TASKS[name], converted and loaded."""
    make, options, inputs = TASKS[name]
    model = make(BertEncoder(config))
    model.preprocessor = preprocessor
    signature = "text_pair" if "text_b" in inputs else None
    runners = {quantize: load_litert(export_litert(model, folder / f"{name}-{quantize}.tflite", quantize,
                                                   signature=signature, **options))
               for quantize in ((None, "int8") if name == "encoder" else (None,))}
    return model, dict(options, signature=signature), inputs, runners


@pytest.mark.parametrize("task", list(TASKS))
def test_answers_equal_serve(converted, task):
    model, options, inputs, runners = converted[task]
    want = model.serve(inputs, **options)
    assert sorted(runners[None].inputs) == sorted(inputs)
    for quantize, tolerance in ((None, 1e-4), ("int8", 0.05)):
        if quantize not in runners:
            continue
        got = runners[quantize](**inputs)
        assert sorted(got) == sorted(want)
        assert task != "encoder" or "sentence_embedding" in got  # the model's own pooling
        for name, value in want.items():
            assert got[name].shape == value.shape, (quantize, name)
            if value.dtype.kind == "f":
                np.testing.assert_allclose(got[name], value, atol=tolerance, err_msg=f"{quantize} {name}")
            elif quantize is None:
                np.testing.assert_array_equal(got[name], value, err_msg=name)
        if quantize == "int8":  # its weights are int8: near, but not the float32 numbers
            floats = [name for name, value in want.items() if value.dtype.kind == "f"]
            assert max(np.max(np.abs(got[name] - want[name])) for name in floats) > 0
    lone = runners[None](**{name: value[:1] for name, value in inputs.items()})
    batch = runners[None](**inputs)
    for name, value in lone.items():  # a batch of one pads to its own length only
        if value.dtype.kind == "f":
            np.testing.assert_allclose(value[0], batch[name][0], atol=1e-5)


def test_float16_weights_agree(converted, tmp_path):
    model, options, inputs, runners = converted["encoder"]
    float16 = load_litert(export_litert(model, tmp_path / "f16.tflite", "float16", **options))
    got, want = float16(**inputs)["sentence_embedding"], runners[None](**inputs)["sentence_embedding"]
    assert 0 < np.max(np.abs(got - want)) < 1e-3  # float16 weights: near, but not the float32 numbers


@pytest.mark.parametrize("make", [lambda encoder: BertTokenClassifier(encoder, labels=["O", "B-PER"]),
                                  BertSpanLabeler])
def test_tasks_whose_answers_need_string_ops_are_refused(preprocessor, tmp_path, make):
    config = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=72)
    model = make(BertEncoder(config))
    model.preprocessor = BertPreprocessor(preprocessor.tokenizer, 72)  # room for a 64-piece question
    with pytest.raises(ExportError, match="cannot be exported to LiteRT: .*Substr.*no kernel for$"):
        export_litert(model, tmp_path / "refused.tflite")
    assert not (tmp_path / "refused.tflite").exists()


def _error(call):
    with pytest.raises(ValueError) as error:
        call()
    return str(error.value)


PAIR = TEXTS[:2]
# task: inputs serve() refuses, each with its own line.
REFUSED = [("pair_classifier", {"text": PAIR, "text_b": PAIR[:1]}),  # batch sizes 2 and 1
           ("pair_classifier", {"text": PAIR[:, None], "text_b": PAIR}),  # text of rank 2
           ("pair_classifier", {"text": PAIR}),  # text_b missing
           ("pair_classifier", {"text": PAIR, "text_b": PAIR, "label": PAIR}),  # not an input
           ("pair_classifier", {"text": np.array([1, 2]), "text_b": PAIR}),  # not strings
           ("classifier", {"text": "one text"}),  # a string, not a batch
           ("multiple_choice", {"text": PAIR, "text_b": np.stack([PAIR] * 3, axis=1)}),  # 3 choices, not 2
           ("multiple_choice", {"text": PAIR, "text_b": [list(PAIR), [*PAIR, "x"]]})]  # rows of 2 and 3


@pytest.mark.parametrize("task, inputs", REFUSED)
def test_runner_refuses_what_serve_refuses_with_its_line_and_the_file(converted, task, inputs):
    model, options, _, runners = converted[task]
    runner = runners[None]
    served = _error(lambda: model.serve(inputs, **options))
    assert _error(lambda: runner(**inputs)) == f"{runner.path}: {served}"


def test_runner_runs_an_empty_batch(converted):
    empty = converted["pair_classifier"][3][None](text=TEXTS[:0], text_b=TEXTS[:0])
    assert empty["probabilities"].shape == (0, 2) and empty["label"].shape == (0,)


def test_invalid_utf8_and_replacement_characters_are_dropped_as_serve_drops_them(converted):
    model, options, inputs, runners = converted["encoder"]
    # TEXTS with invalid bytes and U+FFFD inside words: serve() drops them, reading TEXTS again.
    corrupt = np.array([text.encode() for text in TEXTS], dtype=object)
    corrupt[0] = corrupt[0].replace(b"fox", b"fo\xffx")
    corrupt[2] = corrupt[2].replace(b"hello", "hel\ufffdlo".encode())
    corrupt[3] = corrupt[3].replace(b"Dogs", b"Do\xe2\x82gs")
    corrupt[4] = corrupt[4].replace(b"fox", b"\xed\xa0\x80fox\xc3")
    want = model.serve(inputs, **options)["sentence_embedding"]
    served = model.serve({"text": corrupt}, **options)["sentence_embedding"]
    np.testing.assert_allclose(served, want, atol=1e-6)
    np.testing.assert_allclose(runners[None](text=corrupt)["sentence_embedding"], want, atol=1e-4)
    # The .tflite's own normalizer reads them as U+FFFD: other pieces, another embedding.
    raw = runners[None]._runner(text=corrupt)["sentence_embedding"]
    assert np.min(np.max(np.abs(raw - want), axis=1)[[0, 2, 3, 4]]) > 1e-2


def test_load_names_the_file_and_what_it_expected(converted, tmp_path):
    flatbuffer = open(converted["classifier"][3][None].path, "rb").read()
    (tmp_path / "truncated.tflite").write_bytes(flatbuffer[: len(flatbuffer) // 2])
    function = tf.function(lambda x: {"y": x * 2.0}, input_signature=[tf.TensorSpec([None, 3], name="x")])
    concrete = function.get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([concrete], tf.Module())  # a signature
    (tmp_path / "foreign.tflite").write_bytes(converter.convert())
    expected = "expected a .tflite written by keras_bert.export.export_litert"
    for name, error, why in [("", IsADirectoryError, " is a directory; "),
                             ("missing.tflite", FileNotFoundError, ": no such file; "),
                             ("truncated.tflite", ValueError, r" is not a model LiteRT runs \(.*buffer\); "),
                             ("foreign.tflite", ValueError,
                              r": its serving_default takes `x` \(float32 \[None, 3\]\); ")]:
        path = tmp_path / name
        with pytest.raises(error, match=f"^{path}{why}{expected}"):
            load_litert(path)


@pytest.mark.skipif(len(getattr(os, "sched_getaffinity", lambda pid: ())(0)) < 2,
                    reason="needs a CPU affinity of two CPUs or more to narrow")
def test_threads_follow_the_cpu_affinity(converted):
    runner = converted["classifier"][3][None]
    cpus = os.sched_getaffinity(0)
    assert runner.num_threads == len(cpus)
    os.sched_setaffinity(0, {min(cpus)})
    try:
        lone = load_litert(runner.path)
    finally:
        os.sched_setaffinity(0, cpus)
    assert lone.num_threads == 1 and load_litert(runner.path, num_threads=3).num_threads == 3
    np.testing.assert_allclose(lone(text=TEXTS)["logits"], runner(text=TEXTS)["logits"], atol=1e-5)


def test_export_and_load_print_nothing(converted, printed):
    assert len(converted) == len(TASKS) and printed == []


# LiteRT's lines as ai_edge_litert 2.3 / TF 2.21 print them: the converter's list of custom ops (under a
# W0000 line), XNNPACK's delegate at a load.
LITERT_LINES = [b"Custom ops: FastBertNormalize, FastWordpieceTokenizeWithOffsets\n", b"Details:\n",
                b"\ttf.FastBertNormalize(tensor<?x!tf_type.string>, tensor<254136xui8>) -> (tensor<?x!tf_type"
                b".string>, tensor<?xi64>, tensor<?xi64>) : {device = \"\", get_offsets = false}\n",
                b"See instructions: https://www.tensorflow.org/lite/guide/ops_custom\n",
                b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\n"]


@pytest.mark.parametrize("line", LITERT_LINES)
def test_litert_lines_are_noise(line):
    assert native_logs.NOISE.match(line) and native_logs._may_be_noise(line[:12])


@pytest.fixture
def no_conversion(monkeypatch):
    """export_litert's conversion, failing the test where it starts."""
    def converted(*args):
        raise AssertionError("the conversion started")

    monkeypatch.setattr(litert, "_converted", converted)


def test_export_refuses_a_seq_length_beyond_the_position_embeddings(converted, preprocessor, tmp_path,
                                                                    no_conversion):
    model = converted["classifier"][0]
    with pytest.raises(ExportError, match=r"^the preprocessor's seq_length=100; expected 3 <= seq_length <= "
                                          r"the model's max_position_embeddings=64$"):
        export_litert(model, tmp_path / "long.tflite",
                      preprocessor=BertPreprocessor(preprocessor.tokenizer, 100))
    assert not (tmp_path / "long.tflite").exists()


MISSING = ("LiteRT's runtime (module ai_edge_litert) is not installed: pip install 'keras-bert-tf[litert]' "
           "(or ai-edge-litert)")


def test_without_the_runtime_export_load_and_script_say_what_to_install(converted, tmp_path, monkeypatch,
                                                                       no_conversion, request):
    model, _, _, runners = converted["classifier"]
    run_script = request.getfixturevalue("run_in_process")
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)  # as if ai-edge-litert were not installed
    path = runners[None].path
    for call in (lambda: export_litert(model, tmp_path / "m.tflite"), lambda: load_litert(path)):
        with pytest.raises(litert.MissingRuntimeError) as error:
            call()
        assert str(error.value) == MISSING and isinstance(error.value, ImportError)
    keras_file = tmp_path / "m.keras"
    keras_file.write_bytes(b"not read")
    assert run_script("export.export_litert", f"--model_path={keras_file}",
                      f"--output_file={tmp_path / 'm.tflite'}") == (1, f"error: {MISSING}\n")
    assert not (tmp_path / "m.tflite").exists()
