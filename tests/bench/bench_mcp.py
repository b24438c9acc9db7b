"""MCP client figures, printed as JSON: parallel start of the five real servers and of the four
demo servers, and the latency of a tool call over stdio. Run: python tests/bench/bench_mcp.py"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.demo import demo_config  # noqa: E402
from core.mcp.client import McpManager  # noqa: E402
from core.mcp.config import config_from_dict  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
NPM = REPO / "tests" / "npm" / "node_modules" / "@modelcontextprotocol"


def real_servers(work: Path) -> dict:
    return {
        "mcpServers": {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            "git": {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(REPO)]},
            "filesystem": {"command": "node", "args": [str(NPM / "server-filesystem/dist/index.js"), str(work)]},
            "memory": {
                "command": "node",
                "args": [str(NPM / "server-memory/dist/index.js")],
                "env": {"MEMORY_FILE_PATH": str(work / "m.jsonl")},
            },
            "everything": {"command": "node", "args": [str(NPM / "server-everything/dist/index.js")]},
        }
    }


async def measure(config, call: tuple[str, dict], calls: int = 30) -> dict:
    began = time.perf_counter()
    manager = McpManager(config)
    await manager.start()
    started = time.perf_counter() - began
    lat = []
    for _ in range(calls):
        t = time.perf_counter()
        result = await manager.call(call[0], call[1])
        assert not result.is_error, result.text()
        lat.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    reports = manager.servers()
    await manager.close()
    return {
        "servers": len(reports),
        "ready": sum(r.status == "ready" for r in reports),
        "tools": sum(r.tools for r in reports),
        "start_s": round(started, 3),
        "slowest_server_start_ms": max(r.start_ms or 0 for r in reports),
        "call": call[0],
        "call_ms_median": round(statistics.median(lat), 2),
        "call_ms_p90": round(sorted(lat)[int(len(lat) * 0.9) - 1], 2),
        "close_s": round(time.perf_counter() - t, 3),
    }


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        out = {
            "real": await measure(config_from_dict(real_servers(work)), ("mcp.everything.echo", {"message": "x"})),
            "demo": await measure(
                demo_config(work / "demo.sqlite"), ("mcp.gmail_work.search_threads", {"query": "invoice"})
            ),
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
