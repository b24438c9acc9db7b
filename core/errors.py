"""Errors that reach a person: they carry a message worth reading, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T", bound="BaseModel")


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


def read_text(path: str | Path, label: str, *, missing: str | None = None) -> str:
    """The UTF-8 text of a file the user named or configured.

    Whatever keeps it from being read (it is missing, a directory, not readable, not UTF-8)
    is a :class:`UsageError` of one line that starts with ``label`` (``missing`` replaces the
    whole message for a file that does not exist).
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(missing or f"{label}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{label}: is a directory, not a file") from None
    except PermissionError:
        raise UsageError(f"{label}: permission denied; make it readable") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{label}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise UsageError(f"{label}: cannot be read ({exc.strerror or exc})") from None


def one_line(message: str) -> str:
    """A message as one line: its lines joined with ``; `` (pydantic's help links left out)."""
    lines = [line.strip() for line in message.splitlines()]
    kept = [line for line in lines if line and not line.startswith("For further information visit")]
    return "; ".join(kept)


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
