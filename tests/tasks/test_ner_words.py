"""NER words are what CoNLL files label, whitespace tokens, in training and in serving alike: a tagger
trained on `Berners-Lee` as one I-PER token serves "Tim Berners-Lee" as one person, and an entity's span
leaves out the punctuation at its edges ("Paris," -> "Paris"). Training leaves out the unused pooler."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_bert import BertClassifier, BertEncoder, BertTokenClassifier
from keras_bert.config import BertConfig
from keras_bert.tasks.ner import conll
from keras_bert.tasks.ner.entities import edge_punctuation
from keras_bert.tasks.ner.windows import training_windows, word_starts
from keras_bert.text import BertPreprocessor, BertTokenizer
from keras_bert.training.optimization import create_optimizer
from tests.recipes.conftest import write_vocab

TRAIN = [[("Tim", "I-PER"), ("Berners-Lee", "I-PER"), ("visited", "O"), ("Paris", "I-LOC"), (",", "O"),
          ("then", "O"), ("Rome", "I-LOC"), (".", "O")],
         [("Ada", "I-PER"), ("Lovelace", "I-PER"), ("left", "O"), ("Paris", "I-LOC"), (".", "O")],
         [("Then", "O"), ("Tim", "I-PER"), ("Berners-Lee", "I-PER"), ("met", "O"), ("Ada", "I-PER"),
          (".", "O")]]
SERVED = "Tim Berners-Lee visited Paris, then Rome."


@pytest.fixture(scope="module")
def preprocessor(tmp_path_factory):
    vocab, _ = write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt",
                           [" ".join(token for token, _ in sentence) for sentence in TRAIN])
    return BertPreprocessor(BertTokenizer(vocab, lower_case=True), 24)


@pytest.fixture(scope="module")
def trained(preprocessor, tmp_path_factory):
    """(tagger, the warnings of its fit, its pooler before the fit): a tiny tagger fit to the CoNLL file of
    TRAIN with run_ner's optimizer (AdamW, clipping)."""
    keras.utils.set_random_seed(1234)  # module fixtures run before the per-test seed
    path = tmp_path_factory.mktemp("conll") / "eng.train"
    path.write_text("-DOCSTART- -X- -X- O\n\n" + "\n\n".join(
        "\n".join(f"{token} NNP I-NP {tag}" for token, tag in sentence) for sentence in TRAIN) + "\n")
    sentences = conll.read_conll_file(path)
    tags = conll.collect_tags(sentences)
    config = BertConfig(vocab_size=preprocessor.tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)
    tagger = BertTokenClassifier(BertEncoder(config), labels=tags, preprocessor=preprocessor)
    inputs, labels, weights = training_windows(sentences * 6, preprocessor, tags)
    # Six steps, eagerly: tracing the train step would take longer than they do.
    tagger.compile(create_optimizer(1e-2, num_train_steps=None), jit_compile=False, run_eagerly=True)
    pooler = [w.numpy() for w in tagger.encoder.pooler.weights]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tagger.fit(inputs, labels, sample_weight=weights, batch_size=3, epochs=1, verbose=0)
    return tagger, [str(w.message) for w in caught], pooler


def test_trained_word_is_served_whole(trained):
    tagger, _, _ = trained
    served = tagger.serve({"text": [SERVED]}, word_tags=True)
    words = [SERVED[s:e] for s, e in zip(served["word_start"][0], served["word_end"][0], strict=True)]
    assert words == SERVED.split()
    assert [t.decode() for t in served["word_tag"][0]] == ["I-PER", "I-PER", "O", "I-LOC", "O", "I-LOC"]
    found = [(kind.decode(), text.decode(), start, end) for kind, text, start, end in zip(
        *(served[k][0] for k in ("entity_type", "entity_text", "entity_start", "entity_end")), strict=True)]
    # One person (was: "Tim Berners" and "Lee", the hyphen a word of its own that training never tagged);
    # "Paris," and "Rome." without their punctuation.
    assert found == [("PER", "Tim Berners-Lee", 0, 15), ("LOC", "Paris", 24, 29), ("LOC", "Rome", 36, 40)]


def test_fit_trains_no_pooler(trained, tiny_config):
    tagger, caught, pooler = trained
    assert not [message for message in caught if "Gradients do not exist" in message], caught
    # The pooler is left as it was, and kept among the weights (saved, exported) as non-trainable ones.
    for before, after in zip(pooler, tagger.encoder.pooler.weights, strict=True):
        np.testing.assert_array_equal(after.numpy(), before)
    pooler_ids = {id(w) for w in tagger.encoder.pooler.weights}
    assert not pooler_ids & {id(w) for w in tagger.trainable_weights + tagger.trainable_variables}
    assert pooler_ids <= {id(w) for w in tagger.non_trainable_weights} & {id(w) for w in tagger.weights}
    assert len(tagger.trainable_weights) + len(tagger.non_trainable_weights) == len(tagger.weights)
    # A classifier on the encoder of a token classifier still trains the pooler.
    encoder = BertEncoder(tiny_config)
    BertTokenClassifier(encoder, num_classes=3)
    classifier_weights = {id(w) for w in BertClassifier(encoder, num_classes=2).trainable_weights}
    assert {id(w) for w in encoder.pooler.weights} <= classifier_weights


def test_training_labels_the_served_words(preprocessor):
    # Each CoNLL token is labelled once, at the first piece of its served word: "Berners-Lee" at "berners",
    # not at "-" or "lee"; no other piece of it carries a label.
    sentence = conll.ConllSentence("s-0", *zip(*TRAIN[0], strict=True), 1)
    inputs, labels, weights = training_windows([sentence], preprocessor, ["O", "I-LOC", "I-PER"])
    vocab = preprocessor.tokenizer.vocab
    pieces = [vocab[i] for i in inputs["input_word_ids"][0][weights[0] == 1]]
    assert pieces == ["tim", "berners", "visited", "paris", ",", "then", "rome", "."]
    assert labels[0][weights[0] == 1].tolist() == [2, 2, 0, 1, 0, 0, 1, 0]


def test_words_are_whitespace_tokens(preprocessor):
    # Python's whitespace (str.split, as the CoNLL reader), dropped characters and accents inside a word.
    texts = ["Tim Berners-Lee visited Paris, then Rome.", "Zoë\u00a0(U.S.)\u2028don't\u3000x \u200b y\tz",
             "", " a\u200bb "]
    ids, starts, ends = preprocessor.tokenizer.tokenize_with_offsets(tf.constant(texts))
    first = word_starts(tf.constant(texts), starts, ends)
    for text, row_first, row_starts, row_ends in zip(texts, first.to_list(), starts.to_list(), ends.to_list(),
                                                     strict=True):
        raw = text.encode()
        words, word = [], None
        for is_first, start, end in zip(row_first, row_starts, row_ends, strict=True):
            if is_first:
                word = [start, end]
                words.append(word)
            word[1] = max(word[1], end)
        want = [t for t in text.split() if t != "\u200b"]  # a token without pieces is no word
        assert [raw[s:e].decode() for s, e in words] == want


@pytest.mark.parametrize(("span", "trimmed"), [
    ("Paris,", "Paris"), ('"Tim Berners-Lee".', "Tim Berners-Lee"), ("(U.S.)", "U.S."), ("Ph.D.),", "Ph.D."),
    ("Inc.", "Inc"), ("«Zoë»", "Zoë"), ("...", "..."), ("O'Neil", "O'Neil"), ("x", "x"), ("\u200bx,", "x"),
])
def test_edge_punctuation(span, trimmed):
    lead, trail = (int(t[0]) for t in edge_punctuation(tf.constant([span])))
    raw = span.encode()
    assert raw[lead : len(raw) - trail].decode() == trimmed
