"""The error an export raises when the model, preprocessor or export directory does not allow it."""


class ExportError(ValueError):
    """The model, preprocessor or export directory does not allow the export; the message says why."""
