"""Served raw text is packed to each batch's longest input (rounded up to 8), not to the model's sequence
length: through TF's C++ loader every task answers as the fixed-length packing does (floats within 1e-5,
labels, offsets and entities exactly), long texts are still windowed, and a batch of an empty string beside
a 100,000-character text works."""

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
from keras_bert.export import export_saved_model, servability
from keras_bert.tasks.squad.answers import AnswerRules
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "over",
         "lazy", "dog", ".", ",", "a", "is", "hello", "world", "##ing", "?", "who", "ann"]
SEQ_LENGTH = 32
LONG = "hello world, the quick brown fox. " * 3000  # 102,000 characters
TEXTS = ["", LONG, "Who is Ann?", "the lazy dog jumps over the quick brown fox " * 2]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    model = BertEncoder(config)
    model.preprocessor = BertPreprocessor(BertTokenizer(str(vocab)), SEQ_LENGTH)
    return model


def _with_preprocessor(model, encoder):
    model.preprocessor = encoder.preprocessor
    return model


def test_dynamic_length_exports_answer_as_the_fixed_length_packing(encoder, tmp_path):
    cases = [
        ("classifier", BertClassifier(encoder, labels=["a", "b", "c"]), {"text": TEXTS}, {}),
        ("windows", BertClassifier(encoder, labels=["a", "b"]), {"text": TEXTS}, {"long_text": "windows"}),
        ("entities", BertTokenClassifier(encoder, labels=["O", "B-X", "I-X"]), {"text": TEXTS}, {}),
        ("span", BertSpanLabeler(encoder), {"question": ["who is ann?"] * 4, "context": TEXTS},
         {"answer_rules": AnswerRules(doc_stride=8, max_query_length=8, version_2_with_negative=True)}),
        ("choice", BertMultipleChoice(encoder, 2),
         {"text": TEXTS, "text_b": [[t, "a dog"] for t in TEXTS[::-1]]}, {}),
        ("embedding", encoder, {"text": TEXTS}, {"pooling": "mean", "normalize": True}),
    ]
    jobs = []
    for name, model, inputs, options in cases:
        model = _with_preprocessor(model, encoder)
        # The dynamic export (the default) is checked against the fixed-length answers in the C++ loader
        # below: strings exactly, numbers within 1e-5 (integer offsets and ids therefore exactly).
        fixed = model.serve(inputs, fixed_length=True, **options)
        arrays = str(tmp_path / f"{name}.npz")
        servability.save_check_arrays(arrays, {k: np.asarray(v, dtype=object) for k, v in inputs.items()},
                                      fixed)
        jobs.append({"export_dir": export_saved_model(model, str(tmp_path / name), **options),
                     "runs": [{"signature": "serving_default", "arrays": arrays}]})
    assert (fixed["sentence_embedding"].shape == (4, 16) and "sequence_output" not in fixed)  # answers only
    for (name, *_), report in zip(cases, servability.check_servable_subprocess(jobs, atol=1e-5), strict=True):
        assert "error" not in report, f"{name}: {report.get('error')}"
