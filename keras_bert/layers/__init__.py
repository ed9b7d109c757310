"""BERT's building blocks as Keras layers."""

from keras_bert.layers.dropout import HashDropout
from keras_bert.layers.embeddings import BertEmbeddings
from keras_bert.layers.heads import MaskedLMHead
from keras_bert.layers.transformer import TransformerBlock, attention_bias

__all__ = ["BertEmbeddings", "HashDropout", "MaskedLMHead", "TransformerBlock", "attention_bias"]
