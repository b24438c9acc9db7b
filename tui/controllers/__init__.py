"""The app's rooms, one per concern, each behind the narrow :class:`~tui.controllers.host.Host`
(the app as they see it): :mod:`~tui.controllers.sessions` (opening and closing chats),
:mod:`~tui.controllers.turns` (sending, stopping, retrying, resuming),
:mod:`~tui.controllers.approvals` (the approval bar and its queue),
:mod:`~tui.controllers.drafts` (history, the queue, drafts, editing the last message),
:mod:`~tui.controllers.chat_ops` (the chats list, rename, delete, export, model, system prompt),
:mod:`~tui.controllers.views` (plan, what-if, usage, a tool's detail, the log's own actions) and
:mod:`~tui.controllers.layout` (what the width leaves room for). :mod:`tui.app` puts them
together."""
