"""Static pre-training examples of a whole tokenized corpus: NSP pairs of every document, `dupe_factor`
times, shuffled, then packed and masked chunk by chunk (each chunk with its own seed, so chunks can be built
by several threads and still give the same examples)."""

import numpy as np

from keras_bert.data.pretraining import corpus as corpus_lib
from keras_bert.data.pretraining import masking as masking_lib
from keras_bert.data.pretraining import pairing
from keras_bert.data.pretraining.config import FEATURE_TO_INPUT
from keras_bert.text import masking


class ExampleBuilder:
    """The shuffled NSP spans of a corpus, cut into chunks of `chunk_size` examples, built one chunk at a
    time.

    Args:
        documents: a `TokenizedCorpus` or lists of token-id sequences (at least 2 documents with text).
        tokenizer: a `BertTokenizer`, or any object with `vocab_size`, `cls_id`, `sep_id`, `mask_id`,
            `special_ids` (and `vocab`, for whole-word masking).
        config: a `PretrainingDataConfig`.
        source: names the input in errors (e.g. its files).
        chunk_size: examples per chunk (and per masking seed).
    """

    def __init__(self, documents, tokenizer, config, source="corpus", chunk_size=8192):
        self.corpus = (documents if isinstance(documents, corpus_lib.TokenizedCorpus)
                       else corpus_lib.TokenizedCorpus.from_documents(documents))
        corpus_lib.check_documents(self.corpus, source)
        rng = np.random.default_rng(config.seed)
        spans = pairing.create_instance_spans(self.corpus, config.dupe_factor, config.max_seq_length,
                                              config.short_seq_prob, rng)
        order = rng.permutation(len(spans["a_start"]))  # the original shuffles all instances
        self.spans = {name: values[order] for name, values in spans.items()}
        self.size = len(order)
        self.num_chunks = max(1, -(-self.size // chunk_size))
        self.chunk_size, self.config, self.mask_id = chunk_size, config, tokenizer.mask_id
        self.tokens = pairing.with_special_tokens(self.corpus.tokens, config.max_seq_length, tokenizer.cls_id,
                                                  tokenizer.sep_id)
        self.continuation = masking.continuation_pieces(tokenizer.vocab) if config.whole_word_mask else None
        self.vocab_size, self.special_ids = tokenizer.vocab_size, tokenizer.special_ids

    def build(self, chunk):
        """The examples of chunk `chunk` (dict of numpy arrays, original names)."""
        start = chunk * self.chunk_size
        spans = {name: values[start:start + self.chunk_size] for name, values in self.spans.items()}
        features = pairing.pack_spans(self.tokens, spans, self.config.max_seq_length)
        rng = np.random.default_rng([self.config.seed, chunk])
        return masking_lib.mask_tokens(features, self.config, self.vocab_size, self.mask_id, self.special_ids,
                                       rng, self.continuation)


def create_pretraining_examples(documents, tokenizer, config, source="corpus", chunk_size=8192):
    """Tokenized documents -> static-masked examples, shuffled: dict of numpy arrays (original names).

    Arguments as `ExampleBuilder`. `config.dupe_factor` passes over the documents, each with fresh pairs
    (`pairing.create_instance_spans`) and masks (`masking.mask_tokens`), as the original. The same arguments
    give the examples `write_pretraining_data` writes, in the same order.
    """
    builder = ExampleBuilder(documents, tokenizer, config, source, chunk_size)
    parts = [builder.build(chunk) for chunk in range(builder.num_chunks)]
    return {name: np.concatenate([part[name] for part in parts]) for name in FEATURE_TO_INPUT}
