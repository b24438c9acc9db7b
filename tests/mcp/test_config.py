"""The mcpServers config: parsing, precedence, ${VAR} expansion, secret isolation, clear errors."""

from __future__ import annotations

import json

import pytest

from core.mcp.config import (
    SAFE_ENV_VARS,
    McpConfigError,
    config_from_dict,
    expand,
    load_mcp_config,
    read_config_file,
    user_config_path,
)

ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/sam",
    "LANG": "en_US.UTF-8",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "OPENAI_API_KEY": "sk-openai-secret",
    "GITHUB_TOKEN": "ghp_token",
    "EMPTY": "",
}


def test_claude_desktop_file_parses_as_is(tmp_path):
    # A Claude Desktop file carries other top-level keys and per-server keys we do not use.
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(
        json.dumps(
            {
                "globalShortcut": "Ctrl+Space",
                "mcpServers": {
                    "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"], "autoApprove": []},
                    "remote": {"type": "http", "url": "https://mcp.example.invalid/mcp", "headers": {"X-Team": "a"}},
                    "legacy": {"type": "sse", "url": "https://mcp.example.invalid/sse"},
                },
            }
        )
    )
    cfg = read_config_file(path, environ=ENV)
    assert cfg.names() == ["legacy", "remote", "time"]  # sorted: byte-stable order
    time_ = cfg.get("time")
    assert time_.transport == "stdio" and time_.command == "uvx"
    assert time_.args == ("mcp-server-time", "--local-timezone=UTC")
    assert cfg.get("remote").transport == "http" and cfg.get("remote").headers == {"X-Team": "a"}
    assert cfg.get("legacy").transport == "sse"
    assert all(s.source == str(path) for s in cfg.servers)


def test_transport_inferred_and_timeouts(tmp_path):
    cfg = config_from_dict(
        {
            "mcpServers": {
                "a": {"url": "http://127.0.0.1:9/mcp", "timeout": 2.5, "call_timeout": 7},
                "b": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
                "c": {"command": "x"},
            }
        },
        environ=ENV,
    )
    assert cfg.get("a").transport == "http" and cfg.get("a").timeout == 2.5 and cfg.get("a").call_timeout == 7
    assert cfg.get("b").transport == "http"
    assert cfg.get("c").timeout == 30.0 and cfg.get("c").call_timeout == 120.0


def test_expansion_of_every_field():
    cfg = config_from_dict(
        {
            "mcpServers": {
                "s": {
                    "command": "${HOME}/bin/server",
                    "args": ["--token=${GITHUB_TOKEN}", "${MISSING:-fallback}", "$HOME"],
                    "env": {"TOKEN": "${GITHUB_TOKEN}", "MODE": "${MODE:-prod}", "E": "${EMPTY:-was-empty}"},
                    "cwd": "${HOME}/work",
                },
                "h": {
                    "url": "https://${HOST:-mcp.example.invalid}/mcp",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                },
            }
        },
        environ=ENV,
    )
    s = cfg.get("s").endpoint()  # what the client connects with
    assert s.command == "/home/sam/bin/server"
    assert s.args == ("--token=ghp_token", "fallback", "$HOME")  # only ${...} is expanded
    assert s.env == {"TOKEN": "ghp_token", "MODE": "prod", "E": "was-empty"}
    assert s.cwd == "/home/sam/work"
    h = cfg.get("h").endpoint()
    assert h.url == "https://mcp.example.invalid/mcp"
    assert h.headers == {"Authorization": "Bearer ghp_token"}
    assert cfg.get("s").error is None
    assert cfg.get("h").error is None


def test_shown_fields_keep_the_templates_and_secrets_are_redacted():
    cfg = config_from_dict(
        {
            "mcpServers": {
                "s": {
                    "command": "server",
                    "args": ["--token=${GITHUB_TOKEN}", "${MODE:-prod}"],
                    "env": {"TOKEN": "${GITHUB_TOKEN}"},
                },
                "h": {
                    "url": "https://mcp.example.invalid/mcp?key=${GITHUB_TOKEN}",
                    "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"},
                },
            }
        },
        environ=ENV,
    )
    s, h = cfg.get("s"), cfg.get("h")
    # What is shown, logged or stored is the file's own text.
    assert s.args == ("--token=${GITHUB_TOKEN}", "${MODE:-prod}") and s.env == {"TOKEN": "${GITHUB_TOKEN}"}
    assert h.url.endswith("key=${GITHUB_TOKEN}") and h.headers == {"Authorization": "Bearer ${GITHUB_TOKEN}"}
    assert s.describe() == "server --token=${GITHUB_TOKEN} ${MODE:-prod}"
    for server in (s, h):
        dumped = server.model_dump_json() + repr(server) + str(server)
        assert "ghp_token" not in dumped
    assert "ghp_token" not in cfg.model_dump_json()
    # Any message quoting an expanded value gets the placeholder back, percent-encoded too.
    assert h.redact("GET https://mcp.example.invalid/mcp?key=ghp_token failed") == (
        "GET https://mcp.example.invalid/mcp?key=${GITHUB_TOKEN} failed"
    )
    odd = config_from_dict({"mcpServers": {"o": {"url": "https://h.invalid/${T}"}}}, environ={"T": "a b/c?"})
    assert odd.get("o").redact("see https://h.invalid/a%20b%2Fc%3F") == "see https://h.invalid/${T}"
    # Defaults are the file's own text, not secrets.
    assert s.redact("mode prod") == "mode prod"


def test_expand_rules():
    assert expand("${A}-${B:-b}", {"A": "a"}) == "a-b"
    assert expand("${A:-x}", {"A": ""}) == "x"  # ':-' as in the shell: empty takes the default
    assert expand("${A}", {"A": ""}) == ""  # set but empty, no default
    assert expand("${A:-}", {}) == ""
    assert expand("no vars $A {A}", {}) == "no vars $A {A}"


def test_unset_variable_fails_that_server_only():
    cfg = config_from_dict(
        {
            "mcpServers": {
                "ok": {"command": "x"},
                "needs_key": {"command": "x", "env": {"API_KEY": "${SERVICE_API_KEY}"}, "args": ["${OTHER}"]},
            }
        },
        source="f.json",
        environ=ENV,
    )
    assert cfg.get("ok").error is None
    err = cfg.get("needs_key").error
    assert err is not None
    assert "SERVICE_API_KEY" in err and "OTHER" in err and "env.API_KEY" in err and "f.json" in err


def test_secret_isolation_minimal_base_plus_own_env():
    cfg = config_from_dict(
        {
            "mcpServers": {
                "plain": {"command": "x"},
                "given": {"command": "x", "env": {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}", "X": "1"}},
                "remote": {"url": "http://127.0.0.1:9/mcp"},
            }
        },
        environ=ENV,
    )
    plain = cfg.get("plain").process_env()
    assert plain == {"PATH": "/usr/bin:/bin", "HOME": "/home/sam", "LANG": "en_US.UTF-8"}
    assert not any("KEY" in k or "TOKEN" in k for k in plain)
    given = cfg.get("given").process_env()
    assert given["ANTHROPIC_API_KEY"] == "sk-ant-secret"  # only because its entry names it
    assert "OPENAI_API_KEY" not in given and "GITHUB_TOKEN" not in given
    assert cfg.get("remote").process_env() == {}  # a remote server gets no environment at all
    assert set(SAFE_ENV_VARS).isdisjoint({"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN"})


def test_shell_functions_are_not_inherited():
    cfg = config_from_dict({"mcpServers": {"s": {"command": "x"}}}, environ={"PATH": "/bin", "SHELL": "() { :; }"})
    assert cfg.get("s").process_env() == {"PATH": "/bin"}


@pytest.mark.parametrize(
    "doc, fragment",
    [
        ({"mcpServers": {"s": {}}}, "give 'command' or 'url'"),
        ({"mcpServers": {"s": {"command": "x", "url": "http://h/mcp"}}}, "not both"),
        ({"mcpServers": {"s": {"type": "http", "command": "x"}}}, "needs 'url'"),
        ({"mcpServers": {"s": {"type": "stdio", "url": "http://h"}}}, "needs 'command'"),
        ({"mcpServers": {"s": {"command": "x", "args": "--flag"}}}, "s.args"),
        ({"mcpServers": {"s": {"command": "x", "env": {"N": 5}}}}, "s.env.N"),
        ({"mcpServers": {"s": {"command": "x", "timeout": -1}}}, "s.timeout"),
        ({"mcpServers": {"s": {"type": "websocket", "url": "ws://h"}}}, "s.type"),
        ({"mcpServers": {"bad.name": {"command": "x"}}}, "mcp.<server>.<tool>"),
        ({"mcpServers": {"s": {"command": "  "}}}, "must not be empty"),
        ({"servers_typo": {}}, 'no "mcpServers"'),
        ([], "expected a JSON object"),
    ],
)
def test_bad_config_is_a_clear_error(doc, fragment):
    with pytest.raises(McpConfigError) as exc:
        config_from_dict(doc, source="my.json", environ=ENV)
    assert fragment in str(exc.value)
    assert "my.json" in str(exc.value)


def test_bad_files(tmp_path):
    with pytest.raises(McpConfigError, match="no such MCP config file"):
        read_config_file(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"mcpServers": {"a": ')
    with pytest.raises(McpConfigError, match=r"not valid JSON \(line 1"):
        read_config_file(broken)


def test_vscode_servers_key_and_disabled():
    cfg = config_from_dict(
        {"servers": {"a": {"command": "x"}, "b": {"command": "y", "disabled": True}}}, source="vscode.json", environ=ENV
    )
    assert cfg.names() == ["a"]
    assert cfg.notes == ("b: disabled in vscode.json",)


def _write(path, servers):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def test_precedence_user_then_project_then_explicit(tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "project"
    env = {**ENV, "DEFERCHAT_HOME": str(home)}
    user = _write(
        home / "mcp.json", {"a": {"command": "user-a"}, "b": {"command": "user-b"}, "u": {"command": "user-only"}}
    )
    proj = _write(project / ".mcp.json", {"b": {"command": "project-b"}, "c": {"command": "project-c"}})
    one = _write(tmp_path / "one.json", {"c": {"command": "one-c"}, "d": {"command": "one-d"}})
    two = _write(tmp_path / "two.json", {"d": {"command": "two-d"}})

    # Until the project file is approved it replaces nothing of the user's, and its own server waits.
    held = load_mcp_config(cwd=project, environ=env)
    assert {s.name: (s.command, s.needs_approval is not None) for s in held.servers} == {
        "a": ("user-a", False),
        "b": ("user-b", False),
        "c": ("project-c", True),
        "u": ("user-only", False),
    }
    from core.mcp.approval import approve_config

    approve_config(proj, environ=env)
    cfg = load_mcp_config([one, two], cwd=project, environ=env)
    assert {s.name: s.command for s in cfg.servers} == {
        "a": "user-a",
        "b": "project-b",
        "c": "one-c",
        "d": "two-d",
        "u": "user-only",
    }
    assert cfg.sources == (str(user), str(proj), str(one), str(two))
    assert f"b: {proj} replaces {user}" in cfg.notes
    assert f"d: {two} replaces {one}" in cfg.notes

    strict = load_mcp_config([one], cwd=project, environ=env, strict=True)
    assert strict.names() == ["c", "d"]

    # No files at all: no servers, no error. A missing explicit file is an error.
    assert load_mcp_config(cwd=tmp_path / "nowhere", environ={"DEFERCHAT_HOME": str(tmp_path / "none")}).servers == ()
    with pytest.raises(McpConfigError):
        load_mcp_config([tmp_path / "missing.json"], cwd=project, environ=env)


def test_user_config_path():
    assert str(user_config_path({"DEFERCHAT_HOME": "/d"})) == "/d/mcp.json"
    assert str(user_config_path({"XDG_CONFIG_HOME": "/x", "HOME": "/h"})) == "/x/deferchat/mcp.json"
    assert str(user_config_path({"HOME": "/h"})) == "/h/.config/deferchat/mcp.json"


def test_import_is_cheap():
    import subprocess
    import sys

    code = (
        "import sys; import core.mcp, core.mcp.config, core.mcp.client, core.mcp.discovery, core.demo; "
        "heavy = [m for m in ('mcp', 'mcp_types', 'anyio', 'httpx2', 'textual') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
