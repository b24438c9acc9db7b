"""``time.now``: the current date, time and weekday, in the owner's timezone or a named one."""

from __future__ import annotations

from pydantic import Field

from core.builtins import ToolContext
from core.builtins.shared import Args, current_time, owner_zone, parse_zone, tool
from core.tools import ToolResult

WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class TimeNowArgs(Args):
    timezone: str | None = Field(
        None, description="IANA timezone name such as Europe/Berlin; defaults to the owner's timezone."
    )


@tool(
    "time.now",
    TimeNowArgs,
    "Return the current date, time and weekday in the owner's timezone, or in the IANA timezone you name. Use it "
    "before resolving relative dates such as 'tomorrow' or 'next Friday'.",
)
async def time_now(args: TimeNowArgs, ctx: ToolContext) -> ToolResult:
    name = ctx.timezone if args.timezone is None else args.timezone.strip()
    tz = parse_zone(name) if args.timezone is not None else owner_zone(ctx)
    now = current_time(ctx).astimezone(tz)
    offset = now.strftime("%z")
    return ToolResult.of_json(
        {
            "timezone": name,
            "datetime": now.isoformat(timespec="seconds"),
            "date": now.date().isoformat(),
            "time": now.strftime("%H:%M"),
            "weekday": WEEKDAY_NAMES[now.weekday()],
            "utc_offset": f"{offset[:3]}:{offset[3:]}",
            "owner_timezone": ctx.timezone,
        }
    )
