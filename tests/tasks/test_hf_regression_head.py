"""A transformers BertForSequenceClassification stating problem_type "regression" with two outputs: our
regression head has one output, so the checkpoint is refused, naming its config.json, rather than read as a
two-class softmax without its labels."""

import dataclasses
import json

import pytest

from keras_bert import BertClassifier, BertEncoder, save_huggingface
from keras_bert.checkpoints import huggingface_head
from keras_bert.checkpoints.mapping import CheckpointError
from tests.recipes.conftest import write_vocab


@pytest.fixture
def two_output_head(tmp_path, tiny_config):
    """A BertForSequenceClassification directory of a random two-output head, id2label {"0": "valence",
    "1": "arousal"} and problem_type "single_label_classification" as saved; its config.json path."""
    root = tmp_path
    vocab, size = write_vocab(root / "vocab.txt", ["a b"])
    model = BertClassifier(BertEncoder(dataclasses.replace(tiny_config, vocab_size=size)),
                           labels=["valence", "arousal"])
    directory = save_huggingface(model, str(root / "hf"), vocab_file=vocab)
    return directory, f"{directory}/config.json"


def _with_problem_type(config_file, problem_type):
    with open(config_file, encoding="utf-8") as f:
        config = json.load(f)
    config["problem_type"] = problem_type
    with open(config_file, "w", encoding="utf-8") as f:
        json.dump(config, f)


def test_a_two_output_regression_head_is_refused(two_output_head):
    directory, config_file = two_output_head
    _with_problem_type(config_file, "single_label_classification")
    head = huggingface_head(directory)
    assert (head["num_classes"], head["labels"]) == (2, ["valence", "arousal"])
    # Was: 2 classes, labels None (id2label dropped), served by softmax.
    _with_problem_type(config_file, "regression")
    message = (f"^{config_file}: problem_type='regression' with 2 outputs \\(id2label: valence, arousal\\): "
               "keras_bert's regression head has one output; expected num_labels 1 for a regression")
    with pytest.raises(CheckpointError, match=message):
        huggingface_head(directory)
    with pytest.raises(ValueError, match=message):
        BertClassifier.from_pretrained(directory)
