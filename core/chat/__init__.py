"""A chat, in rooms: opening (:mod:`.opening`), its MCP servers (:mod:`.servers`), the turn loop
(:mod:`.turn`), tool routing (:mod:`.routing`, with the control tools in :mod:`core.controls`)
and the persistence of events (:mod:`.eventlog`). :class:`.session.ChatSession` puts them
together; :mod:`core.engine` opens chats."""
