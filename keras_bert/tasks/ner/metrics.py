"""Entity-level precision/recall/F1 with the semantics of `conlleval.pl` (CoNLL-2000/2003).

Chunks are read from the tags with conlleval's rules, which serve IOB1 (`I-` opens a chunk, `B-` only
separates two adjacent chunks of one type) and IOB2 (every chunk opens with `B-`) alike:
  * a chunk starts at `B-X`; at `I-X` after `O` (or at sentence start); and at any tag whose type differs
    from the previous tag's type (`B-PER I-LOC` is two chunks);
  * a chunk ends before `B-`, before `O`, before a change of type, and at the end of the sentence.
A guessed chunk is correct when it starts and ends at the same tokens as a gold chunk of the same type.
`conlleval` counts as the script does, token by token with a blank line after each sentence, so tags outside
IOB/IOBES (`[`, `]`, `.`, no type, type `0`, which Perl reads as no type) score exactly as in conlleval.pl.
`iobes=True` adds the rules of the IOBES-aware conlleval variant (`E-` closes and `S-` is a one-token chunk);
plain conlleval does not know `S-` and would merge `S-PER S-PER` into one chunk.

    conlleval([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])["f1"]   # 0.0
"""

import re

_TAG = re.compile(r"^([^-]*)-(.*)$")


def split_tag(tag):
    """`"B-PER"` -> `("B", "PER")`; a tag without "-" (`"O"`) -> `(tag, "")`. Types may contain "-"."""
    match = _TAG.match(tag)
    return (match.group(1), match.group(2)) if match else (tag, "")


def _end_of_chunk(prev_tag, tag, prev_type, type_, iobes):
    if (prev_tag, tag) in (("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"),
                           ("E", "O")):
        return True
    if iobes and (prev_tag in ("E", "S") or (prev_tag in ("B", "I") and tag == "S")):
        return True
    if prev_tag not in ("O", ".") and prev_type != type_:
        return True
    return prev_tag in ("[", "]")  # bracket chunks have length 1


def _start_of_chunk(prev_tag, tag, prev_type, type_, iobes):
    if (prev_tag, tag) in (("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"),
                           ("O", "E")):
        return True
    if iobes and (tag == "S" or (prev_tag in ("S", "E") and tag in ("B", "I", "E"))):
        return True
    if tag not in ("O", ".") and prev_type != type_:
        return True
    return tag in ("[", "]")


def chunk_transition(previous, tag, iobes=False):
    """(ends, starts) between two adjacent tags (`previous` "O" at sentence start, `tag` "O" past its end):
    whether a chunk open at `previous` ends there, and whether `tag` starts one. The rule `extract_chunks`
    applies; the served NER graph tabulates it over the model's tags."""
    (prev_tag, prev_type), (tag, type_) = split_tag(previous), split_tag(tag)
    return (_end_of_chunk(prev_tag, tag, prev_type, type_, iobes),
            _start_of_chunk(prev_tag, tag, prev_type, type_, iobes))


def extract_chunks(tags, iobes=False):
    """The chunks of one sentence's tags under conlleval's rules: list of `(type, first, last)` token indices.

    A start also closes an open chunk, and the sentence's end closes any (only "." tags can leave one open).
    """
    chunks, open_chunk = [], None
    prev_tag, prev_type = "O", ""
    for position, (tag, type_) in enumerate([split_tag(t) for t in tags] + [("O", "")]):
        starts = position < len(tags) and _start_of_chunk(prev_tag, tag, prev_type, type_, iobes)
        ends = starts or position == len(tags) or _end_of_chunk(prev_tag, tag, prev_type, type_, iobes)
        if open_chunk is not None and ends:
            chunks.append((open_chunk[0], open_chunk[1], position - 1))
            open_chunk = None
        if starts:
            open_chunk = (type_, position)
        prev_tag, prev_type = tag, type_
    return chunks


def _ratios(correct, guessed, gold):
    precision = correct / guessed if guessed else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _script_tag(tag):
    # conlleval.pl keeps a type only when Perl finds it true: the type "0" is read as no type.
    prefix, type_ = split_tag(tag)
    return prefix, ("" if type_ == "0" else type_)


def _count_sentence(counts, gold_sentence, guessed_sentence, iobes):
    """Runs conlleval.pl's counting loop over one sentence and the blank line after it, updating `counts`."""
    state = counts["state"]
    rows = [(_script_tag(g), _script_tag(p)) for g, p in zip(gold_sentence, guessed_sentence, strict=True)]
    for index, ((gold, gold_type), (guessed, guessed_type)) in enumerate([*rows, (("O", ""), ("O", ""))]):
        (last_gold, last_gold_type), (last_guessed, last_guessed_type) = state["last"]
        gold_end = _end_of_chunk(last_gold, gold, last_gold_type, gold_type, iobes)
        guessed_end = _end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type, iobes)
        if state["matching"]:
            if gold_end and guessed_end and last_gold_type == last_guessed_type:
                state["matching"] = False
                counts["correct"][last_gold_type] = counts["correct"].get(last_gold_type, 0) + 1
            elif gold_end != guessed_end or gold_type != guessed_type:
                state["matching"] = False
        gold_start = _start_of_chunk(last_gold, gold, last_gold_type, gold_type, iobes)
        guessed_start = _start_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type, iobes)
        if gold_start and guessed_start and gold_type == guessed_type:
            state["matching"] = True
        if gold_start:
            counts["gold"][gold_type] = counts["gold"].get(gold_type, 0) + 1
        if guessed_start:
            counts["guessed"][guessed_type] = counts["guessed"].get(guessed_type, 0) + 1
        if index < len(rows):
            counts["tokens"] += 1
            counts["correct_tags"] += (gold, gold_type) == (guessed, guessed_type)
        state["last"] = ((gold, gold_type), (guessed, guessed_type))


def conlleval(true_tags, predicted_tags, iobes=False):
    """Scores predicted tag sequences against gold ones, exactly as `conlleval.pl` does.

    Args:
      true_tags: list of sentences, each a list of gold tag strings ("B-PER", "I-LOC", "O", ...).
      predicted_tags: the same shape, predicted tags.
      iobes: also apply the E-/S- rules (see the module docstring).

    Returns:
      dict with "precision", "recall", "f1" (fractions in [0, 1]; 0.0 where undefined), "accuracy" (token
      tag accuracy), counts "true_chunks", "predicted_chunks", "correct_chunks", "tokens", and "per_type":
      type -> {"precision", "recall", "f1", "true_chunks", "predicted_chunks", "correct_chunks"} (chunks of
      tags without a type, such as `[`, under "").
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} gold sentences but {len(predicted_tags)} predicted")
    counts = {"correct": {}, "gold": {}, "guessed": {}, "tokens": 0, "correct_tags": 0,
              "state": {"matching": False, "last": (("O", ""), ("O", ""))}}
    for sentence_index, (gold_sentence, guessed_sentence) in enumerate(zip(true_tags, predicted_tags,
                                                                           strict=True)):
        if len(gold_sentence) != len(guessed_sentence):
            raise ValueError(f"sentence {sentence_index}: {len(gold_sentence)} gold tags but "
                             f"{len(guessed_sentence)} predicted")
        _count_sentence(counts, gold_sentence, guessed_sentence, iobes)
    if counts["state"]["matching"]:  # still open at the end: the script credits the last gold type (here "")
        type_ = counts["state"]["last"][0][1]
        counts["correct"][type_] = counts["correct"].get(type_, 0) + 1

    def summary(correct, guessed, gold):
        precision, recall, f1 = _ratios(correct, guessed, gold)
        return {"precision": precision, "recall": recall, "f1": f1, "true_chunks": gold,
                "predicted_chunks": guessed, "correct_chunks": correct}

    result = summary(sum(counts["correct"].values()), sum(counts["guessed"].values()),
                     sum(counts["gold"].values()))
    result["accuracy"] = counts["correct_tags"] / counts["tokens"] if counts["tokens"] else 0.0
    result["tokens"] = counts["tokens"]
    result["per_type"] = {
        type_: summary(counts["correct"].get(type_, 0), counts["guessed"].get(type_, 0),
                       counts["gold"].get(type_, 0))
        for type_ in sorted(set(counts["gold"]) | set(counts["guessed"]))
    }
    return result
