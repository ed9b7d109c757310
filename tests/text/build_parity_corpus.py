"""Builds tests/text/data/parity_corpus.txt.xz, the mixed-language text of the tokenizer parity test.

Run once (the output is committed, about 0.3 MB compressed, 1.2 MB of UTF-8):
    python tests/text/build_parity_corpus.py

Sources, all real text found on the build machine, taken in sorted order so reruns agree:
  * English: docstrings of Python modules in the environment (stdlib and site-packages);
  * 20 languages (accented Latin, Greek, Cyrillic, CJK, Japanese, Korean, Vietnamese, Arabic, Hebrew,
    Hindi, Thai, ...): message translations from /usr/share/locale/*/LC_MESSAGES/*.mo;
  * edge cases mixed into copies of those lines with a fixed seed: control and format characters,
    \\r \\t \\x0b \\x0c \\x85 U+2028/2029, NBSP and other Zs, zero-width characters, decomposed accents,
    full-width forms, ligatures, emoji (ZWJ sequences, flags, tag characters, skin tones), capital sigma
    in every position, dotted capital I, CJK extension B, private-use and unassigned code points,
    literal "[CLS]"/"##" text, and words of 99-130 characters (ASCII and multi-byte).
Lines are separated by "\\n" only; no line contains "\\n".
"""

import ast
import gettext
import glob
import lzma
import os
import random
import sys
import sysconfig

OUTPUT = os.path.join(os.path.dirname(__file__), "data", "parity_corpus.txt.xz")
LANGUAGES = (
    "de fr es it pt_BR pl cs tr vi ru uk el zh_CN zh_TW ja ko ar he hi th".split()
)  # fmt: skip
BYTES_PER_LANGUAGE = 30_000
ENGLISH_BYTES = 450_000
EDGE_LINES = 3_000

EDGE_FRAGMENTS = [
    "\x00", "\x01", "\x07", "\x1b[0m", "\x7f", "\x85", "\x0b", "\x0c", "\r", "\t", "\r\t", "\x1c\x1d\x1e\x1f",
    "\u00ad", "\u200b", "\u200c", "\u200d", "\u2060",
    "\ufeff", "\u202e", "\u2066", "\ufffd", "\u2028", "\u2029",
    "\u00a0", "\u2003", "\u3000", "\u1680", "\u202f", "\u180e",
    "e\u0301", "A\u030a", "n\u0303o", "\u0301", "\u0308\u0301x", "o\u0327\u0301", "\u1e9b\u0323",
    "ＡＢＣｄｅｆ１２３", "（全角）", "，：？！", "ｶﾀｶﾅ",
    "\ufb01nance", "\ufb03", "\u2126", "\u212b", "\u1fef",
    "\u0385", "\u037e", "\u0387", "\u00b5", "\u2160\u2161", "\u2460", "\u00bd", "x\u00b2",
    "😀", "👍🏽", "👨\u200d👩\u200d👧",
    "🇫🇷", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "🫠", "❤\ufe0f",
    "ΣΊΣΥΦΟΣ", "ΟΔΟΣ.", "Σ", "aΣ", "Σa", "AΣ\u0301", "A\u00adΣ", "AΣ'", "AΣ'B", "1Σ", "ΑΣ.ΒΣ", "ὈΔΥΣΣΕΎΣ",
    "İstanbul", "\u0130I\u0131i", "ǅungla", "ǈ", "ß\u1e9e", "ŉ", "ﬀ", "Ǆ", "\u023a\u2c65", "\u0345",
    "\U00020000\U0002a6d6", "\U0002b740", "\U0002f800", "\uf900\ufa6d",
    "\u3400", "한국어 텍스트", "ㄱㅏ", "\u1100\u1161",
    "\ue000\uf8ff", "\U000f0000", "\U0010fffd", "\u0378", "\U000e0001", "\U0001d15e\U0001d165\U0001d16d",
    "[CLS]", "[SEP]", "[MASK]", "##ing", "##", "[UNK]", "<s>", "don't", "e-mail", "U.S.A.", "3.14159", "$100",
    "a_b", "^caret^", "`tick`", "~tilde~", "@user", "#tag", "C++", "x=y+z", "«quote»", "„Zitat“", "—", "…",
    "¿Qué?", "¡Hola!", "؟", "،", "।", "。", "、",
    "「括弧」", "《书名》", "・", "〜", "\u055d", "\u0589", "\u1362",
]  # fmt: skip


def english_lines():
    """Docstring paragraphs of the Python modules in this environment, sorted by path."""
    roots = [sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]]
    paths = sorted(p for root in roots for p in glob.glob(os.path.join(root, "**", "*.py"), recursive=True))
    total = 0
    for path in paths:
        if "/test" in path or "site-packages/keras_bert" in path:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
        except (SyntaxError, UnicodeDecodeError, ValueError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if not doc or len(doc) < 200:
                    continue
                for paragraph in doc.split("\n\n"):
                    line = " ".join(paragraph.split())
                    if len(line) < 40:
                        continue
                    yield line
                    total += len(line.encode("utf-8")) + 1
                    if total >= ENGLISH_BYTES:
                        return


def translated_lines(language):
    """Message translations of one language from the system's .mo catalogues, sorted by file."""
    total = 0
    for path in sorted(glob.glob(f"/usr/share/locale/{language}/LC_MESSAGES/*.mo")):
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)
        except (OSError, UnicodeDecodeError, gettext.struct.error):
            continue
        for key in sorted(catalog._catalog, key=str):
            text = catalog._catalog[key]
            for line in str(text).split("\n"):
                line = line.strip()
                if len(line) < 8 or "\x00" in line:
                    continue
                yield line
                total += len(line.encode("utf-8")) + 1
                if total >= BYTES_PER_LANGUAGE:
                    return


def edge_lines(base_lines, rng):
    """Copies of real lines with edge-case fragments spliced in at word boundaries and inside words."""
    long_words = [
        "a" * 99, "b" * 100, "c" * 101, "é" * 100, "é" * 101, "Ü" * 100, "你" * 120, "😀" * 101,
        "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3, "x" * 130, "ab" * 50 + "\u0301", "İ" * 100,
    ]  # fmt: skip
    for _ in range(EDGE_LINES):
        words = rng.choice(base_lines).split(" ")
        for _ in range(rng.randint(1, 6)):
            fragment = rng.choice(EDGE_FRAGMENTS if rng.random() < 0.9 else long_words)
            position = rng.randrange(len(words) + 1)
            if rng.random() < 0.5 or not words:
                words.insert(position, fragment)
            else:
                word = words[min(position, len(words) - 1)]
                cut = rng.randrange(len(word) + 1)
                words[min(position, len(words) - 1)] = word[:cut] + fragment + word[cut:]
        yield " ".join(words).replace("\n", " ")


def build():
    english = list(english_lines())
    translated = [line for language in LANGUAGES for line in translated_lines(language)]
    if len(translated) < 1000:
        sys.exit("too few .mo translations under /usr/share/locale; this builder needs a machine with them")
    rng = random.Random(20181011)
    edges = list(edge_lines(english[:2000] + translated, rng))
    lines = english + translated + edges + [""] * 3 + ["   \t  ", "\u3000\u00a0", "\x00\x01"]
    rng.shuffle(lines)
    text = "\n".join(line.replace("\n", " ") for line in lines) + "\n"
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with lzma.open(OUTPUT, "wt", encoding="utf-8", preset=9) as f:
        f.write(text)
    size = len(text.encode("utf-8"))
    print(
        f"{OUTPUT}: {len(lines)} lines, {size / 1e6:.2f} MB of UTF-8, "
        f"{os.path.getsize(OUTPUT) / 1e6:.2f} MB xz"
    )


if __name__ == "__main__":
    build()
