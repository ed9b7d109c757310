"""The default pre-training corpus: English prose from the docstrings of the installed Python packages.

Every recipe runs without network or user data on this corpus. It is derived deterministically from what
is installed (files in sorted order, first `max_bytes` of prose), written in the original corpus format
(one sentence per line, a blank line between documents; one document per module: its docstrings' prose)
and cached.
"""

import hashlib
import os
import re
import sys
import sysconfig

from keras_bert import textfiles
from keras_bert.data.pretraining.documents import split_sentences

DEFAULT_MAX_BYTES = 8_000_000
# A triple-quoted string of Python source; group 1 is its text.
DOCSTRING = re.compile(r'"""(.*?)"""', re.DOTALL)
# Where a docstring's reference sections begin: the prose ends there.
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Examples?|Notes?|Yields|Attributes|"
                      r"See Also|References|Usage|Warning|Call arguments|Input shape|Output shape)\s*:?\s*$"
                      r"|^\s*(>>>|-{3,}|={3,}|\.\. )", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?[,;:]?$")


def prose_sentences(docstring):
    """The English prose sentences of a docstring (str list), up to its first reference section."""
    match = _SECTION.search(docstring)
    text = docstring[:match.start()] if match else docstring
    sentences = []
    for paragraph in re.split(r"\n\s*\n", text):
        if re.search(r"^\s{4,}\S", paragraph, re.MULTILINE) and not paragraph.startswith(" "):
            continue  # indented block inside a paragraph: code or a listing
        for sentence in split_sentences(" ".join(paragraph.split())):
            words = sentence.split()
            if not (6 <= len(words) <= 60 and sentence[0].isupper() and sentence.endswith(".")):
                continue
            if sum(bool(_WORD.match(w)) for w in words) < 0.8 * len(words):
                continue  # identifiers, markup or numbers rather than prose
            sentences.append(sentence)
    return sentences


def iter_documents(roots=None, max_bytes=DEFAULT_MAX_BYTES):
    """Yields documents (lists of sentences) from docstrings of .py files under `roots` (default:
    site-packages and the standard library), in sorted path order, until `max_bytes` of text."""
    if roots is None:
        roots = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]]
    seen, total = set(), 0
    for root in roots:
        for directory, subdirs, files in os.walk(root):
            subdirs.sort()
            subdirs[:] = [d for d in subdirs if d not in ("tests", "test", "__pycache__", "keras_bert")]
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                try:
                    with open(os.path.join(directory, name), encoding="utf-8") as f:
                        source = f.read()
                except (UnicodeDecodeError, OSError):
                    continue
                sentences = []
                for docstring in DOCSTRING.findall(source):
                    prose = prose_sentences(docstring)
                    key = hashlib.md5("\n".join(prose).encode()).digest()
                    if prose and key not in seen:  # docstrings repeated across modules are kept once
                        seen.add(key)
                        sentences.extend(prose)
                if len(sentences) < 2:
                    continue
                total += sum(len(s) + 1 for s in sentences) + 1
                yield sentences
                if total >= max_bytes:
                    return


def default_corpus_path(max_bytes=DEFAULT_MAX_BYTES, cache_dir=None):
    """Path of the default corpus file, building it (once, ~1 min) if it is not cached.

    Cached in `cache_dir` (default $KERAS_BERT_CACHE or ~/.cache/keras_bert), keyed by Python version and
    size; written to a temporary name and renamed, so a killed build leaves no partial corpus.
    """
    cache_dir = textfiles.cache_dir(cache_dir)
    os.makedirs(cache_dir, exist_ok=True)
    path = os.path.join(cache_dir,
                        f"docstring_corpus_py{sys.version_info[0]}{sys.version_info[1]}_{max_bytes}_v2.txt")
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for document in iter_documents(max_bytes=max_bytes):
                f.write("\n".join(document) + "\n\n")
        os.replace(tmp, path)
    return path


def default_vocab_file(vocab_size=8192, lower_case=True, cache_dir=None):
    """Path of a WordPiece vocab learned on the default corpus (cached beside it; ~1 min the first time)."""
    from keras_bert.text.vocab import save_vocab
    from keras_bert.text.vocab_learner import learn_wordpiece_vocab

    corpus = default_corpus_path(cache_dir=cache_dir)
    path = f"{os.path.splitext(corpus)[0]}_vocab{vocab_size}_{'uncased' if lower_case else 'cased'}.txt"
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        save_vocab(learn_wordpiece_vocab(corpus, vocab_size, lower_case=lower_case), tmp)
        os.replace(tmp, path)
    return path
