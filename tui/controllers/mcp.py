"""MCP beyond tools, in the app: the servers screen and signing in, a server's requests for input,
resources attached to a message, and servers' prompts.

* **Servers and sign-in.** The servers screen (palette *MCP servers*) lists the open chat's servers
  with what they offer and whether they need you to sign in. Signing in (there, or ``/mcp login
  NAME``) runs as a worker: the browser is opened (``webbrowser``; ``BROWSER`` chooses it) and the
  address is put in the log to copy where none opens; the chat goes on while the browser is away,
  and the server is ready when the redirect arrives. This chat keeps its pinned plan, so the
  server's tools come to a new chat (an unused new chat is replaced by one at once).
* **Requests for input.** The open chat's :class:`~core.mcp.elicitation.QueueElicitor` (one per
  opened chat, as approvals have theirs) is watched; each request becomes a form
  (:class:`tui.screens.elicitation.FormScreen`) naming the server as its author. The engine
  answers *cancel* for a form nobody answers in time.
* **Resources.** *Attach a resource* (and ``@`` in the message box) picks one of the servers'
  resources (a template's variables asked in a form); it is read at once and goes with the next
  message sent, inside its server's envelope. ``@`` at the start of a word opens the completion
  list of the open chat's resources (:meth:`Mcp.mention_offer`, through the slash room's list),
  narrowed by what follows it (server, name, title, address); taking one attaches it and puts
  ``@server:uri`` in place of the word. A resource attached so whose mention is deleted before
  sending does not go. An ``@`` inside a word (``bob@example.com``) is text.
* **Prompts.** *Use a server's prompt* (and ``/server:prompt``) asks for its arguments and puts
  what it returns in the message box; the resources it embeds are attached. Nothing is sent until
  the person sends it.
* **Slash commands** (:mod:`tui.slash`): ``/mcp`` (the servers screen), ``/mcp login NAME``,
  ``/mcp logout NAME``, ``/attach [SERVER:URI]`` (completing the servers' resources), and one
  ``/server:prompt [ARGS]`` per prompt the servers offer (its arguments ``name=value``, or the
  whole text for a prompt of one argument; what is missing is asked). A message that names
  ``@server:uri`` of a listed resource (as a word of its own) gets that resource attached when it
  is sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from core.display import safe
from tui.controllers.host import Host
from tui.state import NoteItem

if TYPE_CHECKING:
    from textual.worker import Worker

    from core.mcp.client import McpManager
    from core.mcp.elicitation import QueueElicitor
    from core.mcp.offers import Attachment, Mention, PromptInfo, ResourceInfo
    from tui.widgets.slash_menu import WordOffer

log = logging.getLogger("deferchat.tui")


def open_browser(url: str) -> bool:
    """Open ``url`` in the person's browser (``BROWSER`` names one); whether one opened."""
    import webbrowser

    try:
        return bool(webbrowser.open(url, new=2))
    except Exception:
        log.debug("no browser opened", exc_info=True)
        return False


class BrowserSignIn:
    """The app's :class:`core.mcp.oauth.flow.SignInPresenter`: the browser, and the address in the log."""

    def __init__(self, host: Host) -> None:
        self.host = host

    async def show_sign_in(self, server: str, url: str) -> None:
        opened = await asyncio.to_thread(open_browser, url)
        where = "the browser is open at its sign-in page" if opened else "no browser opened: open this address"
        await self.host.log_view.add(NoteItem(text=f"Signing in to {server}: {where}\n{url}"))
        self.host.notify(
            f"Sign in to {safe(server)} in the browser; the chat goes on meanwhile."
            if opened
            else f"Open the address in the log to sign in to {safe(server)}.",
            timeout=8,
        )


class Mcp:
    def __init__(self, host: Host, *, replace_unused_chat: Callable[[], bool]) -> None:
        self.host = host
        self.replace_unused_chat = replace_unused_chat  # an unused new chat opened again: True when it was
        self.elicitor: QueueElicitor | None = None
        self.attachments: list[Attachment] = []
        self.mentioned: dict[tuple[str, str], str] = {}  # attached through @: (server, uri) -> its @mention
        self._watcher: Worker[None] | None = None
        self._signing_in: set[str] = set()
        self.resource_cache: list[ResourceInfo] = []  # what the slash commands complete, kept current
        self.prompt_cache: list[PromptInfo] = []

    @property
    def manager(self) -> McpManager | None:
        session = self.host.session
        return session.mcp if session is not None else None

    # -- the open chat's requests for input ---------------------------------------------------------
    def new_elicitor(self) -> QueueElicitor:
        """The elicitor for the chat about to open (the last one's requests die with it)."""
        from core.mcp.elicitation import QueueElicitor

        self.elicitor = QueueElicitor()
        self.attachments, self.mentioned = [], {}
        self.resource_cache, self.prompt_cache = [], []
        return self.elicitor

    def seen(self, event: Any) -> None:
        """An engine event: a server that became ready or changed its offers is listed again."""
        kind = getattr(event, "type", "")
        if kind == "mcp.offers.changed" or (kind == "server.status" and event.status in ("ready", "restarted")):
            self.host.run_worker(self.refresh, group="mcp-offers", exclusive=True, exit_on_error=False)

    async def refresh(self) -> None:
        """Read the open chat's servers' resources and prompts for the slash commands."""
        manager = self.manager
        if manager is None:
            return
        try:
            self.resource_cache = await manager.resources()
            self.prompt_cache = await manager.prompts()
        except Exception:
            log.debug("listing the servers' offers failed", exc_info=True)

    def watch(self, still_open: Callable[[], bool]) -> None:
        elicitor = self.elicitor
        if elicitor is None:
            return

        async def watch() -> None:
            from core.mcp.elicitation import ElicitationAnswer
            from tui.screens.elicitation import FormScreen

            while True:
                request = await elicitor.next_request()
                if not still_open():
                    return
                try:
                    answer = await self.host.push_screen_wait(FormScreen(request))
                except Exception:
                    log.exception("showing a server's request failed")
                    answer = ElicitationAnswer(action="cancel", reason="it could not be shown")
                elicitor.answer(request.id, answer)

        self.stop_watching()
        self._watcher = self.host.run_worker(watch(), group="elicitation", exit_on_error=False)
        self.host.run_worker(self.refresh, group="mcp-offers", exclusive=True, exit_on_error=False)

    def stop_watching(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
            self._watcher = None

    # -- servers and sign-in ------------------------------------------------------------------------
    def show_servers(self) -> None:
        manager = self.manager
        if manager is None:
            self.host.notify("No chat is open (or it runs no MCP servers).", severity="warning")
            return
        from tui.screens.servers import ServersScreen

        def chosen(result: tuple[str, str] | None) -> None:
            if result is None:
                return
            action, name = result
            if action == "sign_in":
                self.sign_in(name)
            else:
                self.sign_out(name)

        self.host.push_screen(ServersScreen(manager.servers()), chosen)

    def sign_in(self, name: str) -> None:
        """Sign in to server ``name`` in a worker; the chat goes on meanwhile."""
        manager = self.manager
        if manager is None:
            self.host.notify("No chat is open: sign-in needs the chat's servers.", severity="warning")
            return
        if name in self._signing_in:
            self.host.notify(f"Signing in to {safe(name)} is under way: finish it in the browser.")
            return
        self._signing_in.add(name)
        self.host.run_worker(self._sign_in(manager, name), group=f"sign-in:{name}", exit_on_error=False)

    async def _sign_in(self, manager: McpManager, name: str) -> None:
        from core.errors import UserFacingError
        from core.mcp.oauth.flow import SignIn

        host = self.host
        try:
            report = await manager.sign_in(name, SignIn(BrowserSignIn(host)))
        except UserFacingError as exc:
            host.notify(str(exc), severity="error")
            return
        except Exception as exc:
            log.exception("signing in failed")
            await host.log_view.add(NoteItem(text=f"signing in to {name} failed: {exc}", level="error"))
            return
        finally:
            self._signing_in.discard(name)
        if report.status != "ready":
            await host.log_view.add(NoteItem(text=f"MCP server {name}: {report.message}", level="warning"))
            return
        if manager is self.manager and self.replace_unused_chat():
            await host.log_view.add(NoteItem(text=f"Signed in to {name}: a new chat opens with its tools."))
            return
        await host.log_view.add(
            NoteItem(
                text=f"Signed in to {name} ({report.tools} tools). This chat keeps its plan; "
                "a new chat (ctrl+n) offers the server's tools."
            )
        )

    def sign_out(self, name: str) -> None:
        from core.mcp.oauth.flow import logout

        forgot = logout(name)
        self.host.notify(
            f"Signed out of {safe(name)}: its tokens are forgotten; a new chat asks you to sign in again."
            if forgot
            else f"{safe(name)} had no stored sign-in."
        )

    # -- resources ------------------------------------------------------------------------------------
    def attach(self, query: str = "") -> None:
        """Pick a resource and attach it to the next message."""
        if self.manager is None:
            self.host.notify("No chat is open (or it runs no MCP servers).", severity="warning")
            return
        self.host.run_worker(self._attach(query), group="attach", exclusive=True, exit_on_error=False)

    async def _attach(self, query: str) -> None:
        from core.mcp.offers import matching
        from tui.screens.resources import ResourcePicker

        manager = self.manager
        if manager is None:
            return
        found = await manager.resources()
        chosen = await self.host.push_screen_wait(ResourcePicker(matching(found, query) if query else found))
        if chosen is not None:
            await self.attach_resource(chosen)

    async def attach_resource(self, chosen: ResourceInfo) -> Attachment | None:
        """Read one resource (a template's variables asked first) and keep it for the next message;
        None when it was not (the form cancelled, the read failed: said)."""
        from core.errors import UserFacingError
        from core.mcp.elicitation import ElicitationRequest
        from core.mcp.offers import expand_template, template_fields
        from tui.screens.elicitation import FormScreen

        host, session = self.host, self.host.session
        if session is None:
            return None
        uri = chosen.uri
        if chosen.template:
            form = ElicitationRequest(id="template", server=chosen.server, fields=template_fields(chosen))
            answer = await host.push_screen_wait(
                FormScreen(form, title=f"Fill in {safe(chosen.uri)} ({safe(chosen.server)})", send="Attach")
            )
            if answer.action != "accept":
                return None
            uri = expand_template(chosen.uri, {k: str(v) for k, v in (answer.content or {}).items()})
        try:
            attachment = await session.read_resource(chosen.server, uri)
        except UserFacingError as exc:
            host.notify(str(exc), severity="error")
            return None
        self.attachments.append(attachment)
        cut = f", cut to {len(attachment.text):,} of {attachment.chars:,} characters" if attachment.truncated else ""
        await host.log_view.add(
            NoteItem(text=f"\U0001f4ce {uri} from {chosen.server} goes with your next message{cut}")
        )
        return attachment

    # -- @ in the message box -----------------------------------------------------------------------
    def mention_offer(self, text: str, cursor: int) -> WordOffer | None:
        """The open chat's resources for the ``@word`` at the cursor (the slash room's list shows
        them), or None: no chat, no ``@`` starting the word, nothing matching."""
        from core.mcp.offers import mention, mention_at, mention_matching
        from tui.widgets.slash_menu import Entry, WordOffer

        if self.manager is None or not self.resource_cache:
            return None
        at = mention_at(text, cursor)
        if at is None:
            return None
        found = mention_matching(self.resource_cache, at.query)[:50]
        if any(mention(r) == at.span(text) for r in found):  # the word names one already: nothing to do
            return None
        entries = [Entry(fill=mention(r), label=mention(r), description=resource_row(r)) for r in found]
        return WordOffer(entries, take=lambda i: self.mention_taken(found[i], at, text))

    def mention_taken(self, chosen: ResourceInfo, at: Mention, text: str) -> None:
        self.host.run_worker(self._mention(chosen, at, text), group="attach", exclusive=True, exit_on_error=False)

    async def _mention(self, chosen: ResourceInfo, at: Mention, text: str) -> None:
        """Attach what ``@`` chose (a template's variables asked), then name it in the box in place
        of the typed word, when the word is still there."""
        from core.mcp.offers import mention

        have = next((a for a in self.attachments if (a.server, a.uri) == (chosen.server, chosen.uri)), None)
        attachment = have if have is not None and not chosen.template else await self.attach_resource(chosen)
        composer = self.host.composer
        if attachment is None:
            self.host.focus_input()
            return
        named = mention(chosen, attachment.uri)
        self.mentioned[(attachment.server, attachment.uri)] = named
        typed = at.span(text)
        now = composer.text
        if now[at.start : at.start + len(typed)] == typed:
            after = at.start + len(typed)
            space = "" if now[after : after + 1].isspace() else " "
            composer.replace_span(at.start, after, named + space, cursor=at.start + len(named) + 1)
        self.host.focus_input()

    def take_attachments(self) -> list[Attachment]:
        """The attachments for the message being sent (the next one starts with none)."""
        taken, self.attachments = self.attachments, []
        return taken

    async def prepare(self, text: str) -> list[Attachment]:
        """The attachments to send with ``text``: those picked, and each listed resource the text
        names as ``@server:uri`` (read now; one that cannot be read is said and left out)."""
        from core.errors import UserFacingError
        from core.mcp.offers import mention, mentions

        named = mentions(text)
        taken, mentioned = self.take_attachments(), self.mentioned
        self.mentioned = {}
        dropped = [a for a in taken if mentioned.get((a.server, a.uri), "") not in (named | {""})]
        if dropped:  # attached through @ and the @mention deleted since: the person took it back
            taken = [a for a in taken if a not in dropped]
            self.host.notify(
                "Not attached (its @ mention was deleted): " + ", ".join(safe(a.uri) for a in dropped), timeout=6
            )
        session = self.host.session
        if session is None or not named:
            return taken
        have = {(a.server, a.uri) for a in taken}
        for r in self.resource_cache:
            if r.template or (r.server, r.uri) in have or mention(r) not in named:
                continue
            try:
                taken.append(await session.read_resource(r.server, r.uri))
            except UserFacingError as exc:
                self.host.notify(str(exc), severity="warning")
        return taken

    # -- slash commands -----------------------------------------------------------------------------
    def commands(self) -> list[Any]:
        """The room's own slash commands (the prompts' come from :meth:`prompt_commands`)."""
        from tui.slash import SlashCommand

        return [
            SlashCommand("mcp", "MCP servers: what each offers, sign in or out", action="mcp_servers"),
            SlashCommand(
                "mcp login",
                "Sign in to a remote MCP server (OAuth; the browser opens)",
                args="[NAME]",
                action="mcp_servers",  # with no name: the servers screen, to pick one there
                run=self._login_arg,
                complete=lambda typed: self._server_names(typed, remote=True),
            ),
            SlashCommand(
                "mcp logout",
                "Forget a remote MCP server's sign-in",
                args="[NAME]",
                action="mcp_servers",
                run=self.sign_out,
                complete=lambda typed: self._server_names(typed, remote=True),
            ),
            SlashCommand(
                "attach",
                "Attach a server's resource to your next message",
                args="[SERVER:URI]",
                action="attach_resource",
                run=self._attach_arg,
                complete=self._resource_completions,
            ),
        ]

    def _login_arg(self, args: str) -> None:
        self.sign_in(args.split()[0] if args.split() else args)

    def _server_names(self, typed: str, *, remote: bool) -> list[Any]:
        from tui.slash import Completion

        manager = self.manager
        if manager is None:
            return []
        return [
            Completion(r.name, r.message if r.status != "ready" else f"{r.tools} tools")
            for r in manager.servers()
            if r.name.startswith(typed.strip()) and (not remote or r.transport in ("http", "sse"))
        ]

    def _resource_completions(self, typed: str) -> list[Any]:
        from core.mcp.offers import matching
        from tui.slash import Completion

        return [
            Completion(f"{r.server}:{r.uri}", r.description or r.label) for r in matching(self.resource_cache, typed)
        ][:50]

    async def _attach_arg(self, args: str) -> None:
        server, _, uri = args.strip().partition(":")
        found = next((r for r in self.resource_cache if r.server == server and r.uri == uri), None)
        if found is None:
            from core.mcp.offers import ResourceInfo

            if not server or not uri:
                self.host.notify("Attach SERVER:URI, e.g. /attach docs:file:///notes.md", severity="warning")
                return
            found = ResourceInfo(server=server, uri=uri)
        await self.attach_resource(found)

    def prompt_commands(self) -> list[Any]:
        """One ``/server:prompt`` per prompt the open chat's servers offer (those whose names a
        slash command can carry)."""
        from tui.slash import NAME, SlashCommand

        out = []
        for p in self.prompt_cache:
            name = f"{p.server}:{p.name}"
            if not NAME.match(name):
                continue
            # optional on the line: what is left out is asked in a form
            args = f"[{' '.join(a.name + '=' for a in p.arguments)}]" if p.arguments else ""
            out.append(
                SlashCommand(
                    name,
                    p.description or f"the prompt {p.name} of {p.server}",
                    args=args,
                    run=partial(self._prompt_with, p),
                    origin=p.server,
                )
            )
        return out

    async def _prompt_with(self, prompt: PromptInfo, text: str) -> None:
        await self.run_prompt(prompt, prompt_values(prompt, text))

    # -- prompts ------------------------------------------------------------------------------------
    def use_prompt(self, command: str = "") -> None:
        """Pick a prompt (or the one ``command`` names: ``/server:prompt``), ask for its arguments,
        and put what it returns in the message box."""
        if self.manager is None:
            self.host.notify("No chat is open (or it runs no MCP servers).", severity="warning")
            return
        self.host.run_worker(self._use_prompt(command), group="prompt", exclusive=True, exit_on_error=False)

    async def _use_prompt(self, command: str) -> None:
        from tui.screens.prompts import PromptPicker

        manager = self.manager
        if manager is None:
            return
        prompts = await manager.prompts()
        chosen: PromptInfo | None = next((p for p in prompts if p.command == command), None) if command else None
        if command and chosen is None:
            self.host.notify(f"No server offers the prompt {safe(command)}.", severity="warning")
            return
        if chosen is None:
            chosen = await self.host.push_screen_wait(PromptPicker(prompts))
        if chosen is not None:
            await self.run_prompt(chosen)

    async def run_prompt(self, prompt: PromptInfo, given: dict[str, str] | None = None) -> None:
        from core.mcp.elicitation import ElicitationRequest
        from core.mcp.offers import prompt_fields
        from core.mcp.server import OfferError
        from tui.screens.elicitation import FormScreen

        host, manager = self.host, self.manager
        if manager is None:
            return
        values: dict[str, Any] = dict(given or {})
        missing = [a for a in prompt.arguments if a.required and not values.get(a.name)]
        if missing or (prompt.arguments and given is None):
            fields = [f.model_copy(update={"default": values.get(f.name)}) for f in prompt_fields(prompt)]
            form = ElicitationRequest(id="prompt", server=prompt.server, message=prompt.description, fields=fields)
            answer = await host.push_screen_wait(
                FormScreen(form, title=f"{safe(prompt.command)}: its arguments", send="Use it")
            )
            if answer.action != "accept":
                return
            values = answer.content or {}
        try:
            got = await manager.get_prompt(prompt.server, prompt.name, {k: str(v) for k, v in values.items()})
        except OfferError as exc:
            host.notify(safe(str(exc)), severity="error")
            return
        host.composer.put(got.text)  # the person reads it, edits it, sends it
        host.focus_input()
        self.attachments.extend(got.attachments)
        if got.attachments:
            names = ", ".join(a.uri for a in got.attachments)
            await host.log_view.add(NoteItem(text=f"\U0001f4ce {names} (from {prompt.command}) go with it"))


def resource_row(resource: ResourceInfo) -> str:
    """How the ``@`` list describes a resource (the server's words, shown through ``safe`` by the list)."""
    said = " \u2014 ".join(w for w in (resource.title or resource.name, resource.description) if w)
    if resource.template:
        said += f" (asks for {', '.join(resource.variables())})"
    return said


def prompt_values(prompt: PromptInfo, text: str) -> dict[str, str]:
    """A prompt's arguments from what followed its slash command: ``name=value`` pairs (quoted as
    a shell quotes), or, for a prompt of one argument, the whole text."""
    import shlex

    text = text.strip()
    if not text:
        return {}
    names = {a.name for a in prompt.arguments}
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    pairs = dict(w.split("=", 1) for w in words if "=" in w and w.split("=", 1)[0] in names)
    if pairs:
        return pairs
    if len(prompt.arguments) == 1:
        return {prompt.arguments[0].name: text}
    return {}
