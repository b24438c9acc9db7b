"""The README's own example reaches a local OpenAI-compatible server from a fresh home: the exact
commands and config.toml of *Use your own model* (vLLM), the server's port put in place of
8000, run by the real ``deferchat`` binary against the loopback streaming server (a process of
its own, listing two models as vLLM does: each with its ``max_model_len``): headless, and in the
app in tmux, where the model picker shows the server's two models."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import ROOT, subprocess_env
from tests.streaming_server import serve_process
from tests.tui.test_tmux_smoke import Tmux, deferchat_binary

ANSWER = "Hello from the loopback vLLM server."
SERVED = "Qwen/Qwen2.5-7B-Instruct"
OTHER = "Qwen/Qwen2.5-0.5B-Instruct"
SCRIPT = {
    "responses": [{"parts": [{"text": ANSWER}]}],
    "repeat": True,
    "models": [{"id": SERVED, "max_model_len": 32768}, {"id": OTHER, "max_model_len": 8192}],
}


def readme_example(title: str) -> tuple[list[str], str]:
    """The shell lines that run deferchat and the config.toml of one *Use your own model* example."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Use your own model", 1)[1]
    section = section.split(f"#### {title}\n", 1)[1]
    section = re.split(r"\n#{2,4} ", section, maxsplit=1)[0]
    shell = [b for b in re.findall(r"```sh\n(.*?)```", section, re.DOTALL)]
    (toml,) = re.findall(r"```toml\n(.*?)```", section, re.DOTALL)
    commands = [line for block in shell for line in block.splitlines() if line.startswith("deferchat")]
    return commands, toml


def on_port(text: str, port: int) -> str:
    assert "localhost:8000" in text
    return text.replace("localhost:8000", f"localhost:{port}")


def run(home: Path, line: str) -> subprocess.CompletedProcess[str]:
    args = shlex.split(line.split("  #", 1)[0])
    assert args[0] == "deferchat"
    return subprocess.run(
        [deferchat_binary(), *args[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        env=subprocess_env(home),
        cwd=ROOT,
    )


@pytest.fixture
def server(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    with serve_process(script, log=tmp_path / "server.log", timeout=300) as process:
        yield process


def test_the_readmes_vllm_example_headless_with_flags_and_with_config(tmp_path: Path, server) -> None:
    commands, toml = readme_example("vLLM")
    listing, ask, app = commands
    assert listing.startswith("deferchat models") and ask.startswith("deferchat ask") and app.startswith("deferchat --")

    home = tmp_path / "flags-home"  # fresh: no config, no key, nothing
    listed = run(home, on_port(listing, server.port))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].endswith("(base URL from --base-url) \u00b7 listed by the server")
    assert [line.split()[0] for line in lines[1:]] == sorted([SERVED, OTHER])
    assert [line.split() for line in lines[1:]] == [
        [OTHER, "8,192-token", "window"],
        [SERVED, "32,768-token", "window"],
    ]

    asked = run(home, on_port(ask, server.port))
    assert asked.returncode == 0, asked.stderr
    assert ANSWER in asked.stdout
    requests = [r for r in server.requests if r["wire"] == "openai-chat"]
    assert requests[-1]["body"]["model"] == SERVED
    assert requests[-1]["headers"]["authorization"] == "Bearer deferchat-no-key"  # no key needed, none made up

    home = tmp_path / "config-home"
    home.mkdir()
    (home / "config.toml").write_text(on_port(toml, server.port), encoding="utf-8")
    asked = run(home, 'deferchat ask "hello"')  # "With that config.toml, ... need no flags"
    assert asked.returncode == 0, asked.stderr
    assert ANSWER in asked.stdout
    listed = run(home, "deferchat models --provider openai-chat")
    assert listed.returncode == 0 and "(base URL from base_url in " in listed.stdout
    assert SERVED in listed.stdout and OTHER in listed.stdout


def test_the_readmes_vllm_example_in_the_app(tmp_path: Path, server) -> None:
    assert shutil.which("tmux"), "tmux is needed for this test (apt-get install tmux)"
    commands, _ = readme_example("vLLM")
    app = shlex.split(on_port(commands[2], server.port))
    home = tmp_path / "home"
    tmux = Tmux(f"deferchat-readme-{os.getpid()}", subprocess_env(home))
    tmux("-f", os.devnull, "new-session", "-d", "-s", "smoke", "-x", "120", "-y", "40", deferchat_binary(), *app[1:])
    try:
        tmux.wait_for(f"openai-chat/{SERVED}", "active-tools", timeout=60)
        tmux("send-keys", "-t", "smoke", "-l", "hello")
        tmux("send-keys", "-t", "smoke", "Enter")
        tmux.wait_for(ANSWER, timeout=30)
        tmux("send-keys", "-t", "smoke", "F10")
        screen = tmux.wait_for("Switch model", f"openai-chat/{OTHER}", "8,192 tokens", timeout=20)
        assert f"openai-chat/{SERVED}  32,768 tokens" in screen and f"openai-chat/{OTHER}  8,192 tokens" in screen
        assert "listed by the" in screen and "(profile)" not in screen
        tmux("send-keys", "-t", "smoke", "Escape")
        tmux.quit()
    finally:
        tmux("kill-server", check=False)
    listed = [json.loads(r) for r in run(home, "deferchat chats list --json").stdout.splitlines()]
    assert [(c["provider"], c["model"]) for c in listed] == [("openai-chat", SERVED)]
