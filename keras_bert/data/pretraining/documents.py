"""Reading a corpus as documents (lists of sentence str): text files, or a prepared TFDS text dataset.

Corpus format (the original's): UTF-8 text files, one sentence per line, a blank line between documents.
"""

import glob
import re

# Sentence boundary for prose given as paragraphs (TFDS text): end punctuation, space, capital/quote/digit.
_SENTENCE_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def expand_patterns(patterns):
    """Comma-separated file names/globs (str or list) -> sorted list of files.

    Raises FileNotFoundError naming a pattern that matches no file, ValueError when there is no pattern.
    """
    if isinstance(patterns, str):
        patterns = [p for p in patterns.split(",") if p.strip()]
    files = []
    for pattern in patterns:
        matched = sorted(glob.glob(pattern.strip()))
        if not matched:
            raise FileNotFoundError(f"no file matches {pattern!r}")
        files.extend(matched)
    if not files:
        raise ValueError(f"{patterns!r} names no file; expected comma-separated files or globs")
    return files


def read_documents(files, stats=None):
    """Yields documents (lists of sentence str) from corpus files: a blank line ends a document.

    Lines are stripped; documents without any sentence are skipped and counted in `stats["empty_files"]`
    (files with no text). Non-UTF-8 bytes raise `UnicodeDecodeError`-derived ValueError naming file:line.
    """
    stats = {} if stats is None else stats
    for path in files:
        document, seen_text = [], False
        with open(path, "rb") as f:
            for line_number, raw in enumerate(f, 1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as e:
                    raise ValueError(f"{path}:{line_number}: not valid UTF-8 ({e.reason} at byte {e.start} "
                                     "of the line); the corpus must be UTF-8 text") from None
                if line:
                    document.append(line)
                    seen_text = True
                elif document:
                    yield document
                    document = []
        if document:
            yield document  # a file's end also ends its last document
        if not seen_text:
            stats["empty_files"] = stats.get("empty_files", 0) + 1


def split_sentences(text):
    """A paragraph-form document (str) -> list of sentences (rule-based: . ! ? then a capital)."""
    sentences = []
    for paragraph in text.splitlines():
        sentences.extend(s.strip() for s in _SENTENCE_BOUNDARY.split(paragraph) if s.strip())
    return sentences


def tfds_documents(name, data_dir=None, text_key="text", split="train"):
    """Yields documents (lists of sentences) from a TFDS text dataset the user has already prepared."""
    import tensorflow_datasets as tfds

    try:
        dataset = tfds.load(name, data_dir=data_dir, split=split, download=False)
    except Exception as e:  # noqa: BLE001 - re-raised naming the dataset
        raise ValueError(f"TFDS dataset {name!r} (data_dir {data_dir!r}) could not be loaded: {e}") from e
    for example in dataset.as_numpy_iterator():
        if text_key not in example:
            raise ValueError(f"text key {text_key!r} is not a feature of {name}; it has {sorted(example)}")
        sentences = split_sentences(example[text_key].decode("utf-8", "replace"))
        if sentences:
            yield sentences
