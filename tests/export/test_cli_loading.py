"""The export CLIs load --model_path through the one loader (`recipes.common.load_model` ->
`keras_bert.load_pretrained_model`): --vocab_file, --do_lower_case and --max_seq_length apply to any format,
a task checkpoint keeps its head and label names whatever flags come with it, and a length beyond the
position embeddings is refused in one line."""

import importlib.util

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertConfig, BertEncoder, load_pretrained_model, save_huggingface
from keras_bert.checkpoints.ours import save_pretrained
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import run_in_process  # noqa: F401 (the fixture)

# "Good" and "good" are both pieces: the casing changes the ids, so the outputs.
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "Good", "bad", "day", "movie", "!"]
LABELS = ["neg", "pos"]
LONG = "Good day! " * 12  # 36 pieces: cut at 16, not at 32
TEXTS = [LONG, "good movie", "Bad day"]
CONFIG = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=32, max_position_embeddings=32,
                    initializer_range=0.5)  # weights large enough that every piece moves the outputs


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{"vocab": vocab.txt, "encoder": our checkpoint directory of an encoder, "task": a Hugging Face
    BertForSequenceClassification directory with id2label LABELS, "keras": the same classifier's .keras}."""
    root = tmp_path_factory.mktemp("checkpoints")
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    save_pretrained(BertEncoder(CONFIG), str(root / "encoder"), vocab_file=str(vocab))
    preprocessor = BertPreprocessor(BertTokenizer(str(vocab), lower_case=False), 16)
    classifier = BertClassifier(BertEncoder(CONFIG), labels=LABELS, preprocessor=preprocessor)
    save_huggingface(classifier, str(root / "task"))
    classifier.save(str(root / "clf.keras"))
    return {"vocab": str(vocab), "encoder": str(root / "encoder"), "task": str(root / "task"),
            "keras": str(root / "clf.keras")}


def _served(version_dir, texts):
    serving = tf.saved_model.load(version_dir).signatures["serving_default"]
    return {name: value.numpy() for name, value in serving(text=tf.constant(texts)).items()}


def test_export_saved_model_applies_every_override_to_a_checkpoint_directory(checkpoints, tmp_path,
                                                                           run_in_process):  # noqa: F811
    # was: ValueError: Cannot convert '.../vocab.txt' to a mixed precision DTypePolicy (positional call)
    status, stderr = run_in_process(
        "export.export_saved_model", f"--model_path={checkpoints['encoder']}", f"--export_dir={tmp_path}/out",
        f"--vocab_file={checkpoints['vocab']}", "--do_lower_case=false", "--max_seq_length=16", "--nocheck",
        "--nowarmup")
    assert status is None, stderr
    served = _served(run_in_process.stdout.split()[0], TEXTS)
    want = load_pretrained_model(checkpoints["encoder"], vocab_file=checkpoints["vocab"], lower_case=False,
                                 seq_length=16)
    assert want.preprocessor.seq_length == 16 and not want.preprocessor.tokenizer.lower_case
    np.testing.assert_allclose(served["pooled_output"], want.serve({"text": TEXTS})["pooled_output"],
                               atol=1e-5)
    # Each override shows in the answers: another length or casing serves other numbers.
    for other in ({"seq_length": 32, "lower_case": False}, {"seq_length": 16, "lower_case": True}):
        unlike = load_pretrained_model(checkpoints["encoder"], **other).serve({"text": TEXTS})
        assert np.abs(unlike["pooled_output"][0] - served["pooled_output"][0]).max() > 1e-2


@pytest.mark.parametrize("script", ["export_saved_model", "export_litert"])
def test_a_task_checkpoint_exports_with_its_head_given_a_vocab_file(checkpoints, tmp_path, script,
                                                                    run_in_process):  # noqa: F811
    if script == "export_litert" and importlib.util.find_spec("ai_edge_litert") is None:
        pytest.skip("LiteRT's runtime (ai_edge_litert) is not installed")
    output = (f"--export_dir={tmp_path}/out", "--nocheck", "--nowarmup") if script == "export_saved_model" \
        else (f"--output_file={tmp_path}/clf.tflite",)
    # was (export_litert): --vocab_file took load_encoder, so a bare encoder without the task's head
    status, stderr = run_in_process(f"export.{script}", f"--model_path={checkpoints['task']}",
                                    f"--vocab_file={checkpoints['vocab']}", *output)
    assert status is None, stderr
    path = run_in_process.stdout.split()[0]
    if script == "export_litert":
        from keras_bert.export import load_litert

        served = load_litert(path)(text=np.array(TEXTS, dtype=object))
    else:
        served = _served(path, TEXTS)
    want = BertClassifier.from_pretrained(checkpoints["task"]).serve({"text": TEXTS})
    assert [label.decode() for label in np.asarray(served["label"]).tolist()] == \
        [label.decode() for label in want["label"]]
    np.testing.assert_allclose(served["logits"], want["logits"], atol=1e-4)


@pytest.mark.parametrize("script, output, source", [
    ("export_saved_model", "--export_dir={}/out", "task"),
    ("export_litert", "--output_file={}/m.tflite", "keras")])
def test_a_length_beyond_the_position_embeddings_is_refused(checkpoints, tmp_path, script, output, source,
                                                            run_in_process):  # noqa: F811
    # was (export_litert of a .keras): a .tflite packed to 100000 that then failed at its first call
    status, stderr = run_in_process(f"export.{script}", f"--model_path={checkpoints[source]}",
                                    output.format(tmp_path), "--max_seq_length=100000")
    assert status == 1
    assert "seq_length=100000; expected 3 <= seq_length <= the model's max_position_embeddings=32" in stderr
    assert "--max_seq_length=100000" in stderr.split("seq_length=100000;", 1)[1]
