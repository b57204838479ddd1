"""The one error of ``dmljax compare``: a model, a results folder or an option that cannot be
compared, as ``PATH: WHERE: WHAT`` (the format of ``dmljax run``'s ModelError)."""

from __future__ import annotations

__all__ = ["CompareError"]


class CompareError(ValueError):
    """Bad input to a comparison: ``path`` is the file or folder at fault, ``where`` the part of
    it (a file name, an option, a tensor), and the message says what is wrong and what would
    be right."""

    def __init__(self, path: str, where: str, message: str):
        self.path, self.where = path, where
        super().__init__(f"{path}: {where}: {message}" if where else f"{path}: {message}")
