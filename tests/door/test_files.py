"""Every file a model enters by is checked at the door, through the one loader (`resolve_pretrained`): a bad
`.keras`, KerasHub preset file or calibration file gives one error naming the file (and key) and what was
expected, the same in the library and through the CLIs (one `error:` line, exit status 1, nothing written).
The recipes' tokenizer is the one `from_pretrained` gives, and label arguments agree with a checkpoint
head."""

import inspect
import json
import os
import shutil
import time

import keras
import numpy as np
import pytest

from keras_bert import BertClassifier, BertConfig, BertEncoder, save_huggingface, save_keras_hub
from keras_bert.checkpoints import keras_hub_head
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "Hello", "hello", "WORLD", "world", "good", "bad", "!"]
SEQ_LENGTH = 16
TEXT = "Hello WORLD"


def _cased_classifier(tmp_path, num_classes=3):
    """A tiny random BertClassifier with a cased preprocessor of WORDS (vocab.txt written beside)."""
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(WORDS) + "\n")
    keras.utils.set_random_seed(5)
    config = BertConfig(vocab_size=len(WORDS), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=32)
    preprocessor = BertPreprocessor(BertTokenizer(str(vocab_file), lower_case=False), SEQ_LENGTH)
    return (BertClassifier(BertEncoder(config), num_classes=num_classes, preprocessor=preprocessor),
            str(vocab_file))


@pytest.fixture
def cased_preset(tmp_path):
    """A cased 3-class KerasHub BertTextClassifier preset directory (tokenizer.json lowercase: false)."""
    classifier, _ = _cased_classifier(tmp_path)
    return save_keras_hub(classifier, str(tmp_path / "preset"))


@pytest.fixture
def cased_huggingface(tmp_path):
    """A Hugging Face directory whose tokenizer_config.json says do_lower_case: false."""
    classifier, vocab_file = _cased_classifier(tmp_path)
    directory = save_huggingface(classifier.encoder, str(tmp_path / "hf"), vocab_file)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False}, f)
    return directory


def _ids(preprocessor, text=TEXT):
    return preprocessor(np.array([text], dtype=object))["input_word_ids"].numpy()[0].tolist()


def _tree(path):
    return sorted((root, sorted(files)) for root, _, files in os.walk(path))


@pytest.mark.parametrize("source", ["cased_preset", "cased_huggingface"])
def test_the_recipe_tokenizes_as_from_pretrained(run_in_process, tmp_path, request, source):
    checkpoint = request.getfixturevalue(source)
    train = tmp_path / "train.csv"
    train.write_text("text,label\nHello WORLD,a\ngood world,b\nbad hello,c\nHello!,a\n")
    out = tmp_path / "out"
    status, stderr = run_in_process("run_classifier", f"--init_checkpoint={checkpoint}",
                                    f"--train_file={train}", "--do_eval=false", f"--output_dir={out}",
                                    "--num_train_epochs=0.5", "--train_batch_size=2",
                                    f"--max_seq_length={SEQ_LENGTH}", "--nojit_compile")
    assert not status, stderr  # main returned: the run succeeded
    recipe = keras.saving.load_model(str(out / "model.keras"), compile=False).preprocessor
    library = BertClassifier.from_pretrained(checkpoint, num_classes=3, seq_length=SEQ_LENGTH).preprocessor
    assert _ids(recipe) == _ids(library) == [2, 5, 7, 3] + [0] * (SEQ_LENGTH - 4)  # [CLS] Hello WORLD [SEP]
    assert not recipe.tokenizer.lower_case
    assert recipe.tokenizer.rules == library.tokenizer.rules == ("keras_hub" if source == "cased_preset"
                                                                 else "google")
    status, stderr = run_in_process("run_classifier", f"--init_checkpoint={checkpoint}",
                                    f"--train_file={train}", "--do_eval=false",
                                    f"--output_dir={tmp_path / 'out2'}", "--do_lower_case")
    assert status == 1 and "lower_case=True but" in stderr and "do_lower_case=False" in stderr
    assert len(stderr.splitlines()) == 1 and not os.path.exists(tmp_path / "out2")


def _edit_json(directory, name, edit):
    path = os.path.join(directory, name)
    with open(path) as f:
        values = json.load(f)
    edit(values)
    with open(path, "w") as f:
        json.dump(values, f)


def _break(kind, preset, tmp_path):
    """The bad input of row `kind`: (path to load, what the one error must contain)."""
    if kind == "random_bytes_keras":
        path = tmp_path / "garbage.keras"
        path.write_bytes(os.urandom(200))
        return str(path), f"{path}: not a complete .keras (zip) file"
    if kind in ("config.json", "tokenizer.json", "task.json"):
        _edit_json(preset, kind, lambda values: values.pop("config"))
        return preset, f'{os.path.join(preset, kind)}: no "config" object'
    if kind == "num_classes_three":
        _edit_json(preset, "task.json", lambda values: values["config"].update(num_classes="three"))
        return preset, (f"{os.path.join(preset, 'task.json')}: num_classes is 'three'; expected a positive "
                        f"integer")
    if kind == "activation_sigmoid":
        _edit_json(preset, "task.json", lambda values: values["config"].update(activation="sigmoid"))
        return preset, (f"{os.path.join(preset, 'task.json')}: activation='sigmoid'; expected 'linear' or "
                        f"'softmax'")
    vocabulary = os.path.join(preset, "assets", "tokenizer", "vocabulary.txt")
    if kind == "special_tokens_only":
        with open(vocabulary, "w") as f:
            f.write("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
        return preset, f"vocab_size={len(WORDS)} but the vocab file {vocabulary} has 5 tokens"
    if kind == "vocabulary_missing":
        os.remove(vocabulary)
        return preset, "preset with tokenizer.json but no assets/tokenizer/vocabulary.txt"
    if kind == "sequence_length_9999":
        _edit_json(preset, "preprocessor.json", lambda values: values["config"].update(sequence_length=9999))
        return preset, (f"{os.path.join(preset, 'preprocessor.json')}: sequence_length=9999; expected 3 <= "
                        f"seq_length <= the model's max_position_embeddings=32")
    assert kind == "distilbert"
    _edit_json(preset, "config.json",
               lambda values: values.update(registered_name="keras_hub>DistilBertBackbone"))
    return preset, (f"{os.path.join(preset, 'config.json')}: a keras_hub>DistilBertBackbone preset; only "
                    f"keras_hub>BertBackbone is read")


ROWS = ["random_bytes_keras", "config.json", "tokenizer.json", "task.json", "num_classes_three",
        "activation_sigmoid", "special_tokens_only", "vocabulary_missing", "sequence_length_9999",
        "distilbert"]


@pytest.mark.parametrize("kind", ROWS)
def test_a_bad_model_file_is_one_error_naming_it(run_in_process, cased_preset, tmp_path, kind):
    path, expected = _break(kind, cased_preset, tmp_path)
    for load in (BertClassifier.from_pretrained, BertEncoder.from_pretrained):
        with pytest.raises((ValueError, OSError)) as error:
            load(path)
        assert expected in str(error.value)
    before = _tree(tmp_path)
    for name, output in (("export.save_keras_hub", "--output_dir"),
                         ("export.export_saved_model", "--export_dir")):
        start = time.monotonic()
        status, stderr = run_in_process(name, f"--model_path={path}", f"{output}={tmp_path / 'written'}")
        assert status == 1 and stderr.startswith("error: ") and len(stderr.splitlines()) == 1, stderr
        assert expected in stderr and f"--model_path={path}" in stderr
        assert time.monotonic() - start < 30  # refused before any work
    assert _tree(tmp_path) == before


def test_a_binary_calibration_file_names_its_line(run_in_process, cased_preset, tmp_path):
    calibration = tmp_path / "calibration.txt"
    calibration.write_bytes(b"a fine line\n\xff\xfe\x00binary\n")
    status, stderr = run_in_process("export.export_saved_model", f"--model_path={cased_preset}",
                                    f"--export_dir={tmp_path / 'export'}", "--quantize=int8_matmul",
                                    f"--calibration_file={calibration}")
    assert status == 1 and len(stderr.splitlines()) == 1, stderr
    assert f"error: {calibration}:2: not valid UTF-8: byte 0xff" in stderr
    assert f"--calibration_file={calibration}" in stderr and not os.path.exists(tmp_path / "export")


def test_labels_of_another_class_count_are_refused_unless_head_fresh(cased_preset):
    kernel = BertClassifier.from_pretrained(cased_preset).get_layer("classifier").kernel.numpy()
    same = BertClassifier.from_pretrained(cased_preset, labels=["x", "y", "z"])
    assert same.labels == ["x", "y", "z"]
    np.testing.assert_array_equal(same.get_layer("classifier").kernel.numpy(), kernel)
    for asked, named in (({"labels": ["a", "b"]}, "labels ['a', 'b']"), ({"num_classes": 2}, "2 classes")):
        with pytest.raises(ValueError) as raised:
            BertClassifier.from_pretrained(cased_preset, **asked)
        assert str(raised.value) == (f"{cased_preset} holds a trained classifier head of 3 unnamed classes "
                                     f'but the task has {named}; pass head="fresh" to start a fresh head')
        fresh = BertClassifier.from_pretrained(cased_preset, head="fresh", **asked)
        assert fresh.num_classes == 2 and fresh.get_layer("classifier").kernel.shape == (8, 2)


def test_a_preset_copy_without_its_task_loads_as_an_encoder(cased_preset, tmp_path):
    backbone = shutil.copytree(cased_preset, tmp_path / "backbone")
    for name in ("task.json", "task.weights.h5", "preprocessor.json"):
        os.remove(backbone / name)
    encoder = BertEncoder.from_pretrained(str(backbone))
    # No preprocessor.json: the default length, capped at the 32 position embeddings.
    assert encoder.preprocessor.seq_length == 32 and _ids(encoder.preprocessor)[:4] == [2, 5, 7, 3]


def test_a_task_preset_no_folder_declares_loads_as_an_encoder(cased_preset, caplog):
    """task.json of a KerasHub task that no task folder declares (`TaskSpec.keras_hub`): logged, no head."""
    _edit_json(cased_preset, "task.json",
               lambda values: values.update(registered_name="keras_hub>BertMaskedLM"))
    with caplog.at_level("INFO", logger="keras_bert"):
        assert keras_hub_head(cased_preset) is None
    assert "task keras_hub>BertMaskedLM has no keras_bert counterpart" in caplog.text
    assert BertEncoder.from_pretrained(cased_preset).preprocessor.seq_length == SEQ_LENGTH


def test_every_from_pretrained_takes_the_same_arguments_in_the_same_order():
    from keras_bert import BertMultipleChoice, BertPretrainer, BertSpanLabeler, BertTokenClassifier

    classes = [BertEncoder, BertPretrainer, BertClassifier, BertSpanLabeler, BertTokenClassifier,
               BertMultipleChoice]
    for cls in classes:
        parameters = inspect.signature(cls.from_pretrained).parameters
        names = list(parameters)
        assert names[:5] == ["path", "seq_length", "lower_case", "vocab_file", "dtype"], (cls.__name__, names)
        # every override by keyword only, as the one loader takes them
        assert all(parameters[name].kind is inspect.Parameter.KEYWORD_ONLY for name in names[1:5]), cls
