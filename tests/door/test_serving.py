"""Served inputs checked at the door: each bad request gets one line naming the input and what it must be,
the same text from `serve` (ValueError), from the SavedModel through `tf.saved_model.load` and through TF
Serving's C++ loader (InvalidArgument: the checks run in the graph)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertConfig, BertEncoder
from keras_bert.export import export_saved_model, servability
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "dog"]
TEXT = "serving input `text` must be tf.string of shape [batch]"
TEXT_B = "serving input `text_b` must be tf.string of shape [batch]"
WORD_IDS = "serving input `input_word_ids` must be tf.int32 of shape [batch, any]"
IDS = np.zeros([2, 4], np.int32)


def _strings(*shape):
    return np.full(shape, b"the fox", dtype=object)


# (signature, inputs, the line): requests that reach the graph, refused alike by every runtime.
GRAPH_ROWS = [
    ("serve_text_pair", {"text": np.array(b"fox", dtype=object), "text_b": _strings(1)},
     f"{TEXT}; got shape []"),
    ("serve_text_pair", {"text": _strings(1, 1), "text_b": _strings(1)}, f"{TEXT}; got shape [1 1]"),
    ("serve_text_pair", {"text": _strings(2, 2), "text_b": _strings(2)}, f"{TEXT}; got shape [2 2]"),
    ("serve_text_pair", {"text": _strings(2), "text_b": _strings(2, 1)}, f"{TEXT_B}; got shape [2 1]"),
    ("serve_text_pair", {"text": _strings(2), "text_b": _strings(3)},
     "serving inputs `text` and `text_b` must have the same batch size; got 2 and 3"),
    ("serve_token_ids", {"input_word_ids": IDS[0], "input_mask": IDS, "input_type_ids": IDS},
     f"{WORD_IDS}; got shape [4]"),
    ("serve_token_ids", {"input_word_ids": IDS, "input_mask": IDS[:1], "input_type_ids": IDS},
     "serving inputs `input_word_ids` and `input_mask` must have the same batch size; got 2 and 1"),
]

# (signature, inputs, the line): what only Python's `serve` sees; the loaded signatures' own binding (TF's
# function call, TF Serving's request parsing) refuses these before any graph runs.
PYTHON_ROWS = [
    ("text", {"text": ["the fox"], "text_b": ["a dog"]},
     "serving input `text_b` is not in this signature; it takes `text` (tf.string of shape [batch])"),
    ("text_pair", {"text": ["the fox"]}, f"{TEXT_B}; it is missing"),
    ("text", {"text": "fox"}, f"{TEXT}; got shape []"),
    ("text", {"text": [None]}, f"{TEXT}; got NoneType values"),
    ("text", {"text": [1, 2]}, f"{TEXT}; got int values"),
    ("text", {"text": tf.constant([1.5])}, f"{TEXT}; got float32 values"),
    ("text", {"text": tf.ragged.constant([["a"], []])}, f"{TEXT}; got a RaggedTensor"),
    ("token_ids", {"input_word_ids": IDS.astype(np.float32), "input_mask": IDS, "input_type_ids": IDS},
     f"{WORD_IDS}; got float32 values"),
    ("text", ["the fox"], "serving inputs must be a dict {name: batch} of ['text']; got a list"),
]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A single-text or pair classifier of 8 hidden units over a 10-word vocab, with its preprocessor."""
    (vocab := tmp_path_factory.mktemp("vocab") / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    encoder = BertEncoder(BertConfig(vocab_size=len(WORDS), hidden_size=8, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=16, max_position_embeddings=32))
    return BertClassifier(encoder, 2,
                          preprocessor=BertPreprocessor(BertTokenizer(str(vocab), lower_case=True), 16))


@pytest.fixture(scope="module")
def export_dir(model, tmp_path_factory):
    return export_saved_model(model, tmp_path_factory.mktemp("export"), signature="text_pair", warmup=False)


def _form(signature):
    return signature.removeprefix("serve_")


@pytest.mark.parametrize(("signature", "inputs", "line"), GRAPH_ROWS + PYTHON_ROWS)
def test_serve_refuses_with_one_line(model, signature, inputs, line):
    with pytest.raises(ValueError) as caught:
        model.serve(inputs, signature=_form(signature))
    assert str(caught.value) == line


def test_loaded_signatures_refuse_with_the_same_line(export_dir):
    loaded = tf.saved_model.load(export_dir)
    for signature, inputs, line in GRAPH_ROWS:
        function = loaded.signatures[signature]
        with pytest.raises(tf.errors.InvalidArgumentError) as caught:
            function(**{name: tf.constant(value) for name, value in inputs.items()})
        assert f"assertion failed: [{line}]" in caught.value.message, signature
    pair = loaded.signatures["serve_text_pair"]
    assert pair(text=tf.constant(["the fox"]), text_b=tf.constant(["a dog"]))["probabilities"].shape == (1, 2)
    # What only `serve` words: TF's binding of a loaded signature refuses it before the graph, in its words.
    for kwargs in ({"text": tf.constant(["a"]), "text_b": tf.constant(["b"]), "label": tf.constant(["c"])},
                   {"text": tf.constant(["a"])}, {"text": tf.constant([1]), "text_b": tf.constant(["b"])}):
        with pytest.raises((TypeError, ValueError, tf.errors.InvalidArgumentError)):
            pair(**kwargs)


def test_cpp_loader_refuses_with_the_same_line(export_dir, tmp_path):
    refused = []
    for index, (signature, inputs, _) in enumerate(GRAPH_ROWS):
        path = tmp_path / f"row{index}.npz"
        servability.save_check_arrays(path, inputs, None)
        refused.append({"signature": signature, "arrays": path})
    (report,) = servability.check_servable_subprocess([{"export_dir": export_dir, "refused": refused}])
    assert "error" not in report, report.get("error")
    for (signature, _, line), error in zip(GRAPH_ROWS, report["refused"], strict=True):
        assert error is not None and f"assertion failed: [{line}]" in error, (signature, error)
        assert "Traceback" not in error
