"""Soak run (issue 11, item 8): one long scripted chat with tool calls, under MCP crashes and provider faults.

Not part of the default test run (pytest collects ``test_*.py``; this file is a script). Run::

    python tests/bench/soak.py [--turns 300] [--fault-every 10] [--kill-every 25] [--park-every 30]
                               [--wire openai-chat|anthropic|openai] [--process-turns 20]
                               [--budget 560] [--process-min 5] [--rss-every 10] [--turn-timeout 30] [--keep]

It prints one JSON object on stdout (progress goes to stderr) and exits 1 when any must-be-zero
figure is not zero. The in-process turns always all run; once ``--budget`` seconds have passed no
further process turn starts past the first ``--process-min``, so a loaded machine still ends
near ten minutes. The provider runs in a child process of its own (``soak.py --serve``, driven over
stdin), so its memory and its JSON parsing do not count against the engine's.

What runs
---------
Everything is real but the model: a temporary ``DEFERCHAT_HOME``, the real engine
(:class:`core.engine.Engine`) in this process, the real SDK adapter of ``--wire`` talking to the
loopback streaming server (``tests/streaming_server.py``), and a real stdio MCP server
(``tests/mcp_servers/soak_notes.py``) started by the engine's MCP client from an ``mcpServers``
file. ``config.toml`` bounds the provider waits (``[timeouts]``: connect 2 s, first byte 2 s, idle
1.5 s, retry-after cap 5 s), so a stalled stream costs a second or two.

Each scripted turn ``i`` (user text ``turn i: please note t<i>``) is three model requests: a text
and ``mcp.soak.append_note(token)`` (a write: it appends the token to a file, so how often a call
ran is how often its token is there; the approver allows it once), then
``mcp.soak.count_notes(token)`` (a read), then a short Markdown answer ``Noted <token>. ...``.
The token is new for every attempt (``t007a0``, ``t007a1`` for the re-send).

Faults and how the "user" reacts:

* every ``--fault-every`` turns a provider fault at one of the turn's three requests (rotating
  over the kinds below and the three positions): ``429_retried`` (retry-after 1 s, the adapter
  retries), ``500_retried`` (one 500, retried), ``500_exhausted`` (three 500s: the retries run
  out), ``429_over_cap`` (retry-after 3600 s: fails at once, "rate limited until ..."),
  ``stall_first_byte`` (no headers ever), ``stall_mid_stream`` (silence after two chunks),
  ``cut_mid_stream`` (the socket closed after two chunks). A turn that ends ``failed`` is sent
  again once with the same text, as a person would (a fresh script, a fresh token);
* every ``--kill-every`` turns the live MCP server gets SIGKILL (its pid is in a file it
  writes on start), alternately ``before`` the turn (the write finds it dead) and ``in_flight``
  (the write holds 2 s after writing; the kill lands 0.5 s after ``tool.started``). The MCP
  client restarts it on demand; the call that finds it dead gets ``mcp.server_crashed``;
* every ``--park-every`` turns the approver parks the write; the turn is then resumed
  (``session.resume()``), as ``deferchat resume`` would.

Then, with ``--process-turns N``, the same chat goes on for N turns of the real binary,
``deferchat ask TEXT --chat ID --approve yes --json`` (one process per turn, faults every 5
turns, timeouts by flag), re-sent once when it exits 1. Every 10th turn kills in flight,
alternately the MCP server and ``deferchat`` itself (SIGKILL while its write holds): the next
``ask --chat`` must finish the interrupted turn without running its write again (a last killed
turn is finished with ``deferchat resume``).

Both phases run a copy of ``core/`` and ``tui/`` made when the soak starts (``--live-tree``: the
working tree itself), so edits made to the tree while it runs cannot break it halfway; the report
names the commit and how many paths were uncommitted.

Third round (issue 23): four more fault classes, on by default.

* **Signals** (``--signal-every``, process phase): a process turn gets SIGTERM or SIGHUP
  (alternately, now and then SIGINT) at a random point of its answer's stream. It must exit
  128 + the signal, its turn ``stopped``, the partial answer it printed stored as written.
* **Clock jumps** (``--clock-every``, in process): the store's wall clock
  (``core.store.ids.CLOCK``) jumps back or forward by hours to days between turns; the
  process phase then runs on the real clock (one more jump). Every request must carry the
  history in the order it was written, and the store read it so.
* **stderr floods** (``--flood-every``, ``--flood-bytes``): the write first floods the MCP
  server's stderr, its ``${VAR}`` secret in the last 700 characters; the log on disk must stay
  within its bound (twice ``core.mcp.logs.STDERR_LOG_BYTES``).
* **list_changed escalation** (``--escalate-every``): every K-th ``count_notes`` call of a
  server process re-lists ``count_notes`` as a destructive write; every later call of it (until
  the server restarts) must be asked for before it runs.
* **Secrets**: the provider key, a password in the provider's base URL (``user:pw@``) and the
  MCP server's ``${VAR}`` secret are set; none may appear, whole or a 12-character piece of it,
  in the store's files, any event, any process's stdout or stderr.

What is reported
----------------
``must_be_zero``: ``messages_lost`` (a sent user text not stored as often as it was sent),
``answers_lost`` (a turn that ended done without its final answer stored), ``calls_executed_twice``
(a token written more than once), ``writes_reported_but_missing`` (a write reported completed
whose token is not in the file), ``turns_stuck`` (a turn still ``running``/``parked`` at the end,
a send that did not return within ``--turn-timeout``, a process killed for hanging), ``crashes``
(an exception out of the engine, a process traceback), and for the third round
``requests_out_of_order``, ``history_out_of_order``, ``secrets_seen``,
``escalated_calls_unasked``, ``stderr_log_over_bound``, ``signal_partials_lost``,
``signal_turns_not_stopped``; ``summary`` adds them up as lost, doubled, stuck and secrets seen.
Also peak RSS and its growth (VmRSS
sampled every ``--rss-every`` turns: first, last, peak, least-squares slope in KB per turn, over
the whole run and its second half; beside it the gc-tracked objects and ``sys.getallocatedblocks()``,
which tell memory Python still holds from an allocator's high-water mark), the engine's CPU per turn
early and late (a cost that grows with the history), the store's size (database, WAL, shm, rows
per table), wall times, fault and kill outcomes, and ``anomalies`` (a turn that used an unexpected
number of requests, with its error; leftover scripted responses).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import itertools
import json
import os
import random
import re
import resource
import secrets as secrets_lib
import shutil
import signal
import sqlite3
import statistics
import string
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.streaming_server import StreamingServer  # noqa: E402  (stdlib only: cheap, no app imports)

SERVER = "soak"
WRITE = f"mcp.{SERVER}.append_note"
READ = f"mcp.{SERVER}.count_notes"
WAITS = {"connect": 2.0, "first_byte": 2.0, "idle": 1.5, "max_retry_after": 5.0}
HOLD_SECONDS = 2.0  # how long an in-flight write holds before answering
KILL_DELAY = 0.5  # after tool.started, when the in-flight kill lands
DEVELOPER_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "DEFERCHAT_DEMO_DB",
)

# kind -> what the turn should end as (the first attempt)
FAULT_KINDS: dict[str, str] = {
    "429_retried": "done",
    "500_retried": "done",
    "500_exhausted": "failed",
    "429_over_cap": "failed",
    "stall_first_byte": "failed",
    "stall_mid_stream": "failed",
    "cut_mid_stream": "failed",
}
KIND_NAMES = list(FAULT_KINDS)
POSITIONS = ("write", "read", "answer")  # which of the turn's three requests the fault hits


def log(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- the loopback provider -------------------------------------------------------------------------


class SoakServer(StreamingServer):
    """The streaming server, with a way to start each turn from a clean queue: responses a turn
    left unused are dropped (and counted), and a request past the end (answered 500
    "exhausted") does not shift the responses pushed after it. A request's record keeps the size
    of its body, not the body: 1,000 requests each carrying the whole history would otherwise
    hold gigabytes."""

    def _record(self, request: Any, wire: str | None, body: Any) -> dict[str, Any]:
        turns = [int(n) for n in re.findall(rb"turn (\d+): please note", request.body or b"")]
        slim = {
            "bytes": len(request.body or b""),
            "messages": len(body.get("messages") or body.get("input") or []) if isinstance(body, dict) else None,
            "in_order": turns == sorted(turns),  # the history this request carries, in the order written
        }
        return super()._record(request, wire, slim)

    def pending(self) -> int:
        with self._lock:
            return max(0, len(self._responses) - self._next)

    def discard_pending(self) -> int:
        with self._lock:
            left = max(0, len(self._responses) - self._next)
            self._next = len(self._responses)
            return left


def serve_main() -> int:
    """``soak.py --serve``: the provider in a process of its own (so neither its memory nor its
    JSON parsing counts against the engine's), driven by one command per stdin line."""
    server = SoakServer([], timeout=None)
    server.start()
    print(f"PORT {server.port}", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "push":
            server.push(*json.loads(arg))
            out = "ok"
        elif cmd == "discard":
            out = str(server.discard_pending())
        elif cmd == "pending":
            out = str(server.pending())
        elif cmd == "count":
            out = str(len(server.requests))
        elif cmd == "records":
            out = json.dumps([{k: r.get(k) for k in ("outcome", "body")} for r in server.requests[int(arg or 0) :]])
        elif cmd == "rss":
            out = str(rss_kb() or 0)
        else:
            break
        print(out, flush=True)
    server.stop()
    return 0


class Provider:
    """The ``--serve`` child, as the soak sees it."""

    def __init__(self) -> None:
        import subprocess

        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(ROOT),
        )
        first = self._line()
        if not first.startswith("PORT "):
            raise RuntimeError(f"the provider did not start: {first!r}")
        self.port = int(first.split()[1])

    def _line(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def ask(self, cmd: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self._line()

    def url_for(self, wire: str, password: str | None = None) -> str:
        """The base URL for ``wire``; with ``password``, as a gateway with basic auth takes it."""
        auth = f"soak:{password}@" if password else ""
        host = f"http://{auth}127.0.0.1:{self.port}"
        return host if wire == "anthropic" else f"{host}/v1"

    def push(self, *responses: dict[str, Any]) -> None:
        self.ask("push " + json.dumps(list(responses)))

    def discard_pending(self) -> int:
        return int(self.ask("discard"))

    def pending(self) -> int:
        return int(self.ask("pending"))

    def count(self) -> int:
        return int(self.ask("count"))

    def records(self, start: int = 0) -> list[dict[str, Any]]:
        return list(json.loads(self.ask(f"records {start}")))

    def rss_kb(self) -> int:
        return int(self.ask("rss"))

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.ask("quit")
        try:
            self.proc.wait(10)
        except Exception:
            self.proc.kill()


@dataclass(frozen=True)
class Fault:
    kind: str
    position: str

    @property
    def index(self) -> int:
        return POSITIONS.index(self.position)


def fault_for(n: int) -> Fault:
    """The n-th fault (0-based): 7 kinds x 3 positions, every pair within 21 faults."""
    return Fault(KIND_NAMES[n % len(KIND_NAMES)], POSITIONS[n % len(POSITIONS)])


def token_for(turn: int, attempt: int) -> str:
    return f"t{turn:03d}a{attempt}"


def answer_for(token: str) -> str:
    return (
        f"Noted {token}. The note is in the file, and the count came back as one.\n\n"
        f"- token: `{token}`\n- tools: append_note, count_notes\n\nAnything else to note?"
    )


def turn_script(
    wire_name: Any,
    turn: int,
    attempt: int,
    *,
    hold: float = 0.0,
    fault: Fault | None = None,
    flood: int = 0,
    slow_answer: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    """The responses of one attempt of turn ``turn``, and how many requests it should make.
    ``flood``: the write floods the server's stderr first; ``slow_answer``: the answer streams
    for about two seconds (a signal lands in it)."""
    token = token_for(turn, attempt)
    write_args: dict[str, Any] = {"token": token}
    if hold:
        write_args["hold_seconds"] = hold
    if flood:
        write_args["flood_bytes"] = flood
    normal: list[dict[str, Any]] = [
        {
            "parts": [
                {"text": f"Noting {token} now.", "chunk_chars": 4},
                {"tool": wire_name(WRITE), "id": f"w-{token}", "input": write_args},
            ],
            "args_chunk_chars": 6,
        },
        {"parts": [{"tool": wire_name(READ), "id": f"r-{token}", "input": {"token": token}}], "args_chunk_chars": 6},
        {"parts": [{"text": answer_for(token), "chunk_chars": 4 if slow_answer else 12}]}
        | ({"chunk_delay": 0.05} if slow_answer else {}),
    ]
    if fault is None:
        return normal, 3
    k = fault.index
    before, hit, after = normal[:k], normal[k], normal[k + 1 :]
    kind = fault.kind
    if kind == "429_retried":
        return [*before, {"status": 429, "retry_after": 1}, hit, *after], 4
    if kind == "500_retried":
        return [*before, {"status": 500}, hit, *after], 4
    if kind == "500_exhausted":
        return [*before, {"status": 500}, {"status": 500}, {"status": 500}], k + 3
    if kind == "429_over_cap":
        return [*before, {"status": 429, "retry_after": 3600}], k + 1
    if kind == "stall_first_byte":
        return [*before, {**hit, "first_byte_delay": "forever"}], k + 1
    if kind == "stall_mid_stream":
        return [*before, {**hit, "stall_after_chunks": 2, "stall_seconds": "forever"}], k + 1
    if kind == "cut_mid_stream":
        return [*before, {**hit, "cut_after_chunks": 2}], k + 1
    raise ValueError(kind)


# --- secrets -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Secrets:
    """The secrets of the run: the provider key, the password in the provider's base URL, the MCP
    server's ``${VAR}`` secret. None may be seen anywhere deferchat writes or prints."""

    key: str
    password: str
    mcp: str

    @classmethod
    def new(cls) -> Secrets:
        def word(prefix: str, n: int) -> str:
            return prefix + "".join(secrets_lib.choice(string.ascii_letters + string.digits) for _ in range(n))

        return cls(key=word("sk-soak-", 40), password=word("Pw", 22), mcp=word("mcp_tok_", 30))

    @functools.cached_property
    def _pieces(self) -> dict[str, list[bytes]]:
        return self.pieces()

    def pieces(self) -> dict[str, list[bytes]]:
        """Every 12-character piece of each secret (a tail cut mid-token still shows one)."""
        out = {}
        for name, value in (("provider key", self.key), ("base URL password", self.password), ("MCP secret", self.mcp)):
            raw = value.encode()
            out[name] = [raw[i : i + 12] for i in range(0, len(raw) - 11)]
        return out

    def seen(self, data: bytes | str) -> list[str]:
        """The names of the secrets ``data`` shows a piece of."""
        blob = data.encode("utf-8", "replace") if isinstance(data, str) else data
        return [name for name, pieces in self._pieces.items() if any(p in blob for p in pieces)]


# --- the home ---------------------------------------------------------------------------------------


@dataclass
class Home:
    path: Path
    escalate_every: int = 0

    @property
    def mcp_logs(self) -> Path:
        return self.path.parent / "tmp"  # TMPDIR: the MCP client's log folders are made here

    def log_bytes(self) -> int:
        """The soak server's stderr log on disk now (all rotations), over every log folder."""
        return sum(f.stat().st_size for f in self.mcp_logs.glob(f"deferchat-mcp-*/{SERVER}.stderr.log*") if f.is_file())

    @property
    def notes(self) -> Path:
        return self.path / "notes.txt"

    @property
    def pids(self) -> Path:
        return self.path / "mcp-pids.txt"

    @property
    def roster(self) -> Path:
        return self.path / "roster.json"

    @property
    def mcp(self) -> Path:
        return self.path / "soak-mcp.json"

    @property
    def db(self) -> Path:
        return self.path / "deferchat.db"

    def write(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        lines = ["[timeouts]", *(f"{k} = {v}" for k, v in WAITS.items())]
        # A window no 300-turn history nears: this run is about faults, and a summary request would
        # take a scripted response meant for a turn (bench_window.py measures compaction).
        for wire in ("openai-chat", "anthropic", "openai"):
            lines += [f'[models."{wire}:soak-model"]', "context_window = 4000000"]
        (self.path / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.roster.write_text(json.dumps({"agent": {"name": "soak", "version": "1", "deferred": []}}), "utf-8")
        self.mcp.write_text(
            json.dumps(
                {
                    "mcpServers": {
                        SERVER: {
                            "command": sys.executable,
                            "args": [str(ROOT / "tests" / "mcp_servers" / "soak_notes.py")],
                            "env": {
                                "SOAK_NOTES_FILE": str(self.notes),
                                "SOAK_PID_FILE": str(self.pids),
                                "SOAK_SECRET": "${SOAK_MCP_SECRET}",  # expanded: a secret to redact
                                "SOAK_ESCALATE_EVERY": str(self.escalate_every),
                            },
                            "timeout": 20,
                            "call_timeout": 20,
                        }
                    }
                }
            ),
            "utf-8",
        )

    def live_pid(self) -> int | None:
        """The newest MCP server pid, if that process is alive (not gone, not a zombie)."""
        if not self.pids.exists():
            return None
        lines = self.pids.read_text(encoding="utf-8").split()
        if not lines:
            return None
        pid = int(lines[-1])
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        return None if stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X") else pid

    def starts(self) -> int:
        return len(self.pids.read_text(encoding="utf-8").split()) if self.pids.exists() else 0


def rss_kb(pid: int | str = "self", key: str = "VmRSS") -> int | None:
    """A process's resident set (``VmHWM``: its peak since exec), in KB, from ``/proc``."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def slope(points: list[tuple[int, int]]) -> float | None:
    """Least-squares slope of y over x."""
    if len(points) < 2:
        return None
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else None


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- the run's records ------------------------------------------------------------------------------


@dataclass
class Record:
    sends: Counter[str] = field(default_factory=Counter)  # user text -> times sent
    done_tokens: list[str] = field(default_factory=list)  # attempts that ended done: their answer must be stored
    write_completed: dict[str, str] = field(default_factory=dict)  # call id -> token (tool.completed, not replayed)
    write_failed: dict[str, str] = field(default_factory=dict)  # call id -> error code
    events: Counter[str] = field(default_factory=Counter)
    error_codes: Counter[str] = field(default_factory=Counter)
    tool_failed: Counter[str] = field(default_factory=Counter)
    retrying: int = 0
    replayed: int = 0
    faults: list[dict[str, Any]] = field(default_factory=list)
    kills: list[dict[str, Any]] = field(default_factory=list)
    parks: list[dict[str, Any]] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)  # every send/resume result
    resends: int = 0
    resend_failed: list[int] = field(default_factory=list)
    stuck: list[dict[str, Any]] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    turn_seconds: list[float] = field(default_factory=list)
    turn_cpu: list[tuple[int, float]] = field(default_factory=list)  # (turn, this process's CPU seconds), in process
    rss: list[tuple[int, int]] = field(default_factory=list)
    mcp_rss: list[tuple[int, int]] = field(default_factory=list)
    objects: list[tuple[int, int]] = field(default_factory=list)
    blocks: list[tuple[int, int]] = field(default_factory=list)  # sys.getallocatedblocks(): what Python still holds
    # the third round
    secrets: Secrets | None = None
    secret_hits: list[dict[str, Any]] = field(default_factory=list)
    escalated: bool = False  # count_notes is listed as a write now (a tool.changed said so)
    escalations: int = 0
    asked: set[str] = field(default_factory=set)  # call ids an approval was asked for
    escalated_runs: int = 0
    escalated_unasked: list[str] = field(default_factory=list)
    tool_changed: list[dict[str, Any]] = field(default_factory=list)
    clock_jumps: list[dict[str, Any]] = field(default_factory=list)
    signals: list[dict[str, Any]] = field(default_factory=list)
    floods: list[dict[str, Any]] = field(default_factory=list)
    log_bytes_max: int = 0

    def look_for_secrets(self, where: str, text: str | bytes) -> None:
        if self.secrets is not None and (names := self.secrets.seen(text)):
            if len(self.secret_hits) < 50:
                snippet = text[:300] if isinstance(text, str) else text[:300].decode("utf-8", "replace")
                self.secret_hits.append({"where": where, "secrets": names, "text": snippet})
            else:
                self.secret_hits.append({"where": where, "secrets": names})

    def _escalation(self, kind: str, name: str | None, call_id: str | None, side_effect: str | None) -> None:
        """A destructive re-listing of count_notes must be asked for at each later call."""
        if kind == "tool.changed" and name == READ:
            was, self.escalated = self.escalated, side_effect not in ("NONE", "WORKSPACE_READ", "NETWORK_READ")
            self.escalations += int(self.escalated and not was)
        elif kind == "tool.approval_required" and call_id:
            self.asked.add(call_id)
        elif kind == "tool.started" and name == READ and self.escalated and call_id:
            self.escalated_runs += 1
            if call_id not in self.asked:
                self.escalated_unasked.append(call_id)

    def watch(self, event: Any) -> None:
        kind = event.type
        self.events[kind] += 1
        if kind != "model.text.delta":
            self.look_for_secrets(f"event {kind}", event.to_json())
        if kind == "tool.changed":
            self.tool_changed.append({"changes": event.changes, "side_effect": event.side_effect})
        self._escalation(
            kind, getattr(event, "name", None), getattr(event, "call_id", None), getattr(event, "side_effect", None)
        )
        if kind == "tool.completed" and event.name == WRITE:
            if event.replayed:
                self.replayed += 1
            else:
                self.write_completed[event.call_id] = event.call_id.removeprefix("w-")
        elif kind == "tool.failed":
            self.tool_failed[event.code] += 1
            if event.name == WRITE:
                self.write_failed[event.call_id] = event.code
        elif kind == "error":
            self.error_codes[event.code] += 1
        elif kind == "provider.retrying":
            self.retrying += 1

    def watch_json(self, data: dict[str, Any]) -> None:
        """The same, from a ``--json`` event line of a process."""
        kind = data.get("type", "?")
        self.events[kind] += 1
        if kind == "tool.changed":
            self.tool_changed.append({"changes": data.get("changes"), "side_effect": data.get("side_effect")})
        self._escalation(kind, data.get("name"), data.get("call_id"), data.get("side_effect"))
        if kind == "tool.completed" and data.get("name") == WRITE:
            if data.get("replayed"):
                self.replayed += 1
            else:
                self.write_completed[data["call_id"]] = data["call_id"].removeprefix("w-")
        elif kind == "tool.failed":
            self.tool_failed[data.get("code", "?")] += 1
            if data.get("name") == WRITE:
                self.write_failed[data["call_id"]] = data.get("code", "?")
        elif kind == "error":
            self.error_codes[data.get("code", "?")] += 1
        elif kind == "provider.retrying":
            self.retrying += 1


# --- phase 1: in process ----------------------------------------------------------------------------


class Approver:
    """Allows every write once, but parks the calls whose token is in ``park``."""

    def __init__(self) -> None:
        self.park: set[str] = set()
        self.asked = 0

    async def decide(self, request: Any) -> Any:
        from core.pipeline.approvals import Decision

        self.asked += 1
        token = (request.arguments or {}).get("token") if isinstance(request.arguments, dict) else None
        return Decision.PARK if token in self.park else Decision.ALLOW_ONCE


class InProcess:
    def __init__(self, args: argparse.Namespace, home: Home, server: Provider, rec: Record):
        self.args, self.home, self.server, self.rec = args, home, server, rec
        self.session: Any = None
        self.approver = Approver()
        self.kill_on_start: str | None = None  # call id whose tool.started schedules the in-flight kill
        self.killed_in_flight: int | None = None
        self.kill_carried = False  # an in-flight kill whose turn failed before the write: the re-send gets it
        self.server_failed = asyncio.Event()
        self.clock_offset = 0.0

    def wire_name(self, name: str) -> str:
        from core.providers.wirenames import encode

        return encode(name)

    def on_event(self, event: Any) -> None:
        self.rec.watch(event)
        if event.type == "server.status" and getattr(event, "status", None) == "failed":
            self.server_failed.set()
        if event.type == "tool.started" and self.kill_on_start and event.call_id == self.kill_on_start:
            self.kill_on_start = None
            asyncio.get_running_loop().call_later(KILL_DELAY, self._kill_now)

    def _kill_now(self) -> None:
        pid = self.home.live_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            self.killed_in_flight = pid

    async def open(self) -> None:
        import core
        from core.engine import ChatOptions, Engine
        from core.store import Store

        self.args.code["imported_from"] = str(Path(core.__file__).parent.parent)
        engine = Engine(Store(self.home.db))
        opts = ChatOptions(
            provider=self.args.wire,
            model="soak-model",
            base_url=self.server.url_for(self.args.wire, password=self.args.secrets.password),
            roster=str(self.home.roster),
            mcp_config=str(self.home.mcp),
            start_demo_servers=False,
        )
        self.session = await engine.open_chat(None, opts, approver=self.approver, subscribers=[self.on_event])
        defined = set(self.session.plan.defined_tool_names)
        if not {WRITE, READ} <= defined:
            raise SystemExit(f"the soak server's tools are not defined in the plan: {sorted(defined)}")

    async def bounded(self, what: str, turn: int, make: Any) -> Any:
        """Await a send/resume, at most --turn-timeout seconds; a hang is a stuck turn (stopped)."""
        task = asyncio.ensure_future(make())
        done, _ = await asyncio.wait({task}, timeout=self.args.turn_timeout)
        if task in done:
            try:
                return task.result()
            except Exception as exc:  # the engine must not raise out of a turn
                self.rec.crashes.append({"turn": turn, "what": what, "error": f"{type(exc).__name__}: {exc}"})
                return None
        self.rec.stuck.append({"turn": turn, "what": what, "after_s": self.args.turn_timeout})
        self.session.stop()
        try:
            await asyncio.wait_for(task, 10)
        except BaseException as exc:  # a stuck turn is reported, whatever it raises
            self.rec.crashes.append({"turn": turn, "what": f"{what} after stop", "error": repr(exc)})
        return None

    def queue(self, turn: int, responses: list[dict[str, Any]], expected: int, label: str) -> tuple[int, str]:
        left = self.server.discard_pending()
        if left:
            self.rec.anomalies.append({"turn": turn, "what": f"{left} scripted responses left unused before {label}"})
        self.server.push(*responses)
        return self.server.count(), label

    def check_requests(self, turn: int, start: int, expected: int, label: str, result: Any) -> int:
        used = self.server.count() - start
        if used != expected:
            outcomes = [r.get("outcome") for r in self.server.records(start)]
            self.rec.anomalies.append(
                {
                    "turn": turn,
                    "what": f"{label} made {used} requests, expected {expected}",
                    "outcomes": outcomes,
                    "status": getattr(result, "status", None),
                    "error": getattr(result, "error", None),
                    "history_messages": len(self.session.store.messages(self.session.chat_id)),
                }
            )
        return used

    async def attempt(
        self,
        turn: int,
        attempt: int,
        text: str,
        *,
        fault: Fault | None = None,
        kill: str | None = None,
        park: bool = False,
        flood: int = 0,
    ) -> Any:
        token = token_for(turn, attempt)
        hold = HOLD_SECONDS if kill == "in_flight" else 0.0
        responses, expected = turn_script(self.wire_name, turn, attempt, hold=hold, fault=fault, flood=flood)
        label = f"turn {turn} attempt {attempt}"
        start, _ = self.queue(turn, responses, expected, label)
        if kill == "before":
            await self.kill_before(turn)
        elif kill == "in_flight":
            self.kill_on_start, self.killed_in_flight = f"w-{token}", None
        if park:
            self.approver.park.add(token)
        self.rec.sends[text] += 1
        t0, cpu0 = time.perf_counter(), time.process_time()
        result = await self.bounded("send", turn, lambda: self.session.send(text))
        if result is not None:
            self.rec.statuses[result.status] += 1
        if park:
            self.approver.park.discard(token)
        if park and result is not None and result.status == "parked":  # a fault can end the turn before the write
            parked_ok = self.session.parked() is not None
            resumed = await self.bounded("resume", turn, lambda: self.session.resume())
            if resumed is not None:
                self.rec.statuses[f"resumed:{resumed.status}"] += 1
            self.rec.parks.append(
                {"turn": turn, "parked": parked_ok, "resumed": resumed.status if resumed is not None else None}
            )
            result = resumed
        elif park:
            self.rec.parks.append(
                {"turn": turn, "parked": False, "resumed": None, "ended": result.status if result is not None else None}
            )
        elapsed = time.perf_counter() - t0
        self.rec.turn_seconds.append(elapsed)
        self.rec.turn_cpu.append((turn, time.process_time() - cpu0))
        self.check_requests(turn, start, expected, label, result)
        if kill == "in_flight":
            call = f"w-{token}"
            self.kill_on_start = None
            reached = call in self.rec.write_failed or call in self.rec.write_completed
            self.kill_carried = not reached and attempt == 0
            if not self.kill_carried:
                self.rec.kills.append(
                    {
                        "turn": turn,
                        "attempt": attempt,
                        "mode": kill,
                        "pid": self.killed_in_flight,
                        "write": self.rec.write_failed.get(call, "completed" if reached else "not reached"),
                    }
                )
        if fault is not None:
            self.rec.faults.append(
                {
                    "turn": turn,
                    "kind": fault.kind,
                    "position": fault.position,
                    "status": result.status if result is not None else None,
                    "expected": FAULT_KINDS[fault.kind],
                    "seconds": round(elapsed, 3),
                    "error": (result.error or "")[:160] if result is not None else None,
                }
            )
        if result is not None and result.status == "done":
            self.rec.done_tokens.append(token)
        if flood:
            size = self.home.log_bytes()
            self.rec.log_bytes_max = max(self.rec.log_bytes_max, size)
            self.rec.floods.append(
                {"turn": turn, "bytes": flood, "log_bytes_after": size, "seconds": round(elapsed, 2)}
            )
        return result

    def jump_clock(self, turn: int, n: int) -> None:
        """The store's wall clock jumps (back, forward, far back, far forward, in turn)."""
        import core.store.ids as ids

        jump = (-7200.0, 3600.0, -86400.0, 2 * 86400.0)[n % 4]
        self.clock_offset += jump
        offset = self.clock_offset
        ids.CLOCK = lambda: time.time() + offset
        self.rec.clock_jumps.append({"turn": turn, "jump_s": jump, "offset_s": offset})

    async def kill_before(self, turn: int) -> None:
        pid = self.home.live_pid()
        if pid is None:
            self.rec.kills.append({"turn": turn, "mode": "before", "pid": None, "write": "no live server"})
            return
        self.server_failed.clear()
        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):  # let the client see it go, so the call finds it dead
            await asyncio.wait_for(self.server_failed.wait(), 3)
        self.rec.kills.append({"turn": turn, "mode": "before", "pid": pid, "noticed": self.server_failed.is_set()})

    async def run(self) -> None:
        args, rec = self.args, self.rec
        await self.open()
        faults = kills = jumps = 0
        t_start = time.perf_counter()
        try:
            for turn in range(1, args.turns + 1):
                fault = kill = None
                if args.fault_every and turn % args.fault_every == 0:
                    fault, faults = fault_for(faults), faults + 1
                if args.kill_every and turn % args.kill_every == 0:
                    kill, kills = ("before", "in_flight")[kills % 2], kills + 1
                park = bool(args.park_every) and turn % args.park_every == args.park_every // 2
                if args.clock_every and turn % args.clock_every == args.clock_every // 3:
                    self.jump_clock(turn, jumps)
                    jumps += 1
                flood = args.flood_bytes if args.flood_every and turn % args.flood_every == 7 % args.flood_every else 0
                text = f"turn {turn}: please note t{turn:03d}"
                result = await self.attempt(turn, 0, text, fault=fault, kill=kill, park=park, flood=flood)
                if result is not None and result.status == "failed":
                    rec.resends += 1
                    carried, self.kill_carried = self.kill_carried, False
                    again = await self.attempt(turn, 1, text, kill="in_flight" if carried else None)
                    if again is None or again.status != "done":
                        rec.resend_failed.append(turn)
                if args.rss_every and (turn % args.rss_every == 0 or turn == 1):
                    self.sample(turn)
                if turn % 10 == 0:
                    log(
                        f"turn {turn}/{args.turns} {time.perf_counter() - t_start:.0f}s rss "
                        f"{(rss_kb() or 0) / 1024:.1f}MB faults {faults} kills {kills} resends {rec.resends} "
                        f"stuck {len(rec.stuck)} crashes {len(rec.crashes)}"
                    )
        finally:
            left = self.server.discard_pending()
            if left:
                rec.anomalies.append({"turn": args.turns, "what": f"{left} scripted responses left at the end"})
            await self.session.close()

    def sample(self, turn: int) -> None:
        self.rec.rss.append((turn, rss_kb() or 0))
        pid = self.home.live_pid()
        if pid is not None and (kb := rss_kb(pid)) is not None:
            self.rec.mcp_rss.append((turn, kb))
        self.rec.objects.append((turn, len(gc.get_objects())))
        self.rec.blocks.append((turn, sys.getallocatedblocks()))


# --- phase 2: the real binary -----------------------------------------------------------------------


def deferchat_command() -> list[str]:
    """The ``deferchat`` entry point (``tui.main:main``), from the code this run imports."""
    return [sys.executable, "-c", "import sys; from tui.main import main; sys.exit(main())"]


def snapshot(into: Path) -> Path:
    """A copy of the packages (``core``, ``tui``) as they are now, put first on ``sys.path``, so
    both phases run one version of the code: other people's edits to the working tree while the
    soak runs cannot break it halfway (a half-written module is an ImportError in a new process)."""
    src = into / "src"
    for package in ("core", "tui"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    sys.path.insert(0, str(src))
    return src


def code_state() -> dict[str, Any]:
    """Which code ran: the commit, and how many paths the working tree had changed."""
    import subprocess

    def git(*argv: str) -> str:
        try:
            return subprocess.run(["git", *argv], cwd=ROOT, capture_output=True, text=True, timeout=20).stdout
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "commit": git("rev-parse", "--short", "HEAD").strip() or None,
        "uncommitted_paths": len([line for line in git("status", "--porcelain").splitlines() if line.strip()]),
    }


async def process_phase(
    args: argparse.Namespace, home: Home, server: Provider, rec: Record, chat_id: str, first_turn: int
) -> dict[str, Any]:
    """Turns of the real binary on the same chat. Every 5th has a provider fault; every 10th
    kills in flight, alternately the MCP server and ``deferchat`` itself (SIGKILL while its
    write holds): the next ``ask --chat`` must finish that interrupted turn first, without
    running its write again, then send its own prompt."""
    from core.providers.wirenames import encode

    env = {k: v for k, v in os.environ.items() if k not in DEVELOPER_ENV}
    env.update(DEFERCHAT_HOME=str(home.path), TZ="UTC", PYTHONPATH=os.pathsep.join(args.code_path))
    env.update(args.secret_env)  # the provider key, the MCP server's secret
    signals = 0
    flags = [
        "--first-byte-timeout",
        str(WAITS["first_byte"]),
        "--idle-timeout",
        str(WAITS["idle"]),
        "--connect-timeout",
        str(WAITS["connect"]),
    ]
    runs: list[dict[str, Any]] = []
    faults = kills = 0
    interrupted: str | None = None  # the token of a turn whose process was killed: the next ask resumes it
    for n in range(1, args.process_turns + 1):
        if n > args.process_min and time.perf_counter() - args.started > args.budget:
            log(f"budget of {args.budget:.0f}s spent: {n - 1} of {args.process_turns} process turns ran")
            break
        turn = first_turn + n
        fault = None
        if n % 5 == 0:
            fault, faults = fault_for(faults + 3), faults + 1  # start elsewhere in the rotation than phase 1
        kill: str | None = None  # carried to the re-send when the fault ends the turn before the write
        if n % 10 == 0:
            kill, kills = ("mcp", "self")[kills % 2], kills + 1
        sig: signal.Signals | None = None
        if args.signal_every and n % args.signal_every == 2 % args.signal_every and fault is None and kill is None:
            sig = (signal.SIGTERM, signal.SIGHUP, signal.SIGTERM, signal.SIGHUP, signal.SIGINT)[signals % 5]
            signals += 1
        text = f"turn {turn}: please note t{turn:03d}"
        for attempt in (0, 1):
            token = token_for(turn, attempt)
            responses, expected = turn_script(
                encode,
                turn,
                attempt,
                hold=HOLD_SECONDS if kill else 0,
                fault=fault if attempt == 0 else None,
                slow_answer=sig is not None,
            )
            if interrupted is None:
                left = server.discard_pending()
                if left:
                    rec.anomalies.append({"turn": turn, "what": f"{left} responses left unused (process)"})
            else:  # the killed turn's read and answer are still queued: the resume asks for them first
                expected += server.pending()
            server.push(*responses)
            start = server.count()
            rec.sends[text] += 1
            run = await one_process(
                args,
                [*deferchat_command(), "ask", text, "--chat", chat_id, "--approve", "yes", "--json", *flags],
                env,
                home,
                rec,
                turn,
                kill_call=f"w-{token}" if kill else None,
                kill_mode=kill,
                signal_after=f"r-{token}" if sig is not None else None,
                signum=sig,
            )
            if sig is not None:
                check_signal(home, rec, chat_id, turn, token, sig, run)
                sig = None
            resumed, interrupted = interrupted, None
            if kill and run["killed"] is not None:
                if kill == "self":
                    interrupted = token
                kill = None
            used = server.count() - start
            run.update(
                turn=turn,
                attempt=attempt,
                requests=used,
                resumed=resumed,
                fault=fault.kind if fault and not attempt else None,
            )
            if used != expected and interrupted is None:
                rec.anomalies.append(
                    {
                        "turn": turn,
                        "what": f"process attempt {attempt} made {used} requests, expected {expected}",
                        "outcomes": [r.get("outcome") for r in server.records(start)],
                        "exit": run["exit"],
                        "stderr": run["stderr_tail"],
                    }
                )
            runs.append(run)
            status = {
                0: "done",
                1: "failed",
                3: "parked",
                130: "stopped",
                143: "stopped",
                129: "stopped",
                -9: "killed",
            }.get(run["exit"], f"exit {run['exit']}")
            rec.statuses[f"process:{status}"] += 1
            if status == "done":
                rec.done_tokens.append(token)
                if resumed:  # the interrupted turn ended done before this prompt was sent
                    rec.done_tokens.append(resumed)
            if status != "failed" or attempt == 1:
                if status not in ("done", "killed") and attempt == 1:
                    rec.resend_failed.append(turn)
                break
            rec.resends += 1
        log(
            f"process turn {n}/{args.process_turns}: "
            + ", ".join(f"exit {r['exit']} {r['seconds']:.1f}s" for r in runs if r["turn"] == turn)
        )
    if interrupted is not None:  # the last turn was killed: `deferchat resume` finishes it, as its owner would
        turn = first_turn + args.process_turns
        run = await one_process(
            args,
            [*deferchat_command(), "resume", chat_id, "--approve", "yes", "--json"],
            env,
            home,
            rec,
            turn,
            kill_call=None,
        )
        run.update(turn=turn, attempt="resume", requests=None, resumed=interrupted, fault=None)
        runs.append(run)
        rec.statuses[f"process:resume exit {run['exit']}"] += 1
        if run["exit"] == 0:
            rec.done_tokens.append(interrupted)
        log(f"resume of the killed turn: exit {run['exit']} {run['seconds']:.1f}s")
    seconds = [r["seconds"] for r in runs]
    firsts = [r["first_event_s"] for r in runs if r["first_event_s"] is not None]
    return {
        "turns": args.process_turns,
        "turns_run": len({r["turn"] for r in runs}),
        "processes": len(runs),
        "exits": dict(Counter(str(r["exit"]) for r in runs)),
        "seconds_p50": percentile(seconds, 0.5),
        "seconds_max": max(seconds, default=None),
        "first_event_p50_s": percentile(firsts, 0.5),
        "peak_rss_mb_first": runs[0]["peak_rss_mb"] if runs else None,
        "peak_rss_mb_last": runs[-1]["peak_rss_mb"] if runs else None,
        "peak_rss_mb_max": max((r["peak_rss_mb"] for r in runs), default=None),
        "runs": [
            {
                **{
                    k: r[k]
                    for k in (
                        "turn",
                        "attempt",
                        "exit",
                        "seconds",
                        "requests",
                        "fault",
                        "killed",
                        "resumed",
                        "peak_rss_mb",
                    )
                },
                **({"stderr_tail": r["stderr_tail"]} if r["exit"] not in (0,) else {}),
            }
            for r in runs
        ],
    }


async def one_process(
    args: argparse.Namespace,
    cmd: list[str],
    env: dict[str, str],
    home: Home,
    rec: Record,
    turn: int,
    kill_call: str | None,
    kill_mode: str | None = None,
    signal_after: str | None = None,
    signum: signal.Signals | None = None,
) -> dict[str, Any]:
    """One ``deferchat`` process. ``signal_after``: the call id after whose result the answer
    streams; ``signum`` lands at a random point of that answer (its deltas printed so far are
    kept in ``printed``)."""
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *cmd,
        env=env,
        cwd=str(home.path),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    first_event: float | None = None
    killed: int | None = None
    loop = asyncio.get_running_loop()
    answering = False
    printed: list[str] = []
    signalled: float | None = None

    def signal_now() -> None:
        nonlocal signalled
        if proc.returncode is None and signum is not None:
            proc.send_signal(signum)
            signalled = time.perf_counter() - t0

    def kill_now() -> None:
        nonlocal killed
        pid = proc.pid if kill_mode == "self" else home.live_pid()
        if pid is not None and proc.returncode is None:
            os.kill(pid, signal.SIGKILL)
            killed = pid

    async def read_stdout() -> None:
        nonlocal first_event, answering
        assert proc.stdout is not None
        async for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            if first_event is None:
                first_event = time.perf_counter() - t0
            try:
                data = json.loads(line)
            except ValueError:
                rec.anomalies.append({"turn": turn, "what": "a stdout line that is not JSON", "line": line[:200]})
                continue
            rec.watch_json(data)
            rec.look_for_secrets(f"turn {turn} stdout {data.get('type')}", line)
            if kill_call and data.get("type") == "tool.started" and data.get("call_id") == kill_call:
                loop.call_later(KILL_DELAY, kill_now)
            if signal_after and data.get("type") == "tool.completed" and data.get("call_id") == signal_after:
                answering = True
            elif answering and data.get("type") == "model.text.delta":
                if not printed:  # the answer has begun: the signal lands somewhere in it
                    loop.call_later(random.uniform(0.0, 1.2), signal_now)
                if signalled is None:
                    printed.append(data.get("text", ""))

    peak_kb = 0

    async def watch_rss() -> None:  # VmHWM: the process's own peak since exec (ru_maxrss would count the fork)
        nonlocal peak_kb
        while proc.returncode is None:
            peak_kb = max(peak_kb, rss_kb(proc.pid, "VmHWM") or 0)
            await asyncio.sleep(0.1)

    assert proc.stderr is not None
    watcher = asyncio.ensure_future(watch_rss())
    reader = asyncio.ensure_future(read_stdout())
    err_task = asyncio.ensure_future(proc.stderr.read())
    try:
        code = await asyncio.wait_for(proc.wait(), args.turn_timeout + 15)
    except TimeoutError:
        rec.stuck.append({"turn": turn, "what": "process", "after_s": args.turn_timeout + 15})
        proc.kill()
        code = await proc.wait()
    await reader
    watcher.cancel()
    stderr = (await err_task).decode("utf-8", "replace")
    rec.look_for_secrets(f"turn {turn} stderr", stderr)
    if "Traceback (most recent call last)" in stderr or "internal error" in stderr:
        rec.crashes.append({"turn": turn, "what": "process traceback", "stderr": stderr[-2000:]})
    seconds = time.perf_counter() - t0
    rec.turn_seconds.append(seconds)
    if kill_call and (killed is not None or kill_call.endswith("a1")):
        rec.kills.append(
            {
                "turn": turn,
                "mode": f"in_flight (process, {kill_mode})",
                "pid": killed,
                "write": rec.write_failed.get(
                    kill_call,
                    "completed" if kill_call in rec.write_completed else "in flight" if killed else "not reached",
                ),
            }
        )
    return {
        "exit": code,
        "seconds": round(seconds, 3),
        "first_event_s": first_event,
        "killed": killed,
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "stderr_tail": stderr[-300:],
        "printed": "".join(printed),
        "signalled_s": round(signalled, 3) if signalled is not None else None,
    }


def check_signal(
    home: Home, rec: Record, chat_id: str, turn: int, token: str, sig: signal.Signals, run: dict[str, Any]
) -> None:
    """A turn stopped by a signal: the exit code, the turn row, the partial answer as printed."""
    db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        user = f"turn {turn}: please note t{turn:03d}"
        rows = db.execute(
            "select id, status from turns where chat_id = ? order by seq desc limit 1", [chat_id]
        ).fetchall()
        texts = [
            b.get("text", "")
            for (content,) in db.execute(
                "select content from messages where chat_id = ? and role = 'assistant' order by seq desc limit 1",
                [chat_id],
            )
            for b in json.loads(content or "[]")
            if b.get("type") == "text"
        ]
        asked = db.execute(
            "select count(*) from messages where chat_id = ? and role = 'user' and content like ?",
            [chat_id, f"%{user}%"],
        ).fetchone()[0]
    finally:
        db.close()
    stored = texts[-1] if texts else ""
    printed = run.get("printed") or ""
    kept = stored.startswith(printed) and answer_for(token).startswith(stored)
    if run["signalled_s"] is None:  # the answer ended before the signal landed: a done turn
        outcome = "finished first"
        kept, stopped, code_ok = True, True, run["exit"] == 0
    else:
        stopped = bool(rows) and rows[0][1] == "stopped"
        code_ok = run["exit"] == 128 + int(sig)
        outcome = "stopped" if stopped else f"turn {rows[0][1] if rows else '?'}"
    rec.signals.append(
        {
            "turn": turn,
            "signal": sig.name,
            "at_s": run["signalled_s"],
            "exit": run["exit"],
            "exit_ok": code_ok,
            "outcome": outcome,
            "printed_chars": len(printed),
            "stored_chars": len(stored),
            "partial_kept": kept,
            "user_message_kept": asked >= 1,
        }
    )


# --- the checks -------------------------------------------------------------------------------------


def audit(home: Home, rec: Record, chat_id: str) -> dict[str, Any]:
    """What the store and the notes file hold, against what was sent and reported."""
    db = sqlite3.connect(f"file:{home.db}?mode=ro", uri=True)
    try:
        user_texts: Counter[str] = Counter()
        assistant_texts: set[str] = set()
        written_order: list[int] = []  # the turn numbers of the user texts, as the store orders them
        for role, content in db.execute("select role, content from messages where chat_id = ? order by seq", [chat_id]):
            for block in json.loads(content or "[]"):
                if block.get("type") == "text":
                    (user_texts.update([block["text"]]) if role == "user" else assistant_texts.add(block["text"]))
                    if role == "user" and (m := re.match(r"turn (\d+): please note", block["text"])):
                        written_order.append(int(m.group(1)))
        turns = dict(db.execute("select status, count(*) from turns where chat_id = ? group by status", [chat_id]))
        chat_status = db.execute("select status from chats where id = ?", [chat_id]).fetchone()
        invocations = dict(
            db.execute(
                "select status, count(*) from invocations where chat_id = ? and name = ? group by status",
                [chat_id, WRITE],
            )
        )
        per_call = db.execute(
            "select count(*) from (select call_id from invocations where chat_id = ? "
            "group by call_id having count(*) > 1)",
            [chat_id],
        ).fetchone()[0]
        rows = {
            t: db.execute(f"select count(*) from [{t}]").fetchone()[0]  # our own table names
            for (t,) in db.execute(
                "select name from sqlite_master where type = 'table' and name not like "
                "'sqlite_%' and name not like '%_fts%' order by name"
            )
        }
    finally:
        db.close()
    lost = {text: n - user_texts.get(text, 0) for text, n in rec.sends.items() if user_texts.get(text, 0) < n}
    answers_lost = [t for t in rec.done_tokens if answer_for(t) not in assistant_texts]
    notes = Counter(home.notes.read_text(encoding="utf-8").split()) if home.notes.exists() else Counter()
    twice = {t: n for t, n in notes.items() if n > 1}
    missing = sorted(t for t in rec.write_completed.values() if notes.get(t, 0) == 0)
    open_turns = {s: n for s, n in turns.items() if s in ("running", "parked")}
    out_of_order = sum(1 for a, b in itertools.pairwise(written_order) if b < a)
    for suffix in ("", "-wal"):
        f = Path(f"{home.db}{suffix}")
        if f.exists():
            rec.look_for_secrets(f"the store's file {f.name}", f.read_bytes())
    return {
        "history_out_of_order": out_of_order,
        "messages_lost": sum(lost.values()),
        "messages_lost_detail": dict(list(lost.items())[:20]),
        "answers_lost": len(answers_lost),
        "answers_lost_detail": answers_lost[:20],
        "calls_executed_twice": len(twice),
        "calls_executed_twice_detail": dict(list(twice.items())[:20]),
        "writes_reported_but_missing": len(missing),
        "writes_missing_detail": missing[:20],
        "open_turns": open_turns,
        "chat_status": chat_status[0] if chat_status else None,
        "turn_statuses": turns,
        "write_invocations": invocations,
        "call_ids_with_two_rows": per_call,
        "notes_in_file": sum(notes.values()),
        "distinct_tokens_in_file": len(notes),
        "rows": rows,
    }


def store_size(home: Home) -> dict[str, int]:
    sizes = {
        name: (home.path / f"deferchat.db{suffix}").stat().st_size
        if (home.path / f"deferchat.db{suffix}").exists()
        else 0
        for name, suffix in (("db_bytes", ""), ("wal_bytes", "-wal"), ("shm_bytes", "-shm"))
    }
    sizes["total_bytes"] = sum(sizes.values())
    return sizes


def cpu_report(points: list[tuple[int, float]]) -> dict[str, Any]:
    """The engine's CPU per turn (all of this process: the provider runs elsewhere), early and late:
    a cost that grows with the history shows here even when the machine is loaded."""
    per_turn: dict[int, float] = {}
    for turn, cpu in points:
        per_turn[turn] = per_turn.get(turn, 0.0) + cpu
    if not per_turn:
        return {}
    turns = sorted(per_turn)
    tenth = max(1, len(turns) // 10)
    first = statistics.median(per_turn[t] for t in turns[:tenth])
    last = statistics.median(per_turn[t] for t in turns[-tenth:])
    s = slope([(t, round(per_turn[t] * 1e6)) for t in turns])
    return {
        "first_tenth_median_ms": round(first * 1000, 1),
        "last_tenth_median_ms": round(last * 1000, 1),
        "slope_us_per_turn": round(s, 1) if s is not None else None,
        "total_s": round(sum(per_turn.values()), 1),
    }


def rss_report(points: list[tuple[int, int]]) -> dict[str, Any]:
    if not points:
        return {}
    kbs = [kb for _, kb in points]
    half = points[len(points) // 2 :]
    s_all, s_half = slope(points), slope(half)
    return {
        "first_mb": round(kbs[0] / 1024, 1),
        "last_mb": round(kbs[-1] / 1024, 1),
        "peak_mb": round(max(kbs) / 1024, 1),
        "slope_kb_per_turn": round(s_all, 2) if s_all is not None else None,
        "slope_second_half_kb_per_turn": round(s_half, 2) if s_half is not None else None,
        "samples": [[t, round(kb / 1024, 1)] for t, kb in points],
    }


# --- main -------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=300)
    p.add_argument("--fault-every", type=int, default=10)
    p.add_argument("--kill-every", type=int, default=25)
    p.add_argument("--park-every", type=int, default=30, help="park the write every N turns, then resume (0: never)")
    p.add_argument("--wire", default="openai-chat", choices=("openai-chat", "anthropic", "openai"))
    p.add_argument("--process-turns", type=int, default=20, help="turns of the real binary after the in-process ones")
    p.add_argument("--rss-every", type=int, default=10)
    p.add_argument("--turn-timeout", type=float, default=30.0, help="seconds after which a turn counts as stuck")
    p.add_argument(
        "--budget",
        type=float,
        default=560.0,
        help="seconds of wall time after which no further process turn starts (the run stays bounded)",
    )
    p.add_argument("--process-min", type=int, default=5, help="process turns that run whatever the budget says")
    p.add_argument(
        "--live-tree",
        action="store_true",
        help="run the working tree as it changes (default: a copy of core/ and tui/ made at the start)",
    )
    p.add_argument("--signal-every", type=int, default=4, help="process turns: SIGTERM/SIGHUP mid-answer (0: never)")
    p.add_argument("--clock-every", type=int, default=15, help="in process: the store's clock jumps (0: never)")
    p.add_argument("--flood-every", type=int, default=20, help="the write floods the server's stderr first (0: never)")
    p.add_argument("--flood-bytes", type=int, default=4_000_000)
    p.add_argument("--escalate-every", type=int, default=8, help="count_notes re-listed as a write (0: never)")
    p.add_argument("--keep", action="store_true", help="keep the temporary home (its path goes to stderr)")
    return p.parse_args(argv)


async def soak(args: argparse.Namespace, home: Home) -> dict[str, Any]:
    rec = Record(secrets=args.secrets)
    wall0 = time.perf_counter()
    server = Provider()
    try:
        phase = InProcess(args, home, server, rec)
        await phase.run()
        chat_id = phase.session.chat_id
        in_process_s = time.perf_counter() - wall0
        in_process_rss = rss_report(rec.rss)
        starts_in_process = home.starts()
        store_after_in_process = store_size(home)  # the engine's connection still open: the WAL is there
        proc: dict[str, Any] = {}
        t1 = time.perf_counter()
        if args.process_turns:
            proc = await process_phase(args, home, server, rec, chat_id, args.turns)
        process_s = time.perf_counter() - t1
        served = server.records()
        provider_rss_kb = server.rss_kb()
    finally:
        server.stop()
    checks = audit(home, rec, chat_id)
    stuck = len(rec.stuck) + sum(checks["open_turns"].values())
    from core.mcp.logs import STDERR_LOG_BYTES

    log_bound = 2 * STDERR_LOG_BYTES + 64 * 1024  # the log and its one rotation, and a pipe's worth
    signal_lost = [x for x in rec.signals if not (x["partial_kept"] and x["user_message_kept"])]
    signal_not_stopped = [
        x for x in rec.signals if x["outcome"] not in ("stopped", "finished first") or not x["exit_ok"]
    ]
    must = {
        "messages_lost": checks["messages_lost"],
        "answers_lost": checks["answers_lost"],
        "calls_executed_twice": checks["calls_executed_twice"],
        "writes_reported_but_missing": checks["writes_reported_but_missing"],
        "turns_stuck": stuck,
        "crashes": len(rec.crashes),
        "requests_out_of_order": sum(1 for r in served if r.get("body") and r["body"].get("in_order") is False),
        "history_out_of_order": checks["history_out_of_order"],
        "secrets_seen": len(rec.secret_hits),
        "escalated_calls_unasked": len(rec.escalated_unasked),
        "stderr_log_over_bound": int(rec.log_bytes_max > log_bound),
        "signal_partials_lost": len(signal_lost),
        "signal_turns_not_stopped": len(signal_not_stopped),
    }
    summary = {
        "lost": must["messages_lost"]
        + must["answers_lost"]
        + must["writes_reported_but_missing"]
        + must["signal_partials_lost"],
        "doubled": must["calls_executed_twice"],
        "stuck": must["turns_stuck"] + must["signal_turns_not_stopped"],
        "secrets_seen": must["secrets_seen"],
    }
    by_kind: dict[str, Any] = {}
    for f in rec.faults:
        k = by_kind.setdefault(f["kind"], {"count": 0, "outcomes": Counter(), "seconds": []})
        k["count"] += 1
        k["outcomes"][f["status"]] += 1
        k["seconds"].append(f["seconds"])
    for k in by_kind.values():
        k["outcomes"] = dict(k["outcomes"])
        k["mean_s"] = round(statistics.fmean(k.pop("seconds")), 2)
    unexpected = [f for f in rec.faults if f["status"] != f["expected"]]
    in_process_seconds = rec.turn_seconds[: len(rec.turn_seconds) - (proc.get("processes") or 0)]
    return {
        "ok": not any(must.values()),
        "summary": summary,
        "must_be_zero": must,
        "third_round": {
            "signals": rec.signals,
            "clock_jumps": rec.clock_jumps,
            "floods": rec.floods,
            "stderr_log_bytes_max": rec.log_bytes_max,
            "stderr_log_bound": log_bound,
            "escalations": rec.escalations,
            "escalated_calls_run": rec.escalated_runs,
            "escalated_calls_unasked": rec.escalated_unasked[:20],
            "tool_changed_events": rec.tool_changed[:40],
            "secret_hits": rec.secret_hits[:20],
        },
        "config": {
            "wire": args.wire,
            "turns": args.turns,
            "fault_every": args.fault_every,
            "kill_every": args.kill_every,
            "park_every": args.park_every,
            "process_turns": args.process_turns,
            "signal_every": args.signal_every,
            "clock_every": args.clock_every,
            "flood_every": args.flood_every,
            "flood_bytes": args.flood_bytes,
            "escalate_every": args.escalate_every,
            "waits_s": WAITS,
            "turn_timeout_s": args.turn_timeout,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "code": args.code,
        },
        "turns": {
            "sends": sum(rec.sends.values()),
            "resends": rec.resends,
            "resend_failed": rec.resend_failed,
            "results": dict(rec.statuses),
            "store_turn_statuses": checks["turn_statuses"],
            "open_turns_at_end": checks["open_turns"],
            "chat_status_at_end": checks["chat_status"],
            "parks": len(rec.parks),
            "parks_resumed_done": sum(p["resumed"] == "done" for p in rec.parks),
            "stuck": rec.stuck,
        },
        "faults": {
            "injected": len(rec.faults),
            "by_kind": by_kind,
            "unexpected_outcomes": unexpected,
            "provider_retrying_events": rec.retrying,
            "error_codes": dict(rec.error_codes),
            "requests_served": len(served),
            "request_outcomes": dict(Counter(str(r.get("outcome")) for r in served)),
            "largest_request_bytes": max((r["body"]["bytes"] for r in served if r.get("body")), default=None),
            "largest_request_messages": max(
                (r["body"]["messages"] or 0 for r in served if r.get("body")), default=None
            ),
        },
        "mcp": {
            "kills": len(rec.kills),
            "kill_log": rec.kills,
            "server_starts": home.starts(),
            "server_starts_in_process_phase": starts_in_process,
            "tool_failed_codes": dict(rec.tool_failed),
            "writes": {
                "completed": len(rec.write_completed),
                "failed": len(rec.write_failed),
                "replayed": rec.replayed,
                "notes_in_file": checks["notes_in_file"],
                "distinct_tokens_in_file": checks["distinct_tokens_in_file"],
                "invocation_statuses": checks["write_invocations"],
                "call_ids_with_two_rows": checks["call_ids_with_two_rows"],
            },
        },
        "rss": {
            "engine_in_process": in_process_rss,
            "mcp_server": rss_report(rec.mcp_rss),
            "python_objects": {
                "first": rec.objects[0][1] if rec.objects else None,
                "last": rec.objects[-1][1] if rec.objects else None,
                "slope_per_turn": round(s, 1) if (s := slope(rec.objects)) is not None else None,
            },
            "python_allocated_blocks": {
                "first": rec.blocks[0][1] if rec.blocks else None,
                "last": rec.blocks[-1][1] if rec.blocks else None,
                "slope_per_turn": round(b, 1) if (b := slope(rec.blocks)) is not None else None,
            },
            "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "provider_process_mb": round(provider_rss_kb / 1024, 1),
        },
        "store": {"after_in_process_phase": store_after_in_process, "at_end": store_size(home), "rows": checks["rows"]},
        "wall": {
            "total_s": round(time.perf_counter() - wall0, 1),
            "in_process_s": round(in_process_s, 1),
            "process_s": round(process_s, 1),
            "turn_p50_s": percentile(in_process_seconds, 0.5),
            "turn_p95_s": percentile(in_process_seconds, 0.95),
            "turn_max_s": max(in_process_seconds, default=None),
            "cpu": cpu_report(rec.turn_cpu),
        },
        "process_phase": proc,
        "anomalies": rec.anomalies,
        "crash_detail": rec.crashes,
        "lost_detail": {
            k: checks[k]
            for k in (
                "messages_lost_detail",
                "answers_lost_detail",
                "calls_executed_twice_detail",
                "writes_missing_detail",
            )
        },
    }


def main(argv: list[str] | None = None) -> int:
    if (argv if argv is not None else sys.argv[1:]) == ["--serve"]:
        return serve_main()
    args = parse_args(argv)
    args.started = time.perf_counter()
    for var in DEVELOPER_ENV:
        os.environ.pop(var, None)
    tmp = Path(tempfile.mkdtemp(prefix="deferchat-soak-"))
    home = Home(tmp / "home", escalate_every=args.escalate_every)
    os.environ["DEFERCHAT_HOME"] = str(home.path)
    os.environ["TZ"] = "UTC"
    home.mcp_logs.mkdir(parents=True, exist_ok=True)
    os.environ["TMPDIR"] = str(home.mcp_logs)  # the MCP client's log folders, where the soak can see them
    tempfile.tempdir = str(home.mcp_logs)
    args.secrets = Secrets.new()
    key_var = "ANTHROPIC_API_KEY" if args.wire == "anthropic" else "OPENAI_API_KEY"
    args.secret_env = {key_var: args.secrets.key, "SOAK_MCP_SECRET": args.secrets.mcp}
    os.environ.update(args.secret_env)
    home.write()
    args.code = code_state()
    args.code_path = [str(ROOT)] if args.live_tree else [str(snapshot(tmp)), str(ROOT)]
    args.code["snapshot"] = not args.live_tree
    log(f"home {home.path}; code {args.code}")
    try:
        report = asyncio.run(soak(args, home))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(report, indent=2, default=str))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
