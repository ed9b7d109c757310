"""The original `create_pretraining_data.py` NSP loop in plain Python, one document and one token at a time:
the reference `keras_bert.data.pretraining.pairing` (vectorized) is tested against, and the baseline of
benchmarks/create_pretraining_data.py. Not library code: nothing in keras_bert runs it."""


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Truncates the longer of two lists in place, one token at a time, from the front or back at random."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc[0]
        else:
            trunc.pop()


def create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob, rng):
    """NSP segment pairs from one document, the original `create_pretraining_data.py` loop in plain Python.

    The library runs `create_instance_spans` instead (the same algorithm for all documents at once, in numpy).

    Args:
        all_documents: list of documents, each a list of sentences (sequences of token ids).
        document_index: the document to cut into pairs.
        max_seq_length: packed length including [CLS] and two [SEP]s.
        short_seq_prob: probability of a shorter random target length (to reduce train/test mismatch).
        rng: a `random.Random`.

    Returns: list of (tokens_a, tokens_b, is_random_next) with lists of ids; half of the B segments (and
    all of those from a one-chunk document) come from a random other document.
    """
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances, current_chunk, current_length, i = [], [], 0, 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            a_end = rng.randint(1, len(current_chunk) - 1) if len(current_chunk) >= 2 else 1
            tokens_a = [t for s in current_chunk[:a_end] for t in s]
            tokens_b = []
            if len(current_chunk) == 1 or rng.random() < 0.5:
                is_random_next = True
                target_b_length = target_seq_length - len(tokens_a)
                # Ten tries for another document, as the original (a one-document corpus is refused earlier).
                for _ in range(10):
                    random_index = rng.randint(0, len(all_documents) - 1)
                    if random_index != document_index:
                        break
                random_document = all_documents[random_index]
                for sentence in random_document[rng.randint(0, len(random_document) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target_b_length:
                        break
                # The unused segments go back to the document for the next pair.
                i -= len(current_chunk) - a_end
            else:
                is_random_next = False
                tokens_b = [t for s in current_chunk[a_end:] for t in s]
            truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
            if tokens_a and tokens_b:
                instances.append((tokens_a, tokens_b, is_random_next))
            current_chunk, current_length = [], 0
        i += 1
    return instances

