"""Errors that reach a person: they carry a message worth reading, never a traceback."""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


class UserFacingError(Exception):
    """Something the user can fix (``usage``: a bad flag or file) or must know about."""

    usage = False

    def __init__(self, message: str, *, usage: bool | None = None):
        super().__init__(message)
        if usage is not None:
            self.usage = usage


class UsageError(UserFacingError):
    usage = True


def first_validation_error(exc: Any) -> str:
    """``where: what`` for the first error of a pydantic ValidationError."""
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err.get("loc", ()))
    return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))


def parse_toml_model(text: str, model: type[T], label: str, **extra: Any) -> T:
    """TOML text validated into ``model``; a clear :class:`UsageError` naming ``label`` otherwise."""
    import tomllib

    from pydantic import ValidationError

    try:
        return model.model_validate({**tomllib.loads(text), **extra})
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{label}: not valid TOML: {exc}") from exc
    except ValidationError as exc:
        raise UsageError(f"{label}: {first_validation_error(exc)}") from exc
