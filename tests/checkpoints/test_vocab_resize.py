"""resize_vocab on arrays: mean rows, untouched old rows and other arrays, errors naming the variable."""

import numpy as np
import pytest

from keras_bert.checkpoints.mapping import CheckpointError, CheckpointWeights
from keras_bert.checkpoints.vocab_resize import MLM_OUTPUT_BIAS, WORD_EMBEDDINGS, resize_vocab
from keras_bert.config import BertConfig

CONFIG = BertConfig(vocab_size=4, hidden_size=2, num_hidden_layers=1, num_attention_heads=1,
                    intermediate_size=4)


def _weights(**arrays):
    embeddings = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 8.0], [6.0, 7.0]], "float32")
    base = {WORD_EMBEDDINGS: embeddings, MLM_OUTPUT_BIAS: np.array([1.0, 2.0, 3.0, 5.0], "float32"),
            "bert/pooler/dense/bias": np.ones(2, "float32")}
    return CheckpointWeights(path="ckpt", arrays={**base, **arrays})


def test_new_rows_are_means_of_old_rows():
    # Row 1 (an [unusedK] slot) from old rows 2+3; appended row 4 from old rows 1+2 (not the overwritten
    # row 1).
    config, weights = resize_vocab(CONFIG, _weights(), 5, {1: [2, 3], 4: [1, 2]})
    assert config.vocab_size == 5 and CONFIG.vocab_size == 4
    np.testing.assert_array_equal(weights.arrays[WORD_EMBEDDINGS],
                                  [[0, 1], [5, 7.5], [4, 8], [6, 7], [3, 5.5]])
    np.testing.assert_array_equal(weights.arrays[MLM_OUTPUT_BIAS], [1, 4, 3, 5, 2.5])
    np.testing.assert_array_equal(weights.arrays["bert/pooler/dense/bias"], [1, 1])
    assert weights.path == "ckpt"


def test_errors_name_the_variable_and_ids():
    with pytest.raises(CheckpointError, match=r"no initialisation given for new id 5 \(and 0 more\)"):
        resize_vocab(CONFIG, _weights(), 6, {4: [1]})
    with pytest.raises(CheckpointError, match="new id 4 from old ids \\[4\\]"):
        resize_vocab(CONFIG, _weights(), 5, {4: [4]})
    with pytest.raises(CheckpointError,
                       match="'cls/predictions/output_bias' has 3 rows, expected vocab_size=4"):
        resize_vocab(CONFIG, _weights(**{MLM_OUTPUT_BIAS: np.zeros(3, "float32")}), 5, {4: [1]})
    with pytest.raises(CheckpointError, match="smaller than the checkpoint's 4"):
        resize_vocab(CONFIG, _weights(), 3, {})
