"""The error an export raises when the model, preprocessor or export directory does not allow it."""

from keras_bert.errors import UserInputError


class ExportError(UserInputError, ValueError):
    """The model, preprocessor or export directory does not allow the export; the message says why."""
