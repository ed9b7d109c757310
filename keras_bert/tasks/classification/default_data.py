"""The default fine-tuning task: real English sentences from the standard library's docstrings, labeled by
the topic of the package they document (email, asyncio, gui = tkinter, web = http + urllib).

It needs no network and no user data, and is the same on every machine with the same Python version:
packages and files are read in sorted order, sentences are the prose filter of the default corpus, and
the shuffle and train/dev split are seeded. It is written as a custom-format CSV (`text,label`), so a
recipe reads it exactly like a user's files.

    train_csv, dev_csv = default_classification_files()
"""

import csv
import os
import random
import sys
import sysconfig

from keras_bert import textfiles
from keras_bert.data.default_corpus import DOCSTRING, prose_sentences

TOPICS = {"email": ("email",), "asyncio": ("asyncio",), "gui": ("tkinter",), "web": ("http", "urllib")}


def topic_sentences(topics=None, stdlib=None):
    """label -> sorted list of distinct prose sentences from the docstrings of that topic's packages."""
    topics = topics or TOPICS
    stdlib = stdlib or sysconfig.get_paths()["stdlib"]
    result = {}
    for label, packages in topics.items():
        sentences = set()
        for package in packages:
            for directory, subdirs, files in os.walk(os.path.join(stdlib, package)):
                subdirs[:] = sorted(d for d in subdirs if d not in ("test", "tests", "__pycache__"))
                for name in sorted(f for f in files if f.endswith(".py")):
                    with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
                        source = f.read()
                    for docstring in DOCSTRING.findall(source):
                        sentences.update(prose_sentences(docstring))
        result[label] = sorted(sentences)
    # A sentence found under two topics says nothing about either.
    shared = {s for a in result for b in result if a < b for s in set(result[a]) & set(result[b])}
    return {label: [s for s in sentences if s not in shared] for label, sentences in result.items()}


def default_classification_files(per_class_train=100, per_class_dev=50, seed=0, cache_dir=None):
    """Writes (once) and returns `(train_csv, dev_csv)`: balanced, `per_class_*` sentences per topic.

    Cached in `cache_dir` (default $KERAS_BERT_CACHE or ~/.cache/keras_bert), keyed by Python version and
    sizes. Raises ValueError when this Python's standard library has too few sentences for a topic.
    """
    cache_dir = textfiles.cache_dir(cache_dir)
    os.makedirs(cache_dir, exist_ok=True)
    stem = (f"docstring_topics_py{sys.version_info[0]}{sys.version_info[1]}_{per_class_train}_"
            f"{per_class_dev}_{seed}")
    paths = tuple(os.path.join(cache_dir, f"{stem}_{split}.csv") for split in ("train", "dev"))
    if all(os.path.exists(path) for path in paths):
        return paths
    rng = random.Random(seed)
    splits = {"train": [], "dev": []}
    for label, sentences in topic_sentences().items():
        needed = per_class_train + per_class_dev
        if len(sentences) < needed:
            raise ValueError(f"topic {label!r}: only {len(sentences)} sentences in this Python's standard "
                             f"library, {needed} needed")
        chosen = rng.sample(sentences, needed)
        splits["train"] += [(s, label) for s in chosen[:per_class_train]]
        splits["dev"] += [(s, label) for s in chosen[per_class_train:]]
    for path, rows in zip(paths, splits.values(), strict=True):
        rng.shuffle(rows)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows(rows)
        os.replace(tmp, path)
    return paths
