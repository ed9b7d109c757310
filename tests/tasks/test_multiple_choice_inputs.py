"""A multiple choice model given another number of endings than its num_choices: one line naming the example,
what came and what was expected, before any work (was: a reshape error from inside tf.data or the graph, or
"got list values" for rows of unequal lengths)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertEncoder
from keras_bert.config import BertConfig
from keras_bert.tasks.multiple_choice.model import BertMultipleChoice, check_choices
from keras_bert.text import BertPreprocessor, BertTokenizer
from tests.recipes.conftest import write_vocab


@pytest.fixture(scope="module")
def chooser(tmp_path_factory):
    vocab, size = write_vocab(tmp_path_factory.mktemp("mc") / "vocab.txt", ["a b c"])
    config = BertConfig(vocab_size=size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=32)
    encoder = BertEncoder(config)
    return BertMultipleChoice(encoder, num_choices=2, preprocessor=BertPreprocessor(BertTokenizer(vocab), 16))


EXPECTED = r"; expected 2 \(the model's num_choices\)$"
SERVED = r"^serving input `text_b` must be tf.string of shape \[batch, 2\]"
# endings, predict's line, serve's line (every served input of a fixed width: `served_inputs.served_arrays`).
WRONG = [
    ([["b", "c", "a"]], r"^multiple choice example 0 has 3 endings" + EXPECTED,
     SERVED + ": its example 0 has 3 items$"),
    ([["b", "c"], ["a"]], r"^multiple choice example 1 has 1 ending" + EXPECTED,
     SERVED + ": its example 1 has 1 item$"),
    (["b", "c"], r"^multiple choice example 0 has one ending \(a string, not a list of them\)" + EXPECTED,
     SERVED + r": its example 0 has one string, not a list of them$"),
    (np.array([["b", "c", "a"], ["a", "b", "c"]]), r"^multiple choice example 0 has 3 endings" + EXPECTED,
     SERVED + ": its example 0 has 3 items$"),
]


@pytest.mark.parametrize("endings, message, served", WRONG)
def test_serve_and_predict_name_the_example_with_another_number_of_endings(chooser, endings, message, served):
    contexts = ["a"] * len(endings)
    with pytest.raises(ValueError, match=served):
        chooser.serve({"text": contexts, "text_b": endings})
    with pytest.raises(ValueError, match=message):
        chooser.predict((contexts, endings), verbose=0)


def test_rows_of_num_choices_endings_pass():
    # Served end to end in tests/tasks/test_served_predictions.py; here the forms the check takes.
    for endings in ([["b", "c"], ["a", "c"]], np.array([["b", "c"]]), tf.constant([["b", "c"]]),
                    np.array([["b", "c"]], dtype=object), [np.array(["b", "c"])]):
        check_choices(endings, 2)
    with pytest.raises(ValueError, match="example 0 has 2 endings; expected 3"):
        check_choices(tf.constant([["b", "c"]]), 3)
