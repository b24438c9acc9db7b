"""``python -m core.cli COMMAND ...``: the headless commands without the full-screen app."""

from __future__ import annotations

import sys

from core.cli.entry import main

sys.exit(main())
