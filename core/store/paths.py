"""Where the database lives. Cheap to import: the settings and the demo ask for the data folder."""

from __future__ import annotations

import os
from pathlib import Path

DB_NAME = "deferchat.db"


def data_dir() -> Path:
    """``$DEFERCHAT_HOME`` if set, else ``$XDG_DATA_HOME/deferchat`` (``~/.local/share/deferchat``)."""
    home = os.environ.get("DEFERCHAT_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "deferchat"


def default_db_path() -> Path:
    return data_dir() / DB_NAME
