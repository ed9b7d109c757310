"""Each fine-tuning recipe predicts from a `.keras` written by `save` with nothing beside it (its vocab,
casing, sequence length and labels come from the file), and writes what the model's `serve` answers:
the function an export of it serves (tests/models/test_task_harness.py checks that equality through TF's
C++ loader). A flag that contradicts the saved model is refused naming both values."""

import csv
import json
import os

import numpy as np
import pytest

from keras_bert import BertClassifier, BertConfig, BertEncoder, BertSpanLabeler, BertTokenClassifier
from keras_bert.tasks.squad.answers import AnswerRules
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.export.test_answers import entities_of_predictions
from tests.recipes.conftest import write_vocab

SEQ_LENGTH = 24
CONTEXT = "The bridge over the river was built in 1895 by Steve Smith and his company from Paris."
SENTENCES = [["Steve", "Smith", "visited", "Paris", "."], ["The", "river", "was", "quiet", "."] * 4]
TEXTS = ["The bridge was built in 1895.", "Steve Smith visited Paris", "river"]


def _saved(tmp_path, name, build, vocab):
    """`build(encoder)` on a tiny random encoder with a preprocessor of `vocab`, saved as
    <name>/<name>.keras."""
    tokenizer = BertTokenizer(vocab, lower_case=True)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)
    model = build(BertEncoder(config))
    model.preprocessor = BertPreprocessor(tokenizer, SEQ_LENGTH)
    os.makedirs(tmp_path / name)
    path = str(tmp_path / name / f"{name}.keras")
    model.save(path)
    return model, path


@pytest.mark.slow
def test_recipes_predict_from_a_lone_keras_file_as_it_serves(tmp_path, run_in_process):
    vocab, _ = write_vocab(tmp_path / "vocab.txt",
                           [CONTEXT, *TEXTS, " ".join(SENTENCES[1]), "who when built"])
    span, span_path = _saved(tmp_path, "span", BertSpanLabeler, vocab)
    ner, ner_path = _saved(tmp_path, "ner", lambda e: BertTokenClassifier(e, labels=["O", "B-PER", "I-PER"]),
                           vocab)
    clf, clf_path = _saved(tmp_path, "clf", lambda e: BertClassifier(e, labels=["bridge", "people"]), vocab)
    os.remove(vocab)  # nothing beside the .keras files

    squad_file = tmp_path / "dev.json"
    questions = {"q1": "Who built the bridge?", "q2": "When was it built?"}
    squad_file.write_text(json.dumps({"version": "v1.1", "data": [{"title": "t", "paragraphs": [{
        "context": CONTEXT,
        "qas": [{"id": k, "question": q, "answers": []} for k, q in questions.items()]}]}]}))
    conll_file = tmp_path / "test.conll"
    conll_file.write_text("".join("".join(f"{w} NNP I-NP O\n" for w in s) + "\n" for s in SENTENCES))
    csv_file = tmp_path / "predict.csv"
    with open(csv_file, "w", newline="") as f:
        csv.writer(f).writerows([["text"], *[[t] for t in TEXTS]])

    common = ["--do_train=false", "--nojit_compile"]
    runs = {
        "squad": ("run_squad", f"--init_checkpoint={span_path}", f"--predict_file={squad_file}",
                  "--do_predict", "--do_eval=false", "--doc_stride=8", "--max_query_length=8",
                  f"--output_dir={tmp_path / 'squad_out'}", *common),
        "ner": ("run_ner", f"--init_checkpoint={ner_path}", f"--predict_file={conll_file}", "--do_predict",
                "--do_eval=false", f"--output_dir={tmp_path / 'ner_out'}", *common),
        "clf": ("run_classifier", "--task_name=custom", f"--init_checkpoint={clf_path}",
                f"--predict_file={csv_file}", "--do_predict", "--do_eval=false",
                f"--output_dir={tmp_path / 'clf_out'}", *common),
        "contradiction": ("run_classifier", "--task_name=custom", f"--init_checkpoint={clf_path}",
                          f"--predict_file={csv_file}", "--do_predict", "--do_eval=false",
                          "--max_seq_length=65", f"--output_dir={tmp_path / 'refused'}", *common),
    }
    done = {name: run_in_process(*run) for name, run in runs.items()}  # (exit status, stderr)
    for name in ("squad", "ner", "clf"):
        assert done[name][0] is None, f"{name}:\n{done[name][1][-4000:]}"  # main returned

    predictions = json.loads((tmp_path / "squad_out" / "predictions.json").read_text())
    served = span.serve({"question": list(questions.values()), "context": [CONTEXT] * 2},
                        answer_rules=AnswerRules(doc_stride=8, max_query_length=8))
    assert [predictions[k] for k in questions] == [a.decode() for a in served["answer"]]

    expected = entities_of_predictions(tmp_path / "ner_out" / "test_predictions.txt")
    served = ner.serve({"text": [" ".join(s) for s in SENTENCES]})
    for (_, entities), texts, count in zip(expected, served["entity_text"], served["entity_count"],
                                           strict=True):
        assert [text for *_, text in entities] == [t.decode() for t in texts[:count]]

    with open(tmp_path / "clf_out" / "predictions.tsv") as f:
        labels = [row[1] for row in csv.reader(f, delimiter="\t")][1:]
    assert labels == [label.decode() for label in clf.serve({"text": TEXTS})["label"]]
    np.testing.assert_array_equal(clf.serve({"text": TEXTS})["label_id"],
                                  np.argmax(clf.predict(TEXTS, verbose=0), -1))

    code, stderr = done["contradiction"]
    assert code == 1
    # --max_seq_length overrides the saved length (as from_pretrained's seq_length=), up to the positions.
    assert "seq_length=65; expected 3 <= seq_length <= the model's max_position_embeddings=64" in stderr
    assert "--max_seq_length=65" in stderr.split("max_position_embeddings=64", 1)[1]
