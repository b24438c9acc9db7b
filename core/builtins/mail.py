"""``email.subscriptions`` and ``email.unsubscribe``: mailing lists over the demo mail data (table
``email_subscriptions``); no mail account is connected and nothing is sent.

(Not named ``email``, so it never stands in for the standard library's package.)"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import (
    Args,
    Text,
    ToolError,
    find_row,
    format_id,
    lookup,
    now_stamp,
    owner_zone,
    tool,
    when,
    will_fail,
)
from core.pipeline.preview import ActionPreview, FieldKind, change, decisive, detail
from core.tools import ToolResult

DEMO_MAIL_NOTE = (
    "Demo data: no mail account is connected; these subscriptions are the sample set kept in the local database."
)


class EmailSubscriptionsArgs(Args):
    account: Literal["work", "personal", "all"] = Field("all", description="Which mail account to inspect.")
    min_per_month: int | None = Field(
        None, ge=0, description="Only lists that send at least this many messages a month."
    )


class EmailUnsubscribeArgs(Args):
    subscription_id: Text = Field(description="Id returned by email.subscriptions, e.g. sub_7.")
    archive_existing: bool = Field(False, description="Also archive the messages already received from this list.")


def _unsubscribe_target(row: dict[str, Any]) -> tuple[str, str, FieldKind]:
    """How the list's List-Unsubscribe header says to leave it: (how, where, the kind of where)."""
    targets = re.findall(r"<([^>]+)>", row["list_unsubscribe"] or "")
    https = next((t for t in targets if t.lower().startswith("https://")), None)
    mailto = next((t for t in targets if t.lower().startswith("mailto:")), None)
    if https and row["one_click"]:
        return "one-click HTTPS POST (RFC 8058) to", https, "url"
    if https:
        return "unsubscribe link", https, "url"
    if mailto:
        return "email to", mailto[len("mailto:") :], "email"
    return "none advertised", "", "text"


def _unsubscribe_method(row: dict[str, Any]) -> str:
    how, where, _ = _unsubscribe_target(row)
    return f"{how} {where}" if where else how


def _subscription_view(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": format_id("email_subscriptions", row["id"]),
        "account": row["account"],
        "list": row["list_name"],
        "sender": row["sender"],
        "per_month": row["per_month"],
        "last_message_on": row["last_message_on"],
        "messages_in_inbox": row["messages_in_inbox"],
        "unsubscribe_method": _unsubscribe_method(row),
    }


@tool(
    "email.subscriptions",
    EmailSubscriptionsArgs,
    "List the mailing lists and newsletters the owner's inboxes receive, with sender, frequency and last message date.",
)
async def email_subscriptions(args: EmailSubscriptionsArgs, ctx: ToolContext) -> ToolResult:
    where: list[str] = ["status = 'subscribed'"]
    params: list[Any] = []
    if args.account != "all":
        where.append("account = ?")
        params.append(args.account)
    if args.min_per_month is not None:
        where.append("per_month >= ?")
        params.append(args.min_per_month)
    rows = ctx.db["email_subscriptions"].rows_where(" and ".join(where), params, order_by="per_month desc, id")
    subs = [_subscription_view(r) for r in rows]
    gone = ctx.db["email_subscriptions"].count_where(
        "status = 'unsubscribed'" + (" and account = ?" if args.account != "all" else ""),
        [args.account] if args.account != "all" else [],
    )
    return ToolResult.of_json(
        {
            "source": DEMO_MAIL_NOTE,
            "account": args.account,
            "count": len(subs),
            "subscriptions": subs,
            "unsubscribed_not_shown": gone,
        }
    )


def _already_unsubscribed(row: dict[str, Any], ctx: ToolContext) -> str:
    return (
        f"Subscription {format_id('email_subscriptions', row['id'])} ('{row['list_name']}') is already "
        f"unsubscribed (since {when(row['unsubscribed_at'], owner_zone(ctx))})."
    )


def _describe_unsubscribe(args: EmailUnsubscribeArgs, ctx: ToolContext) -> ActionPreview:
    row = lookup(
        ctx,
        "email_subscriptions",
        args.subscription_id,
        label="Newsletter",
        argument="subscription_id",
        summary=f"Unsubscribe from the mailing list {args.subscription_id}",
    )
    if isinstance(row, ActionPreview):
        return row
    how, where, kind = _unsubscribe_target(row)
    kept = row["messages_in_inbox"] or 0
    fields = [
        decisive(
            "Newsletter",
            format_id("email_subscriptions", row["id"]),
            note=f"\u201c{row['list_name']}\u201d from {row['sender']}",
            argument="subscription_id",
        ),
        decisive("Sender", row["sender"], kind="email"),
        decisive("Mail account", row["account"], kind="account"),
    ]
    if where:
        fields.append(decisive("Unsubscribe by", where, kind=kind, note=how.removesuffix(" to")))
    else:
        fields.append(detail("Unsubscribe by", how, note="the list advertises no way to leave it"))
    fields += [
        change("Status", row["status"], "unsubscribed"),
        detail(
            "Archive past messages",
            f"yes: the {kept:,} messages already received" if args.archive_existing else "no: past messages stay",
            argument="archive_existing",
        ),
    ]
    return ActionPreview(
        summary=f"Unsubscribe from \u201c{row['list_name']}\u201d ({row['sender']})",
        fields=fields,
        problems=[will_fail(_already_unsubscribed(row, ctx))] if row["status"] == "unsubscribed" else [],
    )


@tool(
    "email.unsubscribe",
    EmailUnsubscribeArgs,
    "Unsubscribe the owner from a mailing list using its List-Unsubscribe header. The list stops sending; past "
    "messages stay.",
    preview=_describe_unsubscribe,
)
async def email_unsubscribe(args: EmailUnsubscribeArgs, ctx: ToolContext) -> ToolResult:
    row = find_row(ctx, "email_subscriptions", args.subscription_id)
    sid = format_id("email_subscriptions", row["id"])
    if row["status"] == "unsubscribed":
        raise ToolError(_already_unsubscribed(row, ctx))
    archived = (row["messages_in_inbox"] or 0) if args.archive_existing else 0
    ctx.db["email_subscriptions"].update(
        row["id"],
        {
            "status": "unsubscribed",
            "unsubscribed_at": now_stamp(ctx),
            "archive_existing": int(args.archive_existing),
            "archived_messages": archived,
            "chat_id": ctx.chat_id,
        },
    )
    return ToolResult.of_json(
        {
            "id": sid,
            "list": row["list_name"],
            "account": row["account"],
            "status": "unsubscribed",
            "method": _unsubscribe_method(row),
            "archive_existing": args.archive_existing,
            "archived_messages": archived,
            "note": DEMO_MAIL_NOTE + " No unsubscribe request was sent and no real inbox changed; the subscription "
            "is marked unsubscribed locally" + (f" and its {archived} messages marked archived." if archived else "."),
        }
    )
