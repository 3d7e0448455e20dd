"""Codex CLI (from npm, as tests/api/test_responses_codex.py installs it) keeps a memory in
Lumina through Lumina's MCP server (#46): its own MCP client, configured the way docs/MCP.md
says (``[mcp_servers.lumina]`` with ``url`` and ``bearer_token_env_var``), calls
``remember`` when the model (a stand-in behind a Lumina agent) asks for it; the memory is
then the key owner's, with Codex named as where it came from, and no one else's."""

# ruff: noqa: F811  (the fixtures imported from the Responses tests are test parameters)
from __future__ import annotations

import json
from pathlib import Path

import pytest

# Codex from npm, the stand-in model and a server with an "echo" agent on it: the fixtures
# the Responses tests run Codex with, shared rather than written again.
from tests.api.test_responses_codex import (  # noqa: F401 - fixtures
    KEY,
    _api,
    _config,
    _run,
    codex,
    fake,
    server,
)
from tests.fake_llm import Call, FakeLLM, Reply, Script
from tests.server import AppServer

pytestmark = pytest.mark.slow

FACT = "The user deploys the dashboard on Fly.io."


def _remember_tool(request: dict) -> str | None:
    """The name Codex gave Lumina's ``remember`` among the tools it sent the model."""
    names = [tool["function"]["name"] for tool in request.get("tools", [])]
    found = [name for name in names if name.endswith("remember") and "lumina" in name]
    return found[0] if found else None


def test_codex_keeps_a_memory_through_luminas_mcp_server(
    codex: Path,
    server: AppServer,
    fake: FakeLLM,
    tmp_path: Path,
) -> None:
    home, work = tmp_path / "codex-home", tmp_path / "work"
    work.mkdir()
    seen: list[str | None] = []

    def respond(request: dict) -> Reply:
        if any(m.get("role") == "tool" for m in request.get("messages", [])):
            return Reply(chunks=["Noted in Lumina."])
        name = _remember_tool(request)
        seen.append(name)
        if name is None:
            return Reply(chunks=["no Lumina tool was offered"])
        return Reply(calls=[Call("call_mem1", name, json.dumps({"text": FACT}))])

    fake.script = Script(respond=respond)
    _config(home, server.url, model="echo", sandbox="read-only")
    with (home / "config.toml").open("a") as config:
        config.write(
            "\n[mcp_servers.lumina]\n"
            f'url = "{server.url}/mcp"\n'
            'bearer_token_env_var = "LUMINA_API_KEY"\n'
            "required = true\n"
            "startup_timeout_sec = 30\n"
        )
    try:
        out = _run(codex, home, work, "Remember that I deploy the dashboard on Fly.io.")
    finally:
        fake.script = Script()
    assert seen and seen[0], f"Codex offered the model no Lumina tool: {fake.requests[:1]}"
    assert "Noted in Lumina." in out, out[-2000:]
    mine = _api(server, "/api/v1/memories").json()["items"]
    kept = [m for m in mine if m["text"] == FACT]
    said_back = [m for r in fake.requests for m in r["messages"] if m.get("role") == "tool"]
    assert kept, (mine, said_back)  # what Codex answered the call with, if it did not run it
    assert kept[0]["origin"].startswith("added over MCP by "), kept[0]
    assert "codex" in kept[0]["origin"].lower(), kept[0]
    assert all(
        m["text"] != FACT for m in _api(server, "/api/v1/memories", key="key-bob").json()["items"]
    )
