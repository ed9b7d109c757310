"""The one error the servability check raises."""


class ServabilityError(RuntimeError):
    """The export would not load or run in TF Serving; the message says what failed."""
