"""Text pipeline: WordPiece tokenization with the original BERT ids, packing, MLM masking, vocabs."""

from keras_bert.text import vocab
from keras_bert.text.masking import MaskedLMMasker
from keras_bert.text.packer import BertPacker, BertPreprocessor
from keras_bert.text.tokenizer import BasicWordSplitter, BertTokenizer

__all__ = ["BasicWordSplitter", "BertPacker", "BertPreprocessor", "BertTokenizer", "MaskedLMMasker", "vocab"]
