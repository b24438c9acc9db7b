"""A chat, in rooms: opening (:mod:`.opening`), its MCP servers (:mod:`.servers`), the turn loop
(:mod:`.turn`), tool routing (:mod:`.routing`, with the control tools in :mod:`core.controls`)
and the persistence of events (:mod:`.eventlog`). :class:`ChatSession` puts them together."""

from core.chat.options import ChatOptions, TurnResult
from core.chat.session import ChatSession

__all__ = ["ChatOptions", "ChatSession", "TurnResult"]
