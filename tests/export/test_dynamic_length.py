"""Served raw text is packed to each batch's longest input (rounded up to 8), not to the model's sequence
length, and run in length buckets (keras_bert/models/buckets.py): through TF's C++ loader every task answers
as the fixed-length packing does (floats within 1e-5, labels, offsets and entities exactly), in process
a bucketed batch answers as each text alone, long texts are still windowed, and a batch of an empty string
beside a 100,000-character text works."""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from keras_bert import (
    BertClassifier,
    BertConfig,
    BertEncoder,
    BertMultipleChoice,
    BertSpanLabeler,
    BertTokenClassifier,
)
from keras_bert.export import export_saved_model, servability
from keras_bert.models import buckets
from keras_bert.tasks.squad.answers import AnswerRules
from keras_bert.text import BertPreprocessor, BertTokenizer

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "over",
         "lazy", "dog", ".", ",", "a", "is", "hello", "world", "##ing", "?", "who", "ann"]
SEQ_LENGTH = 32
LONG = "hello world, the quick brown fox. " * 3000  # 102,000 characters
# 12 texts of 0 to ~30,000 pieces: several length buckets (buckets.group_bounds), each cut to its own longest.
TEXTS = ["", LONG, "Who is Ann?", "the lazy dog jumps over the quick brown fox " * 2, "hello", "a dog.",
         "the quick brown fox " * 3, "who is ann? " * 5, "jumping", "the dog, the fox, the world " * 2,
         "ann is a lazy dog", "hello world " * 6]


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join(WORDS) + "\n")
    config = BertConfig(vocab_size=len(WORDS), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    model = BertEncoder(config)
    model.preprocessor = BertPreprocessor(BertTokenizer(str(vocab)), SEQ_LENGTH)
    return model


def _with_preprocessor(model, encoder):
    model.preprocessor = encoder.preprocessor
    return model


def _cases(encoder):
    """(name, model, inputs, options) of every task's raw-text endpoint on TEXTS."""
    return [
        ("classifier", BertClassifier(encoder, labels=["a", "b", "c"]), {"text": TEXTS}, {}),
        ("windows", BertClassifier(encoder, labels=["a", "b"]), {"text": TEXTS}, {"long_text": "windows"}),
        ("entities", BertTokenClassifier(encoder, labels=["O", "B-X", "I-X"]), {"text": TEXTS}, {}),
        ("token_logits", BertTokenClassifier(encoder, 3), {"text": TEXTS}, {}),
        ("span", BertSpanLabeler(encoder), {"question": ["who is ann?"] * len(TEXTS), "context": TEXTS},
         {"answer_rules": AnswerRules(doc_stride=8, max_query_length=8, version_2_with_negative=True)}),
        ("span_pair", BertSpanLabeler(encoder), {"text": ["who is ann?"] * len(TEXTS), "text_b": TEXTS},
         {"signature": "text_pair"}),
        ("choice", BertMultipleChoice(encoder, 2),
         {"text": TEXTS, "text_b": [[t, "a dog"] for t in TEXTS[::-1]]}, {}),
        ("embedding", encoder, {"text": TEXTS}, {"pooling": "mean", "normalize": True}),
    ]


def test_dynamic_length_exports_answer_as_the_fixed_length_packing(encoder, tmp_path):
    cases = [case for case in _cases(encoder) if case[0] not in ("token_logits", "span_pair")]
    jobs = []
    for name, model, inputs, options in cases:
        model = _with_preprocessor(model, encoder)
        # The dynamic export (the default) is checked against the fixed-length answers in the C++ loader
        # below: strings exactly, numbers within 1e-5 (integer offsets and ids therefore exactly).
        fixed = model.serve(inputs, fixed_length=True, **options)
        arrays = str(tmp_path / f"{name}.npz")
        servability.save_check_arrays(arrays, {k: np.asarray(v, dtype=object) for k, v in inputs.items()},
                                      fixed)
        jobs.append({"export_dir": export_saved_model(model, str(tmp_path / name), **options),
                     "runs": [{"signature": "serving_default", "arrays": arrays}]})
    assert fixed["sentence_embedding"].shape == (len(TEXTS), 16) and "sequence_output" not in fixed  # answers
    for (name, *_), report in zip(cases, servability.check_servable_subprocess(jobs, atol=1e-5), strict=True):
        assert "error" not in report, f"{name}: {report.get('error')}"


def test_bucketed_batches_answer_as_each_text_alone(encoder, monkeypatch):
    monkeypatch.setattr(buckets, "RUN_COST", 0)  # a split wherever it saves padding: every bucket is run
    for name, model, inputs, options in _cases(encoder):
        model = _with_preprocessor(model, encoder)
        options = dict(options)
        signature = options.pop("signature", None)
        batch = model.serve(inputs, signature=signature, **options)
        for index in (0, 4, 6, 9):  # texts of each bucket (LONG is checked against the fixed length above)
            alone = model.serve({k: v[index:index + 1] for k, v in inputs.items()}, signature=signature,
                                **options)
            for key, value in alone.items():
                # The batch's row cut to the text's own shape (padded to the batch's longest, or its count
                # of entities / n-best).
                got, want = batch[key][(index, *(slice(0, size) for size in value.shape[1:]))], value[0]
                if value.dtype == object or value.dtype.kind in "iub":
                    np.testing.assert_array_equal(got, want, err_msg=f"{name} text {index} {key}")
                else:
                    np.testing.assert_allclose(got, want, atol=1e-5, err_msg=f"{name} text {index} {key}")


def test_a_first_single_text_traces_the_model_once(encoder, monkeypatch):
    """`serve` of one text runs the graph traced for one row (no batch branch): a first single request
    traces the model once; a batch then traces the bucketed run alone, and both answer alike."""
    model = _with_preprocessor(BertClassifier(encoder, labels=["a", "b"]), encoder)
    traces, call = [], model.call
    monkeypatch.setattr(model, "call", lambda *args, **kwargs: traces.append(1) or call(*args, **kwargs))
    one = model.serve({"text": TEXTS[2:3]})
    assert len(traces) == 1
    batch = model.serve({"text": TEXTS[2:5]})
    assert len(traces) == 2
    np.testing.assert_allclose(batch["probabilities"][:1], one["probabilities"], atol=1e-6)


def _cheapest_split(lengths, max_groups, run_cost):
    """The least cost of splitting sorted `lengths` into at most `max_groups` groups, by enumeration."""
    cut = [-(-n // buckets.LENGTH_MULTIPLE) * buckets.LENGTH_MULTIPLE for n in lengths]
    best = 0 if not lengths else None
    for groups in range(1, min(max_groups, len(lengths)) + 1):
        for inner in itertools.combinations(range(1, len(lengths)), groups - 1):
            bounds = [0, *inner, len(lengths)]
            cost = sum((end - start) * cut[end - 1] + run_cost
                       for start, end in zip(bounds, bounds[1:], strict=False))
            best = cost if best is None else min(best, cost)
    return best


def test_the_groups_are_the_cheapest_split():
    rng = np.random.default_rng(0)
    for _ in range(60):
        max_groups, run_cost = int(rng.integers(1, 5)), float(rng.choice([0, 8, 40, 200]))
        lengths = np.sort(rng.integers(1, 120, int(rng.integers(0, 10)))).astype(np.int32)
        out = buckets.group_bounds(tf.constant(lengths), max_groups, run_cost).numpy()
        bounds, cuts = out[:max_groups + 1], out[max_groups + 1:]
        assert bounds[0] == 0 and bounds[-1] == len(lengths) and np.all(np.diff(bounds) >= 0)
        cost = sum((end - start) * cut + run_cost
                   for start, end, cut in zip(bounds, bounds[1:], cuts, strict=False) if end > start)
        assert cost == pytest.approx(_cheapest_split(list(lengths), max_groups, run_cost)), (lengths, out)


def test_buckets_cut_each_group_to_its_own_longest():
    lengths = np.array([3, 40, 1, 17, 9, 2, 33, 5, 25], np.int32)
    mask = (np.arange(48)[None] < lengths[:, None]).astype(np.int32)
    inputs = {"input_word_ids": mask * 7, "input_mask": mask, "input_type_ids": 0 * mask}

    def widths(group):  # the width each row was run at, and its ids back (a sequence axis padded back)
        rows = tf.shape(group["input_mask"])[0]
        return {"width": tf.fill([rows], tf.shape(group["input_mask"])[1]), "ids": group["input_word_ids"]}

    traced = {}

    def run(inputs, run_cost):  # traced, as served (once per cost: any batch size)
        if run_cost not in traced:
            spec = {k: tf.TensorSpec([None, 48], tf.int32) for k in inputs}
            traced[run_cost] = tf.function(
                lambda x: buckets.bucketed(widths, x, {"ids": -1}, run_cost=run_cost), input_signature=[spec])
        return traced[run_cost]({k: tf.constant(v) for k, v in inputs.items()})

    # Sorted 1 2 3 5 9 17 25 33 40, cut to 8 8 8 8 16 24 32 40 40. A run costing 20 tokens: groups
    # 1-5 | 9-17 | 25-40 (4 x 8 + 2 x 24 + 3 x 40 + 3 x 20 = 260 tokens, the least); 50: 1-5 | 9-40.
    out = run(inputs, 20)
    np.testing.assert_array_equal(out["width"], [8, 40, 8, 24, 24, 8, 40, 8, 40])
    want = np.where(np.arange(48)[None] < out["width"].numpy()[:, None], inputs["input_word_ids"], -1)
    np.testing.assert_array_equal(out["ids"], want)
    np.testing.assert_array_equal(run(inputs, 50)["width"], [8, 40, 8, 40, 40, 8, 40, 8, 40])
    np.testing.assert_array_equal(run(inputs, 1000)["width"], [40] * 9)  # a costly run: one group
    none = run({k: v[:0] for k, v in inputs.items()}, 20)  # every group empty: no run
    assert none["width"].shape == (0,) and none["ids"].shape == (0, 48)
