"""The tasks floor: which model from which checkpoint, the checks, step arithmetic, labels.json and the
prediction files, on tiny models and hand-made examples."""

import csv
import json

import keras
import numpy as np
import pytest

import keras_bert as kb
from keras_bert.checkpoints import split_model
from keras_bert.export.saved_model import model_kind
from keras_bert.models.pretrained import resolve_pretrained
from keras_bert.tasks import finetuning
from keras_bert.tasks.classification import task as classification
from keras_bert.tasks.classification.glue import tfds_eval_splits
from keras_bert.tasks.classification.reader import ClassificationExample
from keras_bert.tasks.labels import write_labels


def test_finetuning_steps_round_up_batches_and_take_the_warmup_proportion():
    # 10 examples in batches of 4: 3 steps an epoch; 2.5 epochs: 7.5 -> 8 steps; 10% warmup: int(0.8) = 0.
    assert finetuning.finetuning_steps(10, 4, 2.5, 0.1) == (3, 8, 0)
    assert finetuning.finetuning_steps(100, 8, 3.0, 0.1) == (13, 39, 3)
    assert finetuning.finetuning_steps(100, 8, 3.0, 0.1, num_warmup_steps=5) == (13, 39, 5)


def test_build_task_model_continues_a_saved_task_model_and_reuses_the_encoder_of_another(tiny_config,
                                                                                         tmp_path):
    classifier = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=3)
    kb.save_pretrained(classifier, str(tmp_path / "clf"))
    same = finetuning.build_task_model(kb.BertClassifier, None, str(tmp_path / "clf"))
    assert same.num_classes == 3  # the fine-tuned head continues
    with pytest.raises(ValueError, match="3 .*classes.*pass head=\"fresh\""):
        finetuning.build_task_model(kb.BertClassifier, {"num_classes": 2}, str(tmp_path / "clf"))
    other = finetuning.build_task_model(kb.BertTokenClassifier, {"num_classes": 5}, str(tmp_path / "clf"))
    assert other.task_kind == "token_classifier" and other.num_classes == 5
    np.testing.assert_array_equal(other.encoder.pooler.kernel.numpy(),
                                  classifier.encoder.pooler.kernel.numpy())
    fresh = finetuning.build_task_model(kb.BertSpanLabeler, None, config=tiny_config)
    assert fresh.encoder.config.num_hidden_layers == 2


def test_checks_name_the_values_they_reject(tiny_config):
    classifier = kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=2)
    finetuning.check_num_classes(classifier, ["a", "b"])
    with pytest.raises(ValueError, match=r"2 outputs but the task has 3 classes: \['a', 'b', 'c'\]"):
        finetuning.check_num_classes(classifier, ["a", "b", "c"])
    with pytest.raises(ValueError, match="vocab_size=60 but the vocab file v.txt has 59 tokens"):
        finetuning.check_vocab_size(tiny_config, 59, "v.txt")
    with pytest.raises(ValueError, match="seq_length=65; expected 3 <= seq_length <= the model's "
                                         "max_position_embeddings=64"):
        finetuning.check_seq_length(tiny_config, 65)


def test_one_kind_per_model_for_checkpoints_and_export(tiny_config):
    encoder = kb.BertEncoder(tiny_config)
    pretrainer = kb.BertPretrainer(encoder)
    classifier = kb.BertClassifier(encoder, num_classes=2)
    assert ([model_kind(m) for m in (encoder, pretrainer, classifier)]
            == ["encoder", "pretrainer", "classifier"])
    assert split_model(pretrainer) == (encoder, pretrainer)
    assert split_model(classifier) == (encoder, None)
    with pytest.raises(TypeError, match="got Dense"):
        split_model(keras.layers.Dense(1))


def test_labels_json_round_trip_beside_a_saved_model(tiny_config, tmp_path):
    kb.save_pretrained(kb.BertClassifier(kb.BertEncoder(tiny_config), num_classes=2), str(tmp_path))
    assert resolve_pretrained(str(tmp_path)).labels is None
    write_labels(str(tmp_path), ["neg", "pos"])
    assert json.loads((tmp_path / "labels.json").read_text()) == {"labels": ["neg", "pos"]}
    assert resolve_pretrained(str(tmp_path / "model.keras")).labels == ["neg", "pos"]


def test_custom_task_predictions_file_and_metrics(tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\nfine day,pos\nbad day,neg\ngood,pos\n")
    task = classification.custom_task(str(train), eval_file=str(train))
    assert task.label_list == ["neg", "pos"] and task.num_classes == 2
    predictions = np.array([1, 0, 0])  # served class ids (ClassificationTask.served; test_served_predictions)
    assert task.metrics(predictions, np.array([1, 0, 1])) == {"accuracy": pytest.approx(2 / 3)}
    path = task.write_predictions("eval", task.evals[0][1], predictions, str(tmp_path))
    with open(path, encoding="utf-8") as f:
        assert list(csv.reader(f, delimiter="\t")) == [["index", "prediction"], ["0", "pos"], ["1", "neg"],
                                                       ["2", "neg"]]
    with pytest.raises(ValueError, match="needs a training file"):
        classification.custom_task(eval_file=str(train))


def test_glue_predictions_go_to_the_submission_file(tmp_path):
    task = classification.ClassificationTask("mnli", ["contradiction", "entailment", "neutral"], False,
                                             glue_name="mnli")
    examples = [ClassificationExample(guid="t-0", text_a="a", text_b="b", index=7)]
    path = task.write_predictions("ax", examples, [1], str(tmp_path))
    assert path.endswith("AX.tsv") and open(path).read() == "index\tprediction\n7\tentailment\n"
    assert tfds_eval_splits("glue/mnli") == (("validation_matched", "validation_mismatched"),
                                             ("test_matched", "test_mismatched"))
    assert tfds_eval_splits("glue/sst2") == (("validation",), ("test",))
