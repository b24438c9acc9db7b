"""OpenAI Chat Completions and every OpenAI-compatible server (``core.providers.openai_chat``).

Same vendor as the Responses profile, so the same key, environment variables, hosts and model
families; but Chat Completions has no native tool search anywhere (``tool_search`` and
``defer_loading`` are Responses-only), so ``auto`` always gives it active-tools. The compatible
third parties and local servers it is pointed at are listed here only to name them in reasons.

Its first byte may take long: Chat Completions streams nothing at all while a reasoning model
thinks (OpenAI's, a minute and more at high effort; the Responses API sends keep-alive events
instead), and a local server (Ollama, llama.cpp) loads the model and reads the whole prompt
before its first chunk. Five minutes, where the other providers have one.
"""

from __future__ import annotations

from dataclasses import replace

from core.providers.profiles.base import DEFAULT_WAITS
from core.providers.profiles.openai_responses import OPENAI, WINDOWS

OPENAI_CHAT = replace(
    OPENAI,
    name="openai-chat",
    adapter="core.providers.openai_chat:OpenAIChatProvider",
    native_strategy=None,
    native_search="",
    model_support=(),
    waits=replace(DEFAULT_WAITS, first_byte=300.0),
    # OpenAI's own models by name; any other name (a compatible server's model) has the window its
    # server lists, or the one config.toml gives, else core.providers.window.DEFAULT_WINDOW
    windows=WINDOWS,
)

# Hosts (and host suffixes) known to speak a genuine provider's protocol without being it.
COMPAT_VENDORS: tuple[tuple[str, str], ...] = (
    ("deepseek.com", "DeepSeek"),
    ("moonshot.ai", "Moonshot"),
    ("moonshot.cn", "Moonshot"),
    ("openrouter.ai", "OpenRouter"),
    ("groq.com", "Groq"),
    ("together.xyz", "Together"),
    ("fireworks.ai", "Fireworks"),
    ("mistral.ai", "Mistral"),
    ("x.ai", "xAI"),
)
# Default ports of local OpenAI-compatible servers.
LOCAL_SERVER_PORTS: dict[int, str] = {11434: "Ollama", 8000: "vLLM", 8080: "llama.cpp", 1234: "LM Studio"}
LOCAL_HOSTS: frozenset[str] = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
