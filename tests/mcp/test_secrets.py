"""Secrets stay secret: a value that came from ``${VAR}`` expansion is shown, logged and stored
as ``${VAR}``, and a stdio server gets a minimal environment plus what its entry names.

A planted secret is used in a url, a header, a command, an argument and an env entry; a
server prints it on its stderr before it dies. It must not appear in any status, report,
error, log line, ``deferchat servers`` output, ``ask`` output, or anywhere in the store's
files (the database, its WAL). The env-reporting server proves what reached its process.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from pathlib import Path

from core.mcp.client import McpManager
from core.mcp.config import SAFE_ENV_VARS, config_from_dict
from tests.helpers import subprocess_env
from tests.mcp.conftest import Events, free_port, own_server

SECRET = "planted-s3cr3t-9f2c71"
PROVIDER_KEYS = {"ANTHROPIC_API_KEY": "sk-ant-planted-key", "OPENAI_API_KEY": "sk-openai-planted-key"}


def _servers(port: int) -> dict:
    return {
        "envsrv": own_server("tests.mcp_servers.env_report", "--token=${PLANTED}", env={"GIVEN": "${PLANTED}"}),
        "remote": {
            "url": f"http://127.0.0.1:{port}/mcp?key=${{PLANTED}}",
            "headers": {"Authorization": "Bearer ${PLANTED}"},
            "timeout": 10,
        },
        "badcmd": {"command": "/nonexistent/${PLANTED}/server"},
        "noisy": {
            "command": sys.executable,
            "timeout": 10,
            "args": ["-c", "import sys; print('token', sys.argv[1], file=sys.stderr); sys.exit(3)", "${PLANTED}"],
        },
    }


async def test_expanded_values_never_shown_and_the_environment_is_minimal(monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("PLANTED", SECRET)
    monkeypatch.setenv("UNRELATED_PARENT_VAR", "parent-only")
    for k, v in PROVIDER_KEYS.items():
        monkeypatch.setenv(k, v)
    config = config_from_dict({"mcpServers": _servers(free_port())}, source="secrets.json")
    assert SECRET not in config.model_dump_json() + repr(config)
    events = Events()
    manager = McpManager(config, on_event=events)
    try:
        await manager.start()
        reports = {r.name: r for r in manager.servers()}
        assert reports["envsrv"].status == "ready", reports["envsrv"]

        # What reached the process: the entry's own env and args, expanded; no provider key.
        report = json.loads((await manager.call("mcp.envsrv.environment", {})).text())
        env, argv = report["env"], report["argv"]
        assert env["GIVEN"] == SECRET and argv == [f"--token={SECRET}"]
        for key in (*PROVIDER_KEYS, "UNRELATED_PARENT_VAR", "PLANTED"):
            assert key not in env, key
        allowed = {*SAFE_ENV_VARS, "GIVEN", "PYTHONPATH"}
        assert {k for k in env if not k.startswith("LC_")} <= allowed, set(env) - allowed

        # Everything shown about the servers: statuses, reports, errors.
        assert reports["remote"].status == "failed" and "key=${PLANTED}" in reports["remote"].message
        assert "command not found: /nonexistent/${PLANTED}/server" in reports["badcmd"].message
        assert "token ${PLANTED}" in reports["noisy"].message  # its stderr, quoted, redacted
        assert reports["envsrv"].target.endswith("--token=${PLANTED}")
        failed_call = await manager.call("mcp.remote.anything", {})
        assert failed_call.is_error and "${PLANTED}" in failed_call.text()
        shown = [e.to_json() for e in events.seen] + [r.model_dump_json() for r in manager.servers()]
        shown.append(failed_call.model_dump_json())
        shown += [r.getMessage() for r in caplog.records]
        for text in shown:
            assert SECRET not in text, text
            for key in PROVIDER_KEYS.values():
                assert key not in text
    finally:
        await manager.close()


def _run(args: list[str], home: Path, cwd: Path) -> tuple[int, str]:
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "tui.main", *args],
        env=subprocess_env(home, PLANTED=SECRET),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_no_secret_in_servers_output_ask_output_or_the_store(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    config = tmp_path / "secrets.json"
    config.write_text(json.dumps({"mcpServers": _servers(free_port())}))
    for args in (["servers", "--mcp-config", str(config)], ["servers", "--mcp-config", str(config), "--json"]):
        code, out = _run(args, home, cwd)
        assert code == 1  # three of the servers fail
        assert SECRET not in out and "${PLANTED}" in out, out

    roster, script = tmp_path / "roster.json", tmp_path / "script.json"
    roster.write_text(json.dumps({"agent": {"name": "t", "version": "1"}}))
    script.write_text(json.dumps({"turns": [[{"type": "text", "text": "Hello."}]]}))
    code, out = _run(
        ["ask", "hi", "--roster", str(roster), "--script", str(script), "--mcp-config", str(config), "--json"],
        home,
        cwd,
    )
    assert code == 0, out
    assert SECRET not in out and "${PLANTED}" in out

    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".db") for p in files)
    for path in files:  # the database, its -wal and -shm, anything else written there
        assert SECRET.encode() not in path.read_bytes(), path
    db = next(p for p in files if p.name.endswith(".db"))
    with sqlite3.connect(db) as conn:
        stored = [row[0] for row in conn.execute("SELECT json FROM events WHERE type = 'server.status'")]
    assert any("${PLANTED}" in s for s in stored)  # the failures were stored, as written
