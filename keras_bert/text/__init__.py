"""Text pipeline: WordPiece tokenization with the original BERT ids, packing, MLM masking, vocabs."""

from keras_bert.text import unicode_rules, vocab, vocab_learner
from keras_bert.text.masking import MaskedLMMasker
from keras_bert.text.packer import BertPacker, BertPreprocessor
from keras_bert.text.splitter import BasicWordSplitter
from keras_bert.text.tokenizer import BertTokenizer

__all__ = ["BasicWordSplitter", "BertPacker", "BertPreprocessor", "BertTokenizer", "MaskedLMMasker",
           "unicode_rules", "vocab", "vocab_learner"]  # fmt: skip
