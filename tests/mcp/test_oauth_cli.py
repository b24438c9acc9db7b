"""The headless sign-in in the real binary: ``deferchat servers`` says a server needs sign-in,
``--login`` prints the URL and waits for the redirect, ``ask`` then uses the stored sign-in,
``--logout`` forgets it, and the tokens appear in no output, event, log, record file, export,
database or WAL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from tests.helpers import ROOT, subprocess_env
from tests.mcp.oauth_helpers import oauth_server

ROSTER = {"agent": {"name": "remote-agent", "version": "1", "deferred": []}, "configured": [], "servers": []}


def deferchat(home: Path, *args: str, check: bool = True, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "core.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=subprocess_env(home),
        cwd=str(ROOT),
    )
    if check:
        assert done.returncode == 0, done.stderr + done.stdout
    return done


def test_login_ask_logout_and_no_token_anywhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    outputs: list[str] = []
    with oauth_server() as server:
        (home / "mcp.json").write_text(json.dumps({"mcpServers": {"remote": {"url": server.url, "timeout": 20}}}))
        before = deferchat(home, "servers", check=False)
        assert before.returncode == 1 and "needs sign-in" in before.stdout
        assert "deferchat servers --login remote" in before.stdout

        login = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "servers", "--login", "remote", "--timeout", "60"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(home),
            cwd=str(ROOT),
        )
        assert login.stdout is not None
        url = ""
        for line in login.stdout:
            outputs.append(line)
            if line.strip().startswith("http://"):
                url = line.strip()
                break
        assert url.startswith(f"{server.origin}/authorize?")
        page = httpx.get(url, follow_redirects=True, timeout=10)  # the person's browser
        assert "Signed in to remote" in page.text
        out, err = login.communicate(timeout=60)
        outputs += [out, err]
        assert login.returncode == 0, err
        assert "remote: signed in; signed in; 2 tools" not in out and "remote: signed in; 2 tools" in out

        listed = deferchat(home, "servers", "--json")
        row = json.loads(listed.stdout)
        assert (row["status"], row["auth"], row["capabilities"][0]) == ("ready", "signed_in", "tools")

        roster = tmp_path / "roster.json"
        roster.write_text(json.dumps(ROSTER))
        script = tmp_path / "script.json"
        script.write_text(
            json.dumps(
                {
                    "turns": [
                        [{"type": "tool_use", "id": "call_1", "name": "mcp.remote.whoami", "input": {}}],
                        [{"type": "text", "text": "You are signed in."}],
                    ]
                }
            )
        )
        record = tmp_path / "requests.jsonl"
        ask = deferchat(
            home,
            "ask",
            "who am I there?",
            "--roster",
            str(roster),
            "--script",
            str(script),
            "--approve",
            "yes",
            "--json",
            "--record",
            str(record),
        )
        events = [json.loads(line) for line in ask.stdout.splitlines()]
        [done] = [e for e in events if e["type"] == "tool.completed"]
        assert done["name"] == "mcp.remote.whoami"
        chat_id = next(e["chat_id"] for e in events if e.get("chat_id"))
        export = deferchat(home, "chats", "export", chat_id, "--md")
        shown = deferchat(home, "chats", "show", chat_id)
        outputs += [listed.stdout, listed.stderr, ask.stdout, ask.stderr, export.stdout, shown.stdout]

        entry = json.loads((home / "mcp-oauth.json").read_text())["servers"]["remote"]
        secrets = [entry["tokens"]["access_token"], entry["tokens"]["refresh_token"]]
        if entry["client_info"].get("client_secret"):
            secrets.append(entry["client_info"]["client_secret"])
        files = [p for p in home.rglob("*") if p.is_file() and p.name not in ("mcp-oauth.json",)]
        assert any(p.name.endswith("-wal") or p.suffix == ".db" for p in files)
        for secret in secrets:
            for text in outputs:
                assert secret not in text
            for path in [*files, record]:
                assert secret.encode() not in path.read_bytes(), path

        out = deferchat(home, "servers", "--logout", "remote")
        assert "signed out of remote" in out.stdout
        assert "remote" not in json.loads((home / "mcp-oauth.json").read_text())["servers"]
        after = deferchat(home, "servers", check=False)
        assert after.returncode == 1 and "needs sign-in" in after.stdout
        assert "no stored sign-in" in deferchat(home, "servers", "--logout", "remote").stdout


def test_login_refuses_what_cannot_sign_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "mcp.json").write_text(json.dumps({"mcpServers": {"local": {"command": "true"}}}))
    done = deferchat(home, "servers", "--login", "local", check=False)
    assert done.returncode == 2 and "only a remote server" in done.stderr
    done = deferchat(home, "servers", "--login", "nowhere", check=False)
    assert done.returncode == 2 and "no MCP server 'nowhere'" in done.stderr


def test_a_project_server_gets_no_sign_in_before_its_file_is_approved(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    with oauth_server() as server:
        (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"shared": {"url": server.url}}}))

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "core.cli", *args],
                capture_output=True,
                text=True,
                timeout=60,
                env=subprocess_env(home),
                cwd=str(project),
            )

        listed = run("servers")
        assert "needs_approval" in listed.stdout
        refused = run("servers", "--login", "shared")
        assert refused.returncode == 2 and "approve the file before signing in" in refused.stderr
        state = server.state()
        assert state["registrations"] == 0 and state["authorizations"] == 0  # no sign-in began
        assert not (home / "mcp-oauth.json").exists()
