"""Which preprocessor an export runs: the model's own (`model.preprocessor`, saved in its `.keras`), so
nothing is repeated at export; a preprocessor given beside it is an override and must agree with it on
the vocabulary and casing (a different sequence length is allowed). The export CLIs' --vocab_file,
--do_lower_case and --max_seq_length are applied by the loader (`keras_bert.load_pretrained_model`)."""

from keras_bert.export.errors import ExportError
from keras_bert.models.pretrained import check_agrees as agrees


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

