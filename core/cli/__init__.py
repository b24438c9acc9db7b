"""The headless ``deferchat`` commands: a presentation of the engine, like the TUI.

One module per command (``plan``, ``ask``, ``resume``, ``chats``, ``search``, ``servers``),
each with a ``run(args) -> exit code``; ``printer`` and ``approver`` are what ``ask`` and
``resume`` share; ``options`` the flags several commands share; ``parser`` the argparse tree;
``exits`` the exit codes; ``entry`` parses and runs one command.

Behaviour code (the rest of ``core``) never imports this package. Nothing here imports
Textual, and each command imports what it uses when it runs.
"""

from __future__ import annotations

from core.cli.entry import main

__all__ = ["main"]
