"""The export scripts: export_saved_model.py (TF Hub layout from a checkpoint), check_servable.py,
client.py."""

import contextlib
import io
import json
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from export import client
from keras_bert import BertConfig, BertEncoder
from keras_bert.checkpoints.ours import save_pretrained
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import run_in_process  # noqa: F401 (the fixture)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world", "good", "##s", "day", "!"]


def _script(name, *args):
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "export", name), *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.slow
def test_tfhub_export_from_checkpoint_and_check_servable_cli(tmp_path, run_in_process):  # noqa: F811
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    encoder = BertEncoder(BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64, max_position_embeddings=32))
    save_pretrained(encoder, str(tmp_path / "ckpt"), vocab_file=str(vocab_file))
    # export_saved_model.py's main in this process (no second TensorFlow import); its --check runs the
    # check_servable command in a fresh process, on both SavedModels, and fails the export if one fails.
    with contextlib.redirect_stdout(out := io.StringIO()):
        status, stderr = run_in_process("export.export_saved_model", f"--model_path={tmp_path / 'ckpt'}",
                                        f"--export_dir={tmp_path / 'hub'}", "--format=tfhub",
                                        "--max_seq_length=8", "--check")
    assert not status, stderr
    preprocess_dir, encoder_dir = out.getvalue().split()[:2]
    assert preprocess_dir == str(tmp_path / "hub" / "preprocess" / "1")
    assert encoder_dir == str(tmp_path / "hub" / "encoder" / "1")

    preprocessor = BertPreprocessor(BertTokenizer(str(vocab_file)), 8)
    texts = ["Hello worlds!", "good day " * 10, ""]
    want = preprocessor(tf.constant(texts))
    # The C++ loader runs the preprocessing SavedModel on the same strings.
    report = json.loads(_script("check_servable.py", f"--export_dir={preprocess_dir}",
                                *[f"--text={t}" for t in texts]))
    served = report["runs"][0]["outputs"]
    for name in want:
        np.testing.assert_array_equal(served[name], want[name].numpy())
    assert report["ops"]["tf_text"] == {"FastWordpieceTokenizeWithOffsets": "2.12"}

    # The Hub way of using the pair from Python.
    preprocess = tf.saved_model.load(preprocess_dir)
    hub_encoder = tf.saved_model.load(encoder_dir)
    a, b = preprocess.tokenize(tf.constant(texts)), preprocess.tokenize(tf.constant(texts[::-1]))
    packed = preprocess.bert_pack_inputs([a, b])
    want_pair = preprocessor((tf.constant(texts), tf.constant(texts[::-1])))
    for name in want_pair:
        np.testing.assert_array_equal(packed[name].numpy(), want_pair[name].numpy())
    outputs = hub_encoder(packed)
    expected = encoder(want_pair)
    np.testing.assert_allclose(outputs["pooled_output"], expected["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(outputs["encoder_outputs"][1], expected["encoder_outputs"][1], atol=1e-5)
    assert len(hub_encoder.trainable_variables) == len(encoder.trainable_variables)


def test_client_without_a_server_names_the_url():
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"http://127.0.0.1:{port}/v1/models/m:predict"
    # was: <urlopen error [Errno 111] Connection refused>, neither the URL nor a server named
    expected = (rf"^no model server answers at {re.escape(url)} \(\[Errno 111\] Connection refused\): "
                r"start TF Serving with its REST port there")
    with pytest.raises(ConnectionError, match=expected):
        client.predict_rest(url, {}, timeout=5)


def test_client_request_bodies():
    inputs = {"text": ["q1", "q2"], "text_b": ["c1", "c2"]}
    assert client.rest_body(inputs, "serving_default", "instances") == {
        "signature_name": "serving_default",
        "instances": [{"text": "q1", "text_b": "c1"}, {"text": "q2", "text_b": "c2"}]}
    assert client.rest_body(inputs, "serve_text_pair", "inputs") == {
        "signature_name": "serve_text_pair", "inputs": {"text": ["q1", "q2"], "text_b": ["c1", "c2"]}}


def test_client_prints_answers_of_row_and_columnar_responses():
    inputs = {"question": ["Where?", "Who?"], "context": ["It is in Zürich.", "Nobody."]}
    rows = {"predictions": [{"answer": "Zürich", "answer_start": 22, "answer_end": 28, "score": 1.25,
                             "no_answer_score": -0.5, "has_answer": True},
                            {"answer": "", "answer_start": 0, "answer_end": 0, "score": 0.0,
                             "no_answer_score": 2.0, "has_answer": False}]}
    columns = {"outputs": {name: [row[name] for row in rows["predictions"]]
                           for name in rows["predictions"][0]}}
    want = ["question: 'Where?'", "context: 'It is in Zürich.'",
            "  'Zürich' [22:28]  score 1.250  no-answer score -0.500",
            "question: 'Who?'", "context: 'Nobody.'", "  (none)  score 0.000  no-answer score 2.000"]
    assert client.example_lines(inputs, rows) == want
    assert client.example_lines(inputs, columns) == want
