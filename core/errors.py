"""Errors that reach a person: they carry a message worth reading, never a traceback."""

from __future__ import annotations


class UserFacingError(Exception):
    """Something the user can fix (``usage``: a bad flag or file) or must know about."""

    usage = False

    def __init__(self, message: str, *, usage: bool | None = None):
        super().__init__(message)
        if usage is not None:
            self.usage = usage


class UsageError(UserFacingError):
    usage = True
