"""A message's token count, kept beside it.

Before each request the history's budget asks whether the chat still fits its model's window.
Sizes in bytes settle that without the tokenizer while the chat is small; past that, every
message had to be counted again in every process (``deferchat ask --chat`` paid ~0.25 s loading
the tokenizer for a count its previous run had already made). ``tokens`` keeps the count a
process made, and ``tokens_key`` the key it was made for (:func:`core.tokens.content_key` of the
message as the budget counts it: the encoding and a hash of the text), so a count is read back
only for the text and encoding it belongs to, and a rewritten message is counted again.
"""

from __future__ import annotations

from sqlite_utils import Database

NAME = "0011_message_tokens"


def migrate(db: Database) -> None:
    db.table("messages").add_column("tokens", int)
    db.table("messages").add_column("tokens_key", str)
