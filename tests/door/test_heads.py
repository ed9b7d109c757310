"""A recipe's --init_checkpoint of a task checkpoint goes through the loader `from_pretrained` uses
(`resolve_pretrained` -> `Pretrained.head`, `labels`): a trained head of the task's labels is loaded; other
labels are refused naming both lists, and start fresh only with --head=fresh."""

import os

import keras
import numpy as np
import pytest

from keras_bert import BertClassifier
from tests.recipes.conftest import write_vocab

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TEXTS = ["a good film", "a bad film", "good acting", "bad plot"]
SEQ_LENGTH = 16


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    """A tiny random transformers BertForSequenceClassification (labels neg, pos) saved with a vocab.txt."""
    directory = tmp_path_factory.mktemp("hf_classifier")
    _, size = write_vocab(directory / "vocab.txt", TEXTS)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=size, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                                     id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1})
    model = transformers.BertForSequenceClassification(config).eval()
    torch.nn.init.normal_(model.classifier.weight, std=0.5)  # logits that tell the texts apart
    model.save_pretrained(directory)
    return str(directory)


def _train_file(tmp_path, labels):
    path = tmp_path / "train.csv"
    rows = "".join(f"{text},{label}\n" for text, label in zip(TEXTS, labels, strict=True))
    path.write_text("text,label\n" + rows)
    return str(path)


def _run(run_in_process, checkpoint, train, out, *extra):
    # One step of a vanishing learning rate: the saved model is the loaded one.
    return run_in_process("run_classifier", f"--init_checkpoint={checkpoint}", f"--train_file={train}",
                          "--do_eval=false", f"--output_dir={out}", "--num_train_epochs=1",
                          "--train_batch_size=4", "--learning_rate=1e-12", f"--max_seq_length={SEQ_LENGTH}",
                          "--nojit_compile", *extra)


def test_the_recipe_keeps_a_trained_head_of_the_task_labels(run_in_process, hf_classifier, tmp_path, caplog):
    train = _train_file(tmp_path, ["neg", "pos", "pos", "neg"])
    with caplog.at_level("INFO", logger="keras_bert"):
        status, stderr = _run(run_in_process, hf_classifier, train, tmp_path / "out")
    assert not status, stderr
    assert (f"model: the encoder and trained classifier head of {hf_classifier} (labels ['neg', 'pos'])"
            in caplog.messages)
    recipe = keras.saving.load_model(str(tmp_path / "out" / "model.keras"), compile=False)
    library = BertClassifier.from_pretrained(hf_classifier, seq_length=SEQ_LENGTH)
    assert recipe.labels == library.labels == ["neg", "pos"]
    np.testing.assert_allclose(recipe.get_layer("classifier").kernel.numpy(),
                               library.get_layer("classifier").kernel.numpy(), atol=1e-6)
    np.testing.assert_allclose(recipe.predict(TEXTS, verbose=0), library.predict(TEXTS, verbose=0), atol=1e-5)


def test_other_labels_are_refused_naming_both_unless_head_fresh(run_in_process, hf_classifier, tmp_path):
    train = _train_file(tmp_path, ["bad", "good", "good", "bad"])
    status, stderr = _run(run_in_process, hf_classifier, train, tmp_path / "refused")
    assert status == 1 and len(stderr.splitlines()) == 1, stderr
    assert (f"{hf_classifier} holds a trained classifier head of labels ['neg', 'pos'] but the task has "
            "labels ['bad', 'good']; pass --head=fresh to start a fresh head" in stderr)
    assert not os.path.exists(tmp_path / "refused" / "model.keras")
    status, stderr = _run(run_in_process, hf_classifier, train, tmp_path / "fresh", "--head=fresh")
    assert not status, stderr
    fresh = keras.saving.load_model(str(tmp_path / "fresh" / "model.keras"), compile=False)
    trained = BertClassifier.from_pretrained(hf_classifier, seq_length=SEQ_LENGTH)
    library = BertClassifier.from_pretrained(hf_classifier, labels=["bad", "good"], head="fresh")
    assert library.labels == fresh.labels  # the library's words are the flag's
    assert fresh.labels == ["bad", "good"]
    assert not np.allclose(fresh.get_layer("classifier").kernel.numpy(),
                           trained.get_layer("classifier").kernel.numpy(), atol=1e-3)
    np.testing.assert_allclose(fresh.encoder.pooler.kernel.numpy(), trained.encoder.pooler.kernel.numpy(),
                               atol=1e-6)  # the encoder is the checkpoint's either way
