"""One assembly (`keras_bert.models.assembly.assemble`): every way a model enters from a checkpoint reads it
once and builds the same model, and a Hugging Face task checkpoint keeps its trained head wherever it
enters: the library's loaders, fine-tuning (by hub name too), the export served by TF Serving's C++ loader,
and distillation."""

import csv
import json
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
import torch
import transformers

import keras_bert.checkpoints as checkpoints_module
import keras_bert.models.assembly as assembly_module
import keras_bert.models.pretrained as pretrained_module
from keras_bert import (
    BertClassifier,
    BertEncoder,
    BertPretrainer,
    load_encoder,
    load_pretrained_model,
    load_pretrainer,
)
from keras_bert.checkpoints import CheckpointError
from keras_bert.checkpoints.huggingface_tokenizer import write_tokenizer_files
from keras_bert.export import servability
from keras_bert.tasks import finetuning
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.checkpoints.conftest import randomize
from tests.checkpoints.test_names import cache_hf_snapshot, caches  # noqa: F401  (fixture)
from tests.recipes.conftest import run_in_process, write_vocab  # noqa: F401  (fixture)

ROWS = [("a good film", "pos"), ("a bad film", "neg"), ("good acting", "pos"), ("bad plot", "neg")]
TEXTS = [text for text, _ in ROWS]
LABELS = ["neg", "pos"]
HUB_NAME = "org/tiny-classifier"


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    """(directory, model): a tiny random transformers BertForSequenceClassification (id2label neg, pos) with
    a vocab.txt, as a user downloads one."""
    directory = tmp_path_factory.mktemp("hf_classifier")
    _, size = write_vocab(directory / "vocab.txt", TEXTS)
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=size, hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                                     id2label=dict(enumerate(LABELS)), label2id={"neg": 0, "pos": 1})
    model = randomize(transformers.BertForSequenceClassification(config))
    # A head that tells ROWS' labels apart: along the difference of the two labels' mean pooled outputs.
    preprocessor = BertPreprocessor(BertTokenizer(str(directory / "vocab.txt")), 16)
    inputs = _torch_inputs(preprocessor(tf.constant(TEXTS)))
    with torch.no_grad():
        pooled = model.bert(**inputs).pooler_output
        gold = torch.tensor([LABELS.index(label) for _, label in ROWS])
        high, low = pooled[gold == 1].mean(0), pooled[gold == 0].mean(0)
        weight = (high - low) / (high - low).norm() ** 2 * 4  # class means 4 apart in logit difference
        model.classifier.weight.copy_(torch.stack([-weight, weight]) / 2)
        model.classifier.bias.copy_(torch.tensor([1.0, -1.0]) * (weight @ (high + low)) / 4)
    model.save_pretrained(directory)
    return str(directory), model


def _torch_inputs(inputs):
    names = (("input_ids", "input_word_ids"), ("attention_mask", "input_mask"),
             ("token_type_ids", "input_type_ids"))
    return {name: torch.tensor(inputs[key].numpy(), dtype=torch.long) for name, key in names}


def _reference(hf_model, model):
    """transformers' logits and label names of TEXTS, on the ids `model`'s preprocessor packs."""
    with torch.no_grad():
        logits = hf_model(**_torch_inputs(model.preprocessor(tf.constant(TEXTS)))).logits.numpy()
    return logits, [hf_model.config.id2label[i] for i in logits.argmax(-1)]


ENTRY_POINTS = [  # (entry point, the class it builds of a BertForSequenceClassification directory)
    (BertEncoder.from_pretrained, BertEncoder),
    (BertClassifier.from_pretrained, BertClassifier),
    (BertPretrainer.from_pretrained, BertPretrainer),
    (load_pretrained_model, BertClassifier),  # the model the checkpoint holds: its task model
    (load_encoder, BertEncoder),
    (load_pretrainer, BertPretrainer),
    (lambda path: finetuning.build_task_model(BertClassifier, {"labels": LABELS}, path), BertClassifier),
]


@pytest.mark.parametrize("load, model_class", ENTRY_POINTS,
                         ids=[getattr(load, "__qualname__", "build_task_model") for load, _ in ENTRY_POINTS])
def test_every_entry_point_reads_the_checkpoint_once_and_keeps_its_head(hf_classifier, monkeypatch, load,
                                                                        model_class):
    directory, hf_model = hf_classifier
    calls = {"detect_format": 0, "read_checkpoint": 0}

    def counted(name, function):
        def call(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return call

    for module in (pretrained_module, checkpoints_module):
        monkeypatch.setattr(module, "detect_format", counted("detect_format", module.detect_format))
    monkeypatch.setattr(assembly_module, "read_checkpoint", counted("read_checkpoint",
                                                                    assembly_module.read_checkpoint))
    model = load(directory)
    assert type(model) is model_class
    assert calls == {"detect_format": 1, "read_checkpoint": 1}  # format sniffed once, weights read once
    assert model.preprocessor.tokenizer.vocab_file == os.path.join(directory, "vocab.txt")
    if model_class is BertClassifier:
        logits, labels = _reference(hf_model, model)
        assert model.labels == LABELS
        np.testing.assert_allclose(model.predict(TEXTS, verbose=0), logits, atol=1e-4)
        assert [str(label, "utf-8") for label in model.serve({"text": TEXTS})["label"]] == labels


def test_a_hub_name_goes_through_fine_tuning(hf_classifier, caches):  # noqa: F811
    """`build_task_model` resolves `init_checkpoint` as `from_pretrained` does: a hub name loads with its
    head (it was passed to the encoder loader unresolved)."""
    cache_hf_snapshot(caches[0], HUB_NAME, hf_classifier[0])
    by_name = finetuning.build_task_model(BertClassifier, {"labels": LABELS}, HUB_NAME)
    by_path = BertClassifier.from_pretrained(hf_classifier[0])
    for got, want in zip(by_name.get_weights(), by_path.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"holds a trained classifier head of labels \['neg', 'pos'\] but "
                                         r"the task has labels \['a', 'b'\]; pass head=\"fresh\""):
        finetuning.build_task_model(BertClassifier, {"labels": ["a", "b"]}, HUB_NAME)
    fresh = finetuning.build_task_model(BertClassifier, {"labels": ["a", "b"]}, HUB_NAME, head="fresh")
    assert fresh.labels == ["a", "b"]
    np.testing.assert_array_equal(fresh.encoder.pooler.kernel.numpy(), by_path.encoder.pooler.kernel.numpy())


@pytest.mark.slow
def test_an_exported_huggingface_task_checkpoint_serves_its_labels(
        hf_classifier, caches, run_in_process, tmp_path):  # noqa: F811
    """export_saved_model of a BertForSequenceClassification (directory and hub name) exports the classifier,
    not a bare encoder: TF Serving's C++ loader serves transformers' labels."""
    directory, hf_model = hf_classifier
    cache_hf_snapshot(caches[0], HUB_NAME, directory)
    logits, labels = _reference(hf_model, BertClassifier.from_pretrained(directory))
    arrays = tmp_path / "check.npz"
    servability.save_check_arrays(arrays, {"text": np.array(TEXTS, dtype=object)},
                                  {"logits": logits, "label": np.array(labels, dtype=object)})
    jobs = []
    for model_path in (directory, HUB_NAME):
        export_dir = tmp_path / f"export_{len(jobs)}"
        status, stderr = run_in_process("export.export_saved_model", f"--model_path={model_path}",
                                        f"--export_dir={export_dir}", "--nocheck", "--max_seq_length=16")
        assert status in (0, None), stderr
        jobs.append({"export_dir": export_dir / "1", "runs": [{"signature": "serving_default",
                                                                "arrays": arrays}]})
    for report in servability.check_servable_subprocess(jobs):
        assert "error" not in report, report["error"]
        assert report["runs"][0]["outputs"]["label"] == labels
        assert max(report["runs"][0]["max_abs_diff"].values()) <= 1e-4


def test_a_huggingface_task_checkpoint_is_a_teacher(hf_classifier, run_in_process, tmp_path):  # noqa: F811
    directory, hf_model = hf_classifier
    teacher = BertClassifier.from_pretrained(directory)
    _, labels = _reference(hf_model, teacher)  # the gold labels: what transformers' head predicts
    for name in ("train.csv", "dev.csv"):
        with open(tmp_path / name, "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([("text", "label"), *zip(TEXTS, labels, strict=True)])
    out = tmp_path / "student"
    status, stderr = run_in_process("distill", f"--teacher={directory}", "--student_layers=1",
                                    f"--train_file={tmp_path / 'train.csv'}",
                                    f"--eval_file={tmp_path / 'dev.csv'}",
                                    f"--output_dir={out}", "--train_batch_size=4", "--eval_batch_size=4",
                                    "--nojit_compile", "--augment=0", "--num_train_epochs=1")
    assert status is None, stderr
    with open(out / "eval_results.json") as f:
        results = json.load(f)
    assert results["teacher/parameters"] == teacher.count_params() > results["student/parameters"]
    assert results["teacher/accuracy"] == 1.0  # the trained head, not a fresh one, labels the dev rows


def _write_tokenizer_json(directory, lower_case=True, vocabulary=None):
    """tokenizer.json (and tokenizer_config.json) beside vocab.txt, as transformers writes them, of
    `vocabulary` (default: vocab.txt's) and casing `lower_case`."""
    vocab_file = os.path.join(directory, "vocab.txt")
    tokenizer = BertTokenizer(None if vocabulary else vocab_file, lower_case=lower_case,
                              vocabulary=vocabulary)
    keep = open(vocab_file, encoding="utf-8").read()
    write_tokenizer_files(tokenizer, directory, 16)
    with open(vocab_file, "w", encoding="utf-8") as f:  # the vocab.txt the checkpoint came with
        f.write(keep)


def _edit_json(directory, name, **changes):
    path = os.path.join(directory, name)
    with open(path, encoding="utf-8") as f:
        values = json.load(f)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({**values, **changes}, f)


@pytest.fixture
def classifier_copy(hf_classifier, tmp_path):
    return shutil.copytree(hf_classifier[0], tmp_path / "copy")


def _swap_two_tokens(directory):
    tokens = open(os.path.join(directory, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
    tokens[5], tokens[6] = tokens[6], tokens[5]
    return tokens


@pytest.mark.parametrize("edit, message", [
    (lambda d: _write_tokenizer_json(d, vocabulary=_swap_two_tokens(d)),
     "{d}/vocab.txt has '!' at id 5 but {d}/tokenizer.json has '\"' at id 5; expected the same vocabulary"),
    (lambda d: (_write_tokenizer_json(d, lower_case=False),
                _edit_json(d, "tokenizer_config.json", do_lower_case=True)),
     "{d}/tokenizer_config.json states do_lower_case=True but {d}/tokenizer.json states "
     "normalizer.lowercase=False; expected the same casing"),
    (lambda d: _edit_json(d, "config.json", problem_type="multi_label_classification"),
     "{d}/config.json: problem_type='multi_label_classification': a multi-label classifier"),
])
@pytest.mark.parametrize("load", [BertClassifier.from_pretrained, load_pretrained_model])
def test_files_that_disagree_are_refused_naming_both(classifier_copy, edit, message, load):
    directory = str(classifier_copy)
    edit(directory)
    with pytest.raises(CheckpointError) as raised:
        load(directory)
    assert message.format(d=directory) in str(raised.value)


def test_the_casing_of_tokenizer_json_is_read_beside_vocab_txt(classifier_copy):
    directory = str(classifier_copy)
    _write_tokenizer_json(directory, lower_case=False)
    os.remove(os.path.join(directory, "tokenizer_config.json"))  # tokenizer.json alone states the casing
    tokenizer = load_pretrained_model(directory).preprocessor.tokenizer
    assert not tokenizer.lower_case and tokenizer.vocab_file == os.path.join(directory, "vocab.txt")


def test_a_saved_task_model_under_another_dtype_keeps_its_head(hf_classifier, tmp_path):
    """A `.keras` of another dtype policy is rebuilt under the one asked for, its trained head and labels
    copied (it used to come back as a fresh head on the rebuilt encoder)."""
    saved = BertClassifier.from_pretrained(hf_classifier[0])
    saved.save(tmp_path / "clf.keras")
    for load in (BertClassifier.from_pretrained, load_pretrained_model):
        model = load(str(tmp_path / "clf.keras"), dtype="mixed_bfloat16")
        assert type(model) is BertClassifier and model.labels == LABELS
        assert model.encoder.embeddings.dtype_policy.name == "mixed_bfloat16"
        np.testing.assert_array_equal(model.get_layer("classifier").kernel.numpy(),
                                      saved.get_layer("classifier").kernel.numpy())
        np.testing.assert_array_equal(model.encoder.pooler.kernel.numpy(),
                                      saved.encoder.pooler.kernel.numpy())
