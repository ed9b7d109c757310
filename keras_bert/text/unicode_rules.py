"""The character rules of Google's BasicTokenizer, stated once, on top of Python's `unicodedata`.

The original `tokenization.py` does, per string:
  1. drop U+0000, U+FFFD and control characters (category Cc/Cf other than \\t \\n \\r); whitespace → " ";
  2. put spaces around CJK ideographs; split on whitespace (Python `str.split`, so U+2028/U+2029 too);
  3. uncased only: per whitespace token, Python `str.lower()` (full case mapping, final sigma), NFD, drop Mn;
  4. split on punctuation (ASCII 33-47, 58-64, 91-96, 123-126 and Unicode category P*);
  5. WordPiece greedy longest-match-first with "##", [UNK] for words over 100 characters.

This module holds steps 1-4 and the 100-character limit of step 5: the per-character predicates,
`basic_tokenize` (the rules on one Python str; SQuAD answer alignment uses it, as the original
run_squad.py reuses BasicTokenizer) and `code_point_table` (the same predicates evaluated for every code
point, which `BasicWordSplitter` turns into TF lookup tables). The vocab learner takes its words from
that splitter and its length limit from here, so all three agree by construction.
"""

import collections
import unicodedata

import numpy as np

MAX_CHARS_PER_WORD = 100  # the original's max_input_chars_per_word: a longer word is one [UNK]
KEPT_WHITESPACE = " \t\n\r"  # the only characters under " " that the original keeps (as spaces)
ASCII_PUNCTUATION_RANGES = ((33, 47), (58, 64), (91, 96), (123, 126))  # every printable non-alphanumeric
CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def is_control(char):
    """True for a control character the original removes: category Cc/Cf other than \\t \\n \\r.

    Args:
        char: one character (str of length 1).

    Returns:
        bool.
    """
    return char not in KEPT_WHITESPACE and unicodedata.category(char) in ("Cc", "Cf")


def is_dropped(char):
    """True for a character step 1 removes without a trace (no output, no word boundary).

    Args:
        char: one character (str of length 1).

    Returns:
        bool.
    """
    return char in ("\x00", "\ufffd") or is_control(char)


def is_whitespace(char):
    """True for a word boundary of a character that is not dropped: the original's " \\t\\n\\r" and Zs, and
    what its `str.split` also splits on (U+2028, U+2029; the other `isspace` ones are Cc, so dropped).

    Args:
        char: one character (str of length 1).

    Returns:
        bool.
    """
    return char in KEPT_WHITESPACE or unicodedata.category(char) == "Zs" or char.isspace()


def is_cjk(char):
    """True for a CJK ideograph, which the original makes a word of its own.

    Args:
        char: one character (str of length 1).

    Returns:
        bool.
    """
    cp = ord(char)
    return any(low <= cp <= high for low, high in CJK_RANGES)


def is_punctuation(char):
    """True for a character that is a word of its own: ASCII non-alphanumerics and category P*.

    Args:
        char: one character (str of length 1).

    Returns:
        bool.
    """
    cp = ord(char)
    if any(low <= cp <= high for low, high in ASCII_PUNCTUATION_RANGES):
        return True
    return unicodedata.category(char).startswith("P")


def lower_and_strip_accents(text, lower=True, strip_accents=True):
    """The uncased mapping of a str: `str.lower`, NFD, drop Mn (pass whole tokens: final sigma). KerasHub
    presets may ask for either step alone (`lower`, `strip_accents`).

    Args:
        text: str, a whole token (the final-sigma rule looks at its neighbours).
        lower: apply `str.lower` (default True).
        strip_accents: apply NFD and drop the combining marks (category Mn) (default True).

    Returns:
        The mapped str.
    """
    text = text.lower() if lower else text
    if not strip_accents:
        return text
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def basic_tokenize(text, lower_case):
    """The original BasicTokenizer on one str (steps 1-4), in plain Python.

    For a few short strings (SQuAD answer spans); batches go through `BasicWordSplitter` (TF ops).

    Args:
        text: str.
        lower_case: lower-case and strip accents (uncased models).

    Returns:
        list of str: the words, punctuation characters as words of their own.
    """
    cleaned = []
    for char in text:
        if is_dropped(char):
            continue
        if is_whitespace(char):
            cleaned.append(" ")
        elif is_cjk(char):
            cleaned.append(f" {char} ")
        else:
            cleaned.append(char)
    words = []
    for token in "".join(cleaned).split():
        if lower_case:
            token = lower_and_strip_accents(token)
        piece = ""
        for char in token:
            if is_punctuation(char):
                if piece:
                    words.append(piece)
                words.append(char)
                piece = ""
            else:
                piece += char
        if piece:
            words.append(piece)
    return words


# What step 1-2 does with a code point (`CodePointTable.kind`).
KEEP, DROP, SPACE, CJK = 0, 1, 2, 3
MAX_MAPPED = 3  # longest lower+NFD+strip result of one character (Hangul LVT syllables)
NUM_CODE_POINTS = 0x110000

CodePointTable = collections.namedtuple(
    "CodePointTable", ["kind", "mapped", "mapped_length", "punctuation", "cased", "case_ignorable"]
)
CodePointTable.__doc__ = """The rules for every code point c in [0, 0x110000), as numpy arrays indexed by c.

    kind: int8, KEEP / DROP / SPACE / CJK (steps 1-2).
    mapped: int32 [n, MAX_MAPPED], the output code points of c (step 3 when uncased, else c), 0-padded.
    mapped_length: int8, how many of `mapped` are used (0 for DROP, SPACE and a lone accent).
    punctuation: bool, the output is punctuation (step 4; NFD can turn U+1FEF into "`").
    cased, case_ignorable: bool, Unicode's Cased / Case_Ignorable as `str.lower`'s final-sigma rule sees
        them (uncased only; dropped characters count as ignorable: the rule skips them).
"""


def code_point_table(lower_case, strip_accents=None):
    """Evaluates the rules for every code point (about 1 s); returns a `CodePointTable`. `strip_accents`
    (default: `lower_case`, the original's rule) decouples step 3's NFD + drop Mn from lower-casing.

    Args:
        lower_case: the uncased rules (lower-casing, and accent stripping unless `strip_accents` says).
        strip_accents: None (default: as `lower_case`), True or False.

    Returns:
        A `CodePointTable` of numpy arrays indexed by code point (0x110000 rows).
    """
    strip_accents = lower_case if strip_accents is None else strip_accents
    kind = np.full(NUM_CODE_POINTS, KEEP, np.int8)
    mapped = np.zeros((NUM_CODE_POINTS, MAX_MAPPED), np.int32)
    mapped[:, 0] = np.arange(NUM_CODE_POINTS)  # default: kept as itself, one character
    mapped_length = np.ones(NUM_CODE_POINTS, np.int8)
    # Python lists, written into the arrays at the end: numpy item assignment is the slow part.
    dropped, spaces, cjk, punctuation, cased, case_ignorable, changed = [], [], [], [], [], [], {}
    for cp in range(NUM_CODE_POINTS):
        char = chr(cp)
        if unicodedata.category(char) in ("Cn", "Co", "Cs"):
            continue  # unassigned/private/surrogate: not control, space, punctuation; lower/NFD keep it
        if is_dropped(char):
            dropped.append(cp)
            continue
        if is_whitespace(char):
            spaces.append(cp)
            continue
        if is_cjk(char):
            cjk.append(cp)
        out = lower_and_strip_accents(char, lower_case, strip_accents)
        if lower_case:
            # Read Cased / Case_Ignorable off str.lower itself, so they come from the same database.
            if (char + "\u03a3").lower()[-1] == "\u03c2":
                cased.append(cp)
            elif ("A" + char + "\u03a3").lower()[-1] == "\u03c2":
                case_ignorable.append(cp)
        if len(out) > MAX_MAPPED:
            raise AssertionError(f"U+{cp:04X} maps to {len(out)} characters; expected at most {MAX_MAPPED}")
        if any(is_punctuation(c) for c in out):
            if len(out) != 1:
                raise AssertionError(f"U+{cp:04X} maps to several characters, one of them punctuation")
            punctuation.append(cp)
        if out != char:
            changed[cp] = out
    kind[cjk] = CJK
    kind[spaces] = SPACE
    kind[dropped] = DROP
    mapped_length[spaces + dropped] = 0
    for cp, out in changed.items():
        mapped[cp] = [ord(c) for c in out] + [0] * (MAX_MAPPED - len(out))
        mapped_length[cp] = len(out)
    flags = []
    for indices in (punctuation, cased, case_ignorable + dropped):  # the final-sigma rule skips dropped ones
        flag = np.zeros(NUM_CODE_POINTS, bool)
        flag[indices] = True
        flags.append(flag)
    return CodePointTable(kind, mapped, mapped_length, *flags)
