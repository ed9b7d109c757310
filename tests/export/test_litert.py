"""LiteRT: a tiny model of each task converted once (module fixture), run through `load_litert` on LiteRT's
own runtime, answers equal to `serve()`; the dense packer against `BertPacker`; refusals. The tokenizer's
ids on the parity corpus: tests/text/test_fast_ops.py."""

import numpy as np
import pytest

from keras_bert import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertMultipleChoice,
    BertSpanLabeler,
    BertTokenClassifier,
)
from keras_bert.export import ExportError, export_litert, load_litert
from keras_bert.text import BertPreprocessor, BertTokenizer

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


@pytest.fixture(scope="module")
def converted(preprocessor, tmp_path_factory):
    """{task: (model, options, inputs, {quantize: runner})}: each converted once in float32, the encoder
    in int8 too."""
    config = BertConfig(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    folder = tmp_path_factory.mktemp("litert")
    result = {}
    for name, (make, options, inputs) in TASKS.items():
        model = make(BertEncoder(config))
        model.preprocessor = preprocessor
        signature = "text_pair" if "text_b" in inputs else None
        runners = {quantize: load_litert(export_litert(model, folder / f"{name}-{quantize}.tflite", quantize,
                                                       signature=signature, **options))
                   for quantize in ((None, "int8") if name == "encoder" else (None,))}
        result[name] = (model, dict(options, signature=signature), inputs, runners)
    return result


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
    del options["signature"]
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


def test_runner_names_a_missing_input_and_runs_an_empty_batch(converted):
    runner = converted["pair_classifier"][3][None]
    with pytest.raises(ValueError, match="takes .*text_b"):
        runner(text=TEXTS)
    empty = runner(text=TEXTS[:0], text_b=TEXTS[:0])
    assert empty["probabilities"].shape == (0, 2) and empty["label"].shape == (0,)
