"""Exceptions kernsolve raises for bad input (all are ValueErrors)."""


class DataFormatError(ValueError):
    """A LIBSVM-format data file is malformed; the message is ``file:line: problem``."""


class ModelFormatError(ValueError):
    """A model file is corrupt or truncated; the message names the file and line."""
