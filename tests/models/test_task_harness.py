"""Every task model through the harness (`tests.harness.run_task_test`): from_pretrained -> compile() -> fit
on a few raw examples -> serve -> save -> load -> export -> TF Serving's C++ loader, which must answer
exactly what `serve` returned in Python."""

import numpy as np
import pytest

from keras_bert import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertMultipleChoice,
    BertPretrainer,
    BertSpanLabeler,
    BertTokenClassifier,
    save_pretrained,
)
from keras_bert.export import servability
from keras_bert.tasks.squad.answers import AnswerRules
from tests.harness import run_task_test

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "over",
         "lazy", "dog", ".", ",", "a", "is", "hello", "world", "##ing", "?", "what", "who", "ann", "paris"]
SEQ_LENGTH = 16
TEXTS = ["The quick brown fox jumps over the lazy dog.", "", "hello world " * 20, "Who is Ann?"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny pre-trained checkpoint directory (our format) with its vocab.txt beside it."""
    directory = tmp_path_factory.mktemp("ckpt")
    vocab = directory / "vocab-src.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    return save_pretrained(BertEncoder(config), str(directory / "bert"), str(vocab))


def _fit(x, y):
    def fit(model):
        model.compile()
        history = model.fit(x, y, batch_size=2, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][-1])
    return fit


def _fit_ids(y):
    """fit on the ids the model's own preprocessor packs (a span labeler's targets are positions)."""
    def fit(model):
        import tensorflow as tf

        ids = model.text_inputs({"text": tf.constant(TEXTS[:2]), "text_b": tf.constant(TEXTS[2:])})
        model.compile()
        model.fit({k: v.numpy() for k, v in ids.items()}, y, batch_size=2, epochs=1, verbose=0)
    return fit


def test_every_task_model_serves_the_same_in_python_and_in_the_cpp_loader(checkpoint, tmp_path):
    endings = [[TEXTS[0], TEXTS[3]], [TEXTS[2], TEXTS[1]]]
    cases = [
        (BertClassifier.from_pretrained(checkpoint, labels=["neg", "pos"], seq_length=SEQ_LENGTH),
         {"text": TEXTS}, _fit(TEXTS, ["neg", "pos", "pos", "neg"]), None, ("label", "probabilities")),
        (BertTokenClassifier.from_pretrained(checkpoint, labels=["O", "B-PER", "I-PER"],
                                             seq_length=SEQ_LENGTH),
         {"text": TEXTS}, _fit(TEXTS, np.ones([4, SEQ_LENGTH], np.int32)), None,
         ("entity_text", "entity_start")),
        (BertSpanLabeler.from_pretrained(checkpoint, seq_length=SEQ_LENGTH),
         {"question": ["Who is Ann?", "what?"], "context": [TEXTS[0] * 3, TEXTS[3]]},
         _fit_ids({"start_logits": np.array([1, 2]), "end_logits": np.array([2, 3])}),
         {"answer_rules": AnswerRules(doc_stride=4, max_query_length=6)},
         ("answer", "answer_start", "answer_end")),
        (BertMultipleChoice.from_pretrained(checkpoint, num_choices=2, seq_length=SEQ_LENGTH),
         {"text": TEXTS[:2], "text_b": endings}, _fit((TEXTS[:2], endings), [1, 0]), None, ("choice",)),
        (BertEncoder.from_pretrained(checkpoint, seq_length=SEQ_LENGTH), {"text": TEXTS}, None,
         {"pooling": "mean", "normalize": True}, ("sentence_embedding",)),
        (BertPretrainer.from_pretrained(checkpoint, seq_length=SEQ_LENGTH), {"text": TEXTS}, None, None,
         ("masked_lm_ids",)),
    ]
    jobs = []
    for model, inputs, fit, options, answers in cases:
        served, job = run_task_test(model, inputs, tmp_path, fit=fit, serve_options=options)
        assert set(answers) <= set(served), f"{type(model).__name__} serves {sorted(served)}"
        jobs.append(job)
    reports = servability.check_servable_subprocess(jobs, atol=0.0)
    for (model, *_), report in zip(cases, reports, strict=True):
        assert "error" not in report, f"{type(model).__name__}: {report.get('error')}"
        assert report["runs"][0]["max_abs_diff"], type(model).__name__


def test_sentence_pairs_serve_as_predict_scores_them(checkpoint):
    clf = BertClassifier.from_pretrained(checkpoint, num_classes=3, seq_length=SEQ_LENGTH)
    served = clf.serve({"text": TEXTS[:2], "text_b": TEXTS[2:]}, signature="text_pair")
    np.testing.assert_allclose(served["logits"], clf.predict((TEXTS[:2], TEXTS[2:]), verbose=0), atol=1e-5)
    assert served["label_id"].tolist() == np.argmax(served["logits"], -1).tolist()
