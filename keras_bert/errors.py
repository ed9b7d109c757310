"""The base class of the errors a user fixes in their data, files, flags or disk, not in our code.

Every error type of the library that reports such a problem derives from `UserInputError` (data files:
`textfiles.DataFormatError`; checkpoints: `checkpoints.mapping.CheckpointError`; exports:
`export.ExportError`; a diverged run: `TrainingDivergedError`; a full disk: `DiskFullError`), but for the
servability check's `ServabilityError`, which may not import keras_bert (its package loads without it). The
scripts print these as one line, `error: <message>`, where other exceptions, which are bugs, keep their
traceback (recipes/logs.py).
"""


class UserInputError(Exception):
    """A problem in what the user gave (data, files, flags, disk); the message says what and where."""


class DiskFullError(UserInputError, OSError):
    """A write failed for lack of space; the message names the directory."""
