"""``deferchat ask PROMPT``: one headless turn, in a new chat or continuing ``--chat ID``.

A continued chat whose last turn is parked or interrupted finishes that turn first; the new
prompt is sent only if it ends done. Exit codes: 0 done, 1 failed, 3 parked, 130 stopped (ctrl+c
stops the turn; the owner's message and the partial answer are kept). The timeout flags
bound this run's waits on the provider, over ``[timeouts]`` in config.toml; ``--thinking-budget``
sets Anthropic's extended thinking for this run, over ``[thinking]``.

Thinking shows as ``model.thinking`` lines in ``--json`` (one per whole block; the streamed
``model.thinking.delta`` pieces are left out, as the whole follows), and as one
``[thinking...]`` note on stderr per response in the transcript (the thinking itself is not
printed: it is the model's scratch work, and often long).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from core.cli import output
from core.cli.approver import approver_for
from core.cli.busy import check_busy
from core.cli.elicitor import elicitor_for
from core.cli.interrupt import stop_on_signals
from core.cli.options import caps_from, policy_from, record_file
from core.cli.printer import EventPrinter
from core.imports import bulk_import

if TYPE_CHECKING:
    from core.chat.session import ChatSession
    from core.config import Settings

_TIMEOUT_FLAGS = (  # flag, Waits field, what it bounds
    ("--connect-timeout", "connect", "seconds to connect to the provider"),
    ("--first-byte-timeout", "first_byte", "seconds from the request to the answer's first byte"),
    ("--idle-timeout", "idle", "seconds of silence allowed inside an answer"),
)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}")
    return value


def add_timeout_options(p: argparse.ArgumentParser) -> None:
    for flag, field, what in _TIMEOUT_FLAGS:
        p.add_argument(
            flag,
            type=_seconds,
            default=None,
            metavar="S",
            dest=f"{field}_timeout",
            help=f"{what} (default: [timeouts] {field} in config.toml, else the provider's own)",
        )


def _budget(text: str) -> int:
    from core.providers.thinking import MIN_THINKING_BUDGET

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value != 0 and not value >= MIN_THINKING_BUDGET:
        raise argparse.ArgumentTypeError(f"expected 0 (off) or at least {MIN_THINKING_BUDGET} tokens, got {text!r}")
    return value


def add_thinking_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--thinking-budget",
        type=_budget,
        default=None,
        metavar="TOKENS",
        help="Anthropic extended thinking budget for this run, 0 off "
        "(default: [thinking] anthropic_budget_tokens in config.toml)",
    )


def add_system_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--system",
        default=None,
        metavar="TEXT",
        help="the chat's own system prompt (a new chat's, or with --chat a change to it: after the first "
        'message that breaks the cached prefix once, and is recorded); "" removes it '
        "(default for a new chat: system_prompt in config.toml)",
    )


def add_switch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fallback",
        action="append",
        default=None,
        metavar="PROVIDER:MODEL",
        help="a new chat's fallback model, tried when its provider keeps failing (repeat for more; "
        "default: fallback in config.toml). With --chat, --provider/--model/--base-url switch the chat",
    )


def fallback_from(args: argparse.Namespace) -> list[str] | None:
    """The ``--fallback`` entries, each checked as ``fallback`` in config.toml is: one naming no
    provider is a usage error now, not a failure of the turn it would have been tried in."""
    from core.config import check_fallback
    from core.errors import UsageError

    entries: list[str] | None = getattr(args, "fallback", None)
    for entry in entries or ():
        try:
            check_fallback(entry)
        except ValueError as exc:
            raise UsageError(f"--{exc}") from None  # "--fallback 'x:y': expected provider:model, ..."
    return entries


async def switch_if_asked(session: ChatSession, args: argparse.Namespace) -> None:
    """``--chat ID`` with ``--provider``/``--model``/``--base-url``: continue the chat there."""
    if not (args.provider or args.model or args.base_url):
        return
    from core.chat.switch import owner_target

    row = session.chat()
    provider, model, base_url = owner_target(session, args.provider, args.model, args.base_url, where="flags")
    from core.redaction import without_userinfo

    if (provider, model, without_userinfo(base_url)) != (row.provider, row.model, row.base_url):
        session.switch(provider, model, base_url)


def settings_for(args: argparse.Namespace) -> Settings:
    """The settings with this run's timeout and thinking flags in force for every provider."""
    from core.config import load_settings

    settings = load_settings()
    if (budget := getattr(args, "thinking_budget", None)) is not None:
        thinking = settings.thinking.model_copy(update={"anthropic_budget_tokens": budget})
        settings = settings.model_copy(update={"thinking": thinking})
    bounds = {field: getattr(args, f"{field}_timeout", None) for _, field, _ in _TIMEOUT_FLAGS}
    if all(v is None for v in bounds.values()):
        return settings
    return settings.model_copy(update={"timeouts": settings.timeouts.overridden(**bounds)})


def add_attach_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--attach",
        action="append",
        default=None,
        metavar="SERVER:URI",
        help="attach an MCP server's resource to the message (repeatable; `deferchat servers --resources` lists "
        "them); the model reads it inside the server's untrusted envelope, cut as a tool result is cut",
    )


def _attach_ref(ref: str) -> tuple[str, str]:
    from core.errors import UsageError

    server, sep, uri = ref.partition(":")
    if not sep or not server or not uri:
        raise UsageError(f"--attach {ref!r}: expected SERVER:URI, e.g. docs:file:///notes.md")
    return server, uri


def run(args: argparse.Namespace) -> int:
    import asyncio

    return asyncio.run(_ask(args))


async def _ask(args: argparse.Namespace) -> int:
    with bulk_import():
        from core.engine import ChatOptions, Engine

    fallback = fallback_from(args)
    engine = Engine(settings=settings_for(args))
    engine.store.require_writable()  # a turn writes: a store that cannot take it is refused before anything starts
    check_busy(engine.store, args.chat, args.wait)  # a turn of the chat runs elsewhere: exit 4 now
    printer = EventPrinter(args.json)
    opts = ChatOptions(
        roster=args.roster,
        mcp_config=args.mcp_config,
        provider=args.provider,
        model=args.model,
        base_url=args.base_url,
        script=args.script,
        strategy=args.strategy,
        policy=policy_from(args),
        caps=caps_from(args),
        fallback=fallback,
        lazy_servers=True,  # a chat reopened with --chat starts a server only when a turn needs it
    )
    session = await engine.open_chat(
        args.chat,
        opts,
        approver=approver_for(args.approve),
        elicitor=elicitor_for(),
        subscribers=[printer],
        record=record_file(args.record),
    )
    try:
        if getattr(args, "system", None) is not None:
            session.prompt.set(args.system)  # recorded as chat.system_prompt (core.chat.prompting)
        async with stop_on_signals(session) as stopper:  # ctrl+c, SIGTERM, SIGHUP: the partial answer is kept
            # a chat with an unfinished turn takes the prompt too: the turn is closed as stopped
            # first (core.chat.turn; `deferchat resume` continues it instead), before a switch too
            if args.chat:
                if (args.provider or args.model or args.base_url) and session.parked() is not None:
                    await session.close_unfinished(wait=args.wait)
                await switch_if_asked(session, args)
            attachments = [await session.read_resource(*_attach_ref(ref)) for ref in args.attach or ()]
            result = await session.send(args.prompt, wait=args.wait, attachments=attachments)
        if not args.json:
            output.err(f"[chat {session.chat_id}]")
        return stopper.exit_for(result.status)
    finally:
        await session.close()
