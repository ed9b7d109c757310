"""Which preprocessor an export runs: the model's own (`model.preprocessor`, saved in its `.keras`), so
nothing is repeated at export; a preprocessor given beside it is an override and must agree with it on
the vocabulary and casing (a different sequence length is allowed)."""

from keras_bert.export.errors import ExportError
from keras_bert.models.pretrained import DEFAULT_SEQ_LENGTH
from keras_bert.models.pretrained import check_agrees as agrees
from keras_bert.text import BertPreprocessor, BertTokenizer


def check_agrees(model_preprocessor, preprocessor):
    """`keras_bert.models.pretrained.check_agrees`, raising ExportError."""
    try:
        agrees(model_preprocessor, preprocessor)
    except ValueError as e:
        raise ExportError(str(e)) from None


def serving_preprocessor(model, preprocessor=None):
    """The preprocessor an export of `model` runs: `preprocessor` when given (checked against
    `model.preprocessor` by `check_agrees`), else the model's own; None for a token-id-only model."""
    own = getattr(model, "preprocessor", None)
    if preprocessor is None:
        return own
    if own is not None:
        check_agrees(own, preprocessor)
    return preprocessor


def preprocessor_with_overrides(model, vocab_file=None, lower_case=None, seq_length=None,
                                default_vocab_file=None):
    """The model's preprocessor with each argument given (not None) overriding its part: `vocab_file`
    (path of a vocab.txt), `lower_case` (bool), `seq_length` (int). A model without a preprocessor gets one
    of `vocab_file` or `default_vocab_file` (lower_case default True, seq_length DEFAULT_SEQ_LENGTH), or
    None when both are None. Raises ExportError (see `check_agrees`) when an override contradicts the
    model."""
    own = getattr(model, "preprocessor", None)
    if own is None:
        vocab_file = vocab_file or default_vocab_file
        if vocab_file is None:
            return None
        tokenizer = BertTokenizer(vocab_file, lower_case=True if lower_case is None else lower_case)
        return BertPreprocessor(tokenizer, seq_length or DEFAULT_SEQ_LENGTH)
    if vocab_file is None and lower_case is None and seq_length in (None, own.seq_length):
        return own
    tokenizer = own.tokenizer
    lower_case = tokenizer.lower_case if lower_case is None else lower_case
    if vocab_file is not None or lower_case != tokenizer.lower_case:
        tokenizer = BertTokenizer(vocab_file, lower_case=lower_case,
                                  vocabulary=None if vocab_file else tokenizer.vocab)
    return serving_preprocessor(model, BertPreprocessor(tokenizer, seq_length or own.seq_length))
