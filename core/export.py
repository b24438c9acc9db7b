"""A chat as Markdown: the messages, and every tool call under the tool's own name.

A call the model made through ``tool.call`` is written as the deferred tool it reached,
with "via tool.call", its status, arguments and result (from the invocation row). A summary of
the oldest turns (:mod:`core.chat.compaction`) follows the last turn it covers, marked as a
summary that took their place in requests; the turns themselves stay above it, in full.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from core.roster.models import RosterPlan
from core.store import InvocationRow, Store, SummaryRow


def _when(ts: float | None) -> str:
    if not ts:
        return ""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text}\n{ticks}"


STOPPED_MARK = "_stopped by the owner: the turn ends here, its answer as far as the model got_"


def chat_markdown(store: Store, chat_id: str) -> str:
    chat = store.chat(chat_id)
    if chat is None:
        raise KeyError(chat_id)
    invocations = {inv.call_id: inv for inv in store.invocations(chat_id)}
    lines = [f"# {chat.title or 'Chat'}", ""]
    lines.append(f"- chat: `{chat.id}`  ")
    lines.append(f"- started: {_when(chat.created_at)}  ")
    lines.append(f"- provider: {chat.provider} · model: {chat.model}  ")
    lines.append(
        f"- agent: {chat.agent_name}@{chat.agent_version} · strategy: {chat.strategy} "
        f"({chat.strategy_reason or 'no reason recorded'})  "
    )
    if chat.system_prompt:
        lines.append(f"- system prompt (this chat's own): {chat.system_prompt!r}  ")
    plan_json = store.plan_json(chat.plan_id) if chat.plan_id else None
    if plan_json:
        plan = RosterPlan.model_validate_json(plan_json)
        lines.append(
            f"- plan (pinned): {plan.builder} · {len(plan.defined_tool_names)} defined "
            f"({plan.definition_tokens:,} tok) · {len(plan.deferred_tool_names)} deferred "
            f"({plan.index_tokens:,} tok) · {len(plan.skipped_tool_names)} skipped"
        )
    lines.append("")
    messages = store.messages(chat_id)
    summaries: dict[str, list[SummaryRow]] = {}
    for row in store.summaries(chat_id):
        summaries.setdefault(row.through_id, []).append(row)
    for i, m in enumerate(messages):
        for block in m.blocks:
            kind = block.get("type")
            if kind == "text" and m.role == "user":
                lines += ["## You", "", block["text"], ""]
            elif kind == "text":
                lines += ["## Assistant", "", block["text"], ""]
            elif kind == "tool_use":
                lines += _tool_lines(block, invocations.get(block.get("id", "")))
            elif kind == "server_tool_use":
                lines += [f"> tool search: `{json.dumps(block.get('input'), ensure_ascii=False)}`", ""]
            elif kind == "tool_search_tool_result":
                refs = [r.get("tool_name") for r in (block.get("content") or {}).get("tool_references", [])]
                lines += [f"> found: {', '.join(f'`{r}`' for r in refs) or 'nothing'}", ""]
        if m.turn_id and (i + 1 == len(messages) or messages[i + 1].turn_id != m.turn_id):
            turn = store.turn(m.turn_id)  # the last message of its turn: say if the owner stopped it
            if turn is not None and turn.status == "stopped":
                lines += [f"> {STOPPED_MARK}", ""]
        for row in summaries.get(m.id, ()):
            lines += summary_lines(row)
    lines += _usage_lines(store, chat_id)
    return "\n".join(lines).rstrip() + "\n"


def summary_lines(row: SummaryRow) -> list[str]:
    """A summary of the turns above it, where it took their place in requests, marked as such."""
    from core.chat.compaction import first_turns

    turns = first_turns(row.turns)
    sizes = f"{row.tokens_before:,} \u2192 {row.tokens_after:,} tokens"
    when = "as the owner asked" if row.reason == "owner" else "as the chat neared its model's context window"
    if row.method == "dropped":
        head = f"**History: {turns} left out of requests** ({sizes}, {when}; automatic summaries were off)"
        body = ""
    else:
        by = f"by {row.provider}/{row.model}" if row.method == "model" else "from the turns' own text"
        why = f" (the model could not write it: {row.error})" if row.method == "extractive" and row.error else ""
        head = f"**History: summary of {turns}**, written {by}{why} {when} ({sizes}); it takes their place in requests"
        body = row.text
    tools = row.tool_names()
    out = [f"> {head}  ", ">"]
    out += [f"> {line}" if line else ">" for line in body.splitlines()]
    if tools:
        out += [">", f"> Deferred tools those turns used: {', '.join(f'`{t}`' for t in tools)}"]
    return [*out, ""]


def _usage_lines(store: Store, chat_id: str) -> list[str]:
    """The cost meter: the totals, then one table row per model request (none: nothing)."""
    from core.chat.meter import COLUMNS, chat_usage, row_cells, totals_text

    usage = chat_usage(store, chat_id)
    if not usage.requests:
        return []
    out = ["## Usage", "", totals_text(usage.totals), ""]
    out.append("| " + " | ".join(COLUMNS) + " |")
    out.append("|" + "|".join("---" if i < 2 or i == len(COLUMNS) - 1 else "---:" for i in range(len(COLUMNS))) + "|")
    out.extend("| " + " | ".join(c.replace("|", "\\|") for c in row_cells(r)) + " |" for r in usage.requests)
    return [*out, ""]


def _tool_lines(block: dict[str, Any], inv: InvocationRow | None) -> list[str]:
    name = block.get("name", "?")
    via = ""
    args: Any = block.get("input")
    if inv is not None:
        name = inv.name or name
        via = f" (via {inv.via})" if inv.via else ""
        if inv.arguments:
            args = json.loads(inv.arguments)
    status = inv.status if inv else "not run"
    code = f" · `{inv.error_code}`" if inv and inv.error_code else ""
    out = [
        f"### Tool: `{name}`{via} — {status}{code}",
        "",
        "Arguments:",
        "",
        _fence(json.dumps(args, indent=2, ensure_ascii=False), "json"),
        "",
    ]
    if inv and inv.model_result:
        out += ["Result:", "", _fence(inv.model_result), ""]
    return out


def chat_transcript(store: Store, chat_id: str) -> str:
    """A terminal-friendly short form for ``deferchat chats show``."""
    return chat_markdown(store, chat_id)
