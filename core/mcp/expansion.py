"""``${VAR}`` expansion, the secrets it brings in, and how they are put back.

``${VAR}`` and ``${VAR:-default}`` (``:-`` as in the shell: the default also replaces an empty
value) are expanded by :func:`expand`; each value taken from the environment is remembered
(:func:`expand_tracked`), so :func:`redact` can put it back as its ``${VAR}`` wherever it would
be shown. :func:`safe_environment` is the part of deferchat's environment a stdio server inherits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# Variables a server inherits from deferchat's environment. Nothing that can hold a secret.
SAFE_ENV_VARS: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    # Windows needs these to start anything at all.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "TEMP",
    "TMP",
    "APPDATA",
    "LOCALAPPDATA",
    "USERPROFILE",
)

# ``${VAR}`` / ``${VAR:-default}``: group 1 the name, group 2 the default
VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class Unset(Exception):
    """Variables used with no default that the environment does not set (:attr:`names`)."""

    def __init__(self, names: list[str]):
        self.names = names


def expand(text: str, environ: Mapping[str, str]) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``. Raises :class:`Unset` naming what is missing."""
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        value = environ.get(name)
        if value:
            return value
        if default is not None:
            return default
        if value is None:
            missing.append(name)
            return ""
        return value  # set but empty, no default: empty, as in the shell

    out = VAR_RE.sub(sub, text)
    if missing:
        raise Unset(missing)
    return out


from core.redaction import MIN_SECRET_LEN  # noqa: E402  (shorter expanded values are not hunted for)


def expand_tracked(text: str, environ: Mapping[str, str], secrets: dict[str, str]) -> str:
    """:func:`expand`, noting each value taken from ``environ`` as ``secrets[value] = "${VAR}"``."""
    out = expand(text, environ)
    for m in VAR_RE.finditer(text):
        value = environ.get(m.group(1))
        if value and len(value) >= MIN_SECRET_LEN:
            secrets.setdefault(value, "${" + m.group(1) + "}")
    return out


def redact(text: str, secrets: Sequence[tuple[str, str]]) -> str:
    """Put each secret value found in ``text`` (in any spelling: as is, percent-encoded in either
    case, double encoded, ``+`` for a space) back as its placeholder, and take out what else looks
    like a credential (URL userinfo, query tokens, key shapes): :func:`core.redaction.redact`."""
    from core.redaction import redact as redact_all

    return redact_all(text, secrets)


def safe_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The part of ``environ`` a server may inherit: :data:`SAFE_ENV_VARS` and the ``LC_*``
    locale variables, shell functions dropped. Nothing else (no provider key) is inherited."""
    names = [*SAFE_ENV_VARS, *sorted(k for k in environ if k.startswith("LC_") and k not in SAFE_ENV_VARS)]
    return {k: environ[k] for k in names if k in environ and not environ[k].startswith("()")}
