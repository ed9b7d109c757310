"""Distilled students serve like any task model: a span labeler and a token classifier, each distilled into
a 1-layer student on small real text (the SQuAD-style passages and the CoNLL-2003 sentences of the other
tests), exported, and served by TF Serving's C++ loader (C API, fresh process): the served answers are the
student's own, as run_squad and run_ner predict them in Python."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder, BertTokenClassifier
from keras_bert.config import BertConfig
from keras_bert.distillation import TaskDistiller, distillation_dataset, make_student
from keras_bert.export import export_saved_model, servability
from keras_bert.tasks.ner.conll import read_conll_file
from keras_bert.tasks.ner.windows import training_windows
from keras_bert.tasks.squad import task as squad_task
from keras_bert.tasks.squad import windows as squad_windows
from keras_bert.tasks.squad.answers import AnswerRules
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.data.test_squad_answers import CONTEXTS, PASSAGES, QUESTIONS, SEQ_LENGTH, span_labeler, vocabulary
from tests.export.test_answers import entities_of_predictions, ner_predictions_file
from tests.recipes.test_run_ner import SENTENCES

TAGS = ["O", "I-PER", "I-ORG", "I-LOC", "I-MISC"]
RULES = AnswerRules(doc_stride=8, max_query_length=6, n_best_size=5, max_answer_length=6)


def _teacher_tagger(texts):
    """A random 2-layer, 16-wide BertTokenClassifier over the words of `texts`."""
    vocab = vocabulary(texts)
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary=vocab, lower_case=False), SEQ_LENGTH)
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    return BertTokenClassifier(BertEncoder(config), labels=TAGS, preprocessor=preprocessor)


def _distilled(teacher, inputs, targets, weights=None):
    """A 1-layer student of `teacher` after an epoch of distillation on gold (inputs, targets[, weights])
    and on the same inputs unlabelled (the teacher alone teaches those), with hidden states."""
    student = make_student(teacher, layers=1)
    gold = tf.data.Dataset.from_tensor_slices((inputs, targets) if weights is None
                                              else (inputs, targets, weights)).batch(4)
    unlabeled = tf.data.Dataset.from_tensor_slices(inputs).batch(4)
    distiller = TaskDistiller(teacher, student, temperature=2.0, alpha=0.5, hidden_weight=1.0)
    distiller.compile(optimizer=keras.optimizers.Adam(3e-3), jit_compile=False)
    before = [w.copy() for w in student.encoder.get_weights()]
    distiller.fit(distillation_dataset(teacher, gold, unlabeled=unlabeled, seed=0), epochs=1, verbose=0)
    assert any(np.abs(a - b).max() > 0 for a, b in zip(before, student.encoder.get_weights(), strict=True))
    return student


def _entities(path):
    """(start, end, type) character spans per sentence of run_ner's `token gold predicted` file, as served."""
    return [[(start, end, kind) for kind, start, end, _ in entities]
            for _, entities in entities_of_predictions(path)]


@pytest.mark.slow
def test_distilled_students_serve_their_own_answers(tmp_path):
    # Span labeler: windows of the questions over their contexts, gold "no answer" ([CLS]) beside the teacher.
    teacher = span_labeler(PASSAGES + QUESTIONS, seed=3)
    settings = squad_task.SquadSettings(
        max_seq_length=SEQ_LENGTH, doc_stride=RULES.doc_stride, max_query_length=RULES.max_query_length,
        n_best_size=RULES.n_best_size, max_answer_length=RULES.max_answer_length)
    paragraphs = [{"context": c, "qas": [{"id": f"q{i}", "question": q, "answers": []}]}
                  for i, (q, c) in enumerate(zip(QUESTIONS, CONTEXTS, strict=True))]
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}),
                   encoding="utf-8")
    task = squad_task.SquadTask(predict_file=str(dev), settings=settings)
    examples = task.read("eval")
    # No answers: every window's targets are [CLS].
    inputs, targets = squad_windows.training_arrays(examples, teacher.preprocessor, RULES)
    span_student = _distilled(teacher, inputs, targets)
    _, result = task.predict(span_student, examples, 3, teacher.preprocessor)  # run_squad's

    # Token classifier: the CoNLL-2003 sentences with their gold tags on each word's first piece.
    conll = tmp_path / "eng.testa"
    conll.write_text("\n\n".join("\n".join(f"{token} NNP I-NP {tag}" for token, tag in sentence)
                                  for sentence in SENTENCES) + "\n", encoding="utf-8")
    sentences = read_conll_file(str(conll), tag_list=TAGS)
    words = [" ".join(sentence.tokens) for sentence in sentences]
    tagger = _teacher_tagger(words)
    inputs, labels, weights = training_windows(sentences, tagger.preprocessor, TAGS)
    tag_student = _distilled(tagger, inputs, labels, weights)
    predictions = ner_predictions_file(tag_student, sentences, tagger.preprocessor, tmp_path, TAGS)

    jobs = []
    for name, student, arrays, kwargs in [
        ("span", span_student, {"question": QUESTIONS, "context": CONTEXTS},
         {"answer_rules": settings.answer_rules()}),
        ("tags", tag_student, {"text": words}, {}),
    ]:
        assert student.encoder.config.num_hidden_layers == 1
        version_dir = export_saved_model(student, tmp_path / name, student.preprocessor, **kwargs)
        path = tmp_path / f"{name}.npz"
        servability.save_check_arrays(path, {k: np.array([t.encode() for t in v], dtype=object)
                                             for k, v in arrays.items()}, None)
        jobs.append({"export_dir": version_dir, "runs": [{"signature": "serving_default", "arrays": path}]})
    span_report, tags_report = servability.check_servable_subprocess(jobs)
    for report in (span_report, tags_report):
        assert "error" not in report, report["error"]
        assert report["ops"]["missing"] == {}
    served = span_report["runs"][0]["outputs"]
    assert served["answer"] == [result.predictions[f"q{i}"] for i in range(len(QUESTIONS))]
    served = tags_report["runs"][0]["outputs"]
    got = [list(zip(*(served[k][row][:served["entity_count"][row]]
                      for k in ("entity_start", "entity_end", "entity_type")), strict=True))
           for row in range(len(words))]
    assert got == _entities(predictions)
