"""The one error the servability check raises."""

from keras_bert.errors import UserInputError


class ServabilityError(UserInputError, RuntimeError):
    """The export would not load or run in TF Serving; the message says what failed."""
