"""``notify.owner``: a push notification to the owner, recorded in the local outbox (table
``notifications``) first and delivered through ntfy when one is configured.

Settings read from ``ctx.settings``: ``ntfy_topic_url`` and optionally ``ntfy_token`` (none: the
message is queued only), and the HTTP settings of :mod:`core.builtins.web`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from core.builtins import ToolContext
from core.builtins.shared import Args, format_id, now_stamp, tool
from core.builtins.web import http_client, http_failure, net_policy
from core.net.bounded import Limits
from core.net.guard import GuardError, guarded_request
from core.tools import ToolResult


class NotifyOwnerArgs(Args):
    message: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000)] = Field(
        description="Notification text, one or two sentences."
    )
    priority: Literal["normal", "high"] = Field("normal", description="Delivery priority.")


@tool(
    "notify.owner",
    NotifyOwnerArgs,
    "Send a push notification to the owner's phone. Use it only for something time-sensitive the owner asked to "
    "be told about.",
)
async def notify_owner(args: NotifyOwnerArgs, ctx: ToolContext) -> ToolResult:
    import httpx

    outbox = ctx.db["notifications"]
    # Recorded first, so a crash during delivery still leaves the message in the outbox.
    nid = outbox.insert(
        {
            "message": args.message,
            "priority": args.priority,
            "status": "queued",
            "attempts": 0,
            "created_at": now_stamp(ctx),
            "chat_id": ctx.chat_id,
            "call_id": ctx.call_id,
        }
    ).last_pk
    shown = format_id("notifications", nid)
    topic = ctx.settings.get("ntfy_topic_url")
    if not topic:
        return ToolResult.of_json(
            {
                "id": shown,
                "status": "queued",
                "delivered": False,
                "note": "Queued in the local outbox only: no push channel is configured, so the owner's phone was "
                "NOT notified. Set ntfy_topic_url in the [tools] table of config.toml to deliver.",
            }
        )
    headers = {"Priority": "high" if args.priority == "high" else "default", "Title": "deferchat"}
    token = ctx.settings.get("ntfy_token")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    timeout = float(ctx.settings.get("http_timeout", 20.0))
    problem = None
    try:  # the configured ntfy host is the owner's; a redirect away from it is checked (core.net.guard)
        async with http_client(ctx) as client:
            resp = (
                await guarded_request(
                    client,
                    "POST",
                    str(topic),
                    net_policy(ctx, str(topic)),
                    content=args.message.encode("utf-8"),
                    headers=headers,
                    limits=Limits.from_settings(ctx.settings, max_bytes=64 * 1024),  # ntfy's answer is small
                )
            ).response
        if resp.status_code >= 400:
            problem = f"ntfy answered HTTP {resp.status_code} {resp.reason_phrase}"
    except GuardError as exc:
        problem = f"Posting to ntfy was refused: {exc} ({exc.code})"
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        problem = str(http_failure(exc, "Posting to ntfy", timeout))
    if problem:
        outbox.update(nid, {"status": "failed", "attempts": 1, "channel": "ntfy", "last_error": problem})
        return ToolResult.of_json(
            {
                "id": shown,
                "status": "failed",
                "delivered": False,
                "error": problem,
                "note": "Delivery failed; the message stays in the local outbox and the owner's phone was NOT "
                "notified.",
            }
        )
    outbox.update(nid, {"status": "delivered", "attempts": 1, "channel": "ntfy", "delivered_at": now_stamp(ctx)})
    return ToolResult.of_json(
        {"id": shown, "status": "delivered", "delivered": True, "channel": "ntfy", "priority": args.priority}
    )
