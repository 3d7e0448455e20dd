"""Lumina's MCP server at /mcp, from outside: a real server over TCP (one per backend), the
``mcp`` package's streamable-HTTP client. Every tool and the conversation resource; the
refusals (no key, a wrong key, another owner's ids or session, a foreign Origin or Host);
a memory added over MCP on the REST list with its provenance and in the next answer's
context; a logged exchange searchable and read for memories."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import BACKENDS
from tests.keyed_server import keyed_server
from tests.server import AppServer

pytestmark = pytest.mark.slow

TOOLS = {
    "search_conversations",
    "read_conversation",
    "list_conversations",
    "remember",
    "search_memories",
    "update_memory",
    "forget",
    "log_exchange",
}
MISSING = "00000000-0000-4000-8000-000000000000"
INIT = {  # an initialize request, as a client without the SDK sends it
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, _databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    workdir = tmp_path_factory.mktemp(f"mcp-{request.param}")
    with keyed_server(_databases(request.param), workdir) as up:
        yield up


@asynccontextmanager
async def mcp_session(
    server: AppServer, key: str | None, *, client: str = "pytest-agent"
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=60)) as http,
        streamable_http_client(server.url + "/mcp", http_client=http) as (read, write, *_),
        ClientSession(
            read, write, client_info=types.Implementation(name=client, version="1.0")
        ) as session,
    ):
        await session.initialize()
        yield session


def rest(server: AppServer, who: str) -> httpx.Client:
    return httpx.Client(
        base_url=server.url, headers={"Authorization": f"Bearer key-{who}"}, timeout=30
    )


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result
    text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
    return text


async def test_tools_are_listed_with_schemas_and_descriptions(server: AppServer) -> None:
    async with mcp_session(server, "key-alice") as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        templates = (await session.list_resource_templates()).resource_templates
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and "\n" not in tool.description
        assert tool.input_schema["type"] == "object"
    assert tools["search_conversations"].input_schema["required"] == ["query"]
    assert tools["log_exchange"].input_schema["required"] == ["agent", "user", "assistant"]
    assert tools["forget"].input_schema["properties"]["id"]["type"] == "integer"
    assert [t.uri_template for t in templates] == ["lumina://conversations/{uuid}"]


async def test_every_tool_and_the_resource(server: AppServer) -> None:
    word = "zanzibar" + secrets.token_hex(2)
    async with mcp_session(server, "key-alice") as session:
        logged = await call(
            session,
            "log_exchange",
            agent="assistant",
            user=f"Which port does the {word} service use?",
            assistant=f"The {word} service listens on port 8443.",
        )
        conv = logged["conversationId"]
        assert logged["seqs"] == [1, 2]
        again = await call(
            session,
            "log_exchange",
            agent="assistant",
            conversation_id=conv,
            user="And its timeout?",
            assistant="Thirty seconds.",
        )
        assert again == {"conversationId": conv, "seqs": [3, 4]}

        listed = await call(session, "list_conversations", agent="assistant", limit=5)
        assert conv in [c["conversationId"] for c in listed["conversations"]]
        page = await call(session, "list_conversations", limit=1)
        assert len(page["conversations"]) == 1

        read = await call(session, "read_conversation", conversation_id=conv)
        assert [m["role"] for m in read["messages"]] == ["user", "assistant"] * 2
        assert read["messages"][1]["content"] == f"The {word} service listens on port 8443."
        around = await call(
            session, "read_conversation", conversation_id=conv, around_seq=3, limit=2
        )
        assert [m["seq"] for m in around["messages"]] == [2, 3]

        hits = (await call(session, "search_conversations", query=f"{word} port"))["hits"]
        assert hits and hits[0]["conversationId"] == conv
        assert {"title", "date", "snippet", "seq"} <= set(hits[0])

        added = await call(session, "remember", text=f"Prefers {word} tea")
        memory = added["memory"]
        assert added["new"] and memory["origin"] == "added over MCP by pytest-agent"
        found = (await call(session, "search_memories", query=f"{word} tea"))["memories"]
        assert found[0]["id"] == memory["id"]
        edited = await call(
            session, "update_memory", id=memory["id"], text=f"Prefers {word} coffee"
        )
        assert edited["memory"]["text"] == f"Prefers {word} coffee"
        assert await call(session, "forget", id=memory["id"]) == {"forgotten": memory["id"]}
        gone = (await call(session, "search_memories", query=f"{word} coffee"))["memories"]
        assert memory["id"] not in [m["id"] for m in gone]

        resource = await session.read_resource(f"lumina://conversations/{conv}")
        text = resource.contents[0]
        assert isinstance(text, types.TextResourceContents)
        assert text.mime_type == "text/markdown"
        assert f"The {word} service listens on port 8443." in text.text

    with rest(server, "alice") as http:  # the same rows the REST API serves
        messages = http.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
        assert [m["content"] for m in messages][2:] == ["And its timeout?", "Thirty seconds."]


async def test_bad_input_is_a_tool_error(server: AppServer) -> None:
    async with mcp_session(server, "key-alice") as session:
        assert "not found" in await refused(session, "read_conversation", conversation_id="nope")
        assert await refused(session, "list_conversations", limit=0)
        assert await refused(session, "search_conversations", query="x" * 5000)
        assert "not found" in await refused(
            session, "log_exchange", agent="no-such-agent", user="hi", assistant="yo"
        )
        assert await refused(session, "log_exchange", agent="assistant", user="", assistant="x")
        too_long = await refused(
            session, "log_exchange", agent="assistant", user="x" * 40_000, assistant="y"
        )
        assert "LUMINA_MAX_TASK_CHARS" in too_long
        assert await refused(session, "remember", text="x" * 501)
        assert "not found" in await refused(session, "forget", id=987654321)
        assert await refused(session, "list_conversations", cursor="garbage")
        # still serving after all that
        assert "conversations" in await call(session, "list_conversations")


async def test_other_owners_ids_are_not_found(server: AppServer) -> None:
    async with mcp_session(server, "key-alice") as alice:
        conv = (
            await call(alice, "log_exchange", agent="assistant", user="secret plan", assistant="ok")
        )["conversationId"]
        memory = (await call(alice, "remember", text="Alice's locker code is 4711"))["memory"]
    async with mcp_session(server, "key-bob") as bob:
        assert "not found" in await refused(bob, "read_conversation", conversation_id=conv)
        assert "not found" in await refused(
            bob, "log_exchange", conversation_id=conv, agent="assistant", user="x", assistant="y"
        )
        assert "not found" in await refused(bob, "update_memory", id=memory["id"], text="mine")
        assert "not found" in await refused(bob, "forget", id=memory["id"])
        listed = await call(bob, "list_conversations")
        assert conv not in [c["conversationId"] for c in listed["conversations"]]
        assert (await call(bob, "search_conversations", query="secret plan"))["hits"] == []
        assert (await call(bob, "search_memories", query="locker code"))["memories"] == []
        with pytest.raises(Exception, match="not found"):
            await bob.read_resource(f"lumina://conversations/{conv}")
        with pytest.raises(Exception, match="not found"):
            await bob.read_resource(f"lumina://conversations/{MISSING}")
    with rest(server, "alice") as http:  # untouched
        assert http.get(f"/api/v1/memories/{memory['id']}").json()["text"] == memory["text"]


def test_without_a_key_or_with_a_wrong_one_no_session_opens(server: AppServer) -> None:
    accept = {"Accept": "application/json, text/event-stream"}
    for headers in ({}, {"Authorization": "Bearer key-mallory"}, {"Authorization": "Basic x"}):
        resp = httpx.post(server.url + "/mcp", json=INIT, headers={**accept, **headers})
        assert resp.status_code == 401, resp.text
        assert resp.json()["error"]["code"] == "unauthorized"
        assert "mcp-session-id" not in resp.headers
    ok = httpx.post(
        server.url + "/mcp", json=INIT, headers={**accept, "Authorization": "Bearer key-alice"}
    )
    assert ok.status_code == 200 and ok.headers["mcp-session-id"]


def test_a_session_is_the_owners_who_opened_it(server: AppServer) -> None:
    """Bob presenting Alice's session id gets no session (the SDK's 404), not her tools."""
    accept = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    opened = httpx.post(
        server.url + "/mcp", json=INIT, headers={**accept, "Authorization": "Bearer key-alice"}
    )
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    hijack = httpx.post(
        server.url + "/mcp",
        json=listing,
        headers={**accept, "Authorization": "Bearer key-bob", "Mcp-Session-Id": session},
    )
    assert hijack.status_code == 404
    assert "search_conversations" not in hijack.text


def test_foreign_origin_and_host_are_refused(server: AppServer) -> None:
    """A page on another site (or a rebound DNS name) cannot reach /mcp through a browser
    on this machine, even with a key."""
    headers = {"Authorization": "Bearer key-alice", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    evil_origin = httpx.post(
        server.url + "/mcp", json=body, headers={**headers, "Origin": "https://evil.example"}
    )
    assert evil_origin.status_code == 403, evil_origin.text
    evil_host = httpx.post(
        server.url + "/mcp", json=body, headers={**headers, "Host": "evil.example"}
    )
    assert evil_host.status_code in (400, 403, 421), evil_host.text


async def test_a_memory_added_over_mcp_is_on_the_list_and_in_the_next_answer(
    server: AppServer,
) -> None:
    fact = f"The user's cat is called Mochi{secrets.token_hex(2)}"
    async with mcp_session(server, "key-alice", client="Claude Code") as session:
        memory = (await call(session, "remember", text=fact, agent="assistant"))["memory"]
    with rest(server, "alice") as http:
        items = http.get("/api/v1/memories", params={"agentId": "assistant"}).json()["items"]
        mine = next(m for m in items if m["id"] == memory["id"])
        assert mine["origin"] == "added over MCP by Claude Code"
        assert mine["text"] == fact
        run = http.post(
            "/api/v1/agents/assistant/execute/sync", json={"task": "What is my cat called?"}
        ).json()
        context = http.get(f"/api/v1/runs/{run['runId']}/context").json()
        assert memory["id"] in context["memories"]
        assert fact in json.dumps(context["messages"])
    with rest(server, "bob") as http:  # not Bob's
        assert http.get(f"/api/v1/memories/{memory['id']}").status_code == 404


async def test_a_logged_exchange_feeds_memory_extraction(server: AppServer) -> None:
    city = "Ljubljana" if secrets.randbits(1) else "Tallinn"
    async with mcp_session(server, "key-bob") as session:
        logged = await call(
            session,
            "log_exchange",
            agent="assistant",
            user=f"I live in {city}.",
            assistant="Noted.",
        )
    conv = logged["conversationId"]
    with rest(server, "bob") as http:
        deadline = time.monotonic() + 20
        learnt: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not learnt:
            items = http.get("/api/v1/memories").json()["items"]
            learnt = [m for m in items if m["conversationId"] == conv]
            time.sleep(0.2)  # noqa: ASYNC251 - a plain poll of the REST API
        assert learnt and city in learnt[0]["text"]
        assert learnt[0]["origin"] is None  # it came from the conversation, which is linked


@pytest.fixture(scope="module")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """Local mode: no keys, loopback callers only (SQLite)."""
    env = {"LUMINA_API_KEYS": "", "LUMINA_REDIS_URL": "", "LUMINA_DEMO_DELAY_MS": "0"}
    up = AppServer(tmp_path_factory.mktemp("mcp-local"), backend_only=True, env=env)
    up.start()
    try:
        yield up
    finally:
        up.stop()


async def test_local_mode_answers_loopback_without_a_key(local_server: AppServer) -> None:
    async with mcp_session(local_server, None, client="Cursor") as session:
        memory = (await call(session, "remember", text="Works from Porto"))["memory"]
        logged = await call(session, "log_exchange", agent="assistant", user="hi", assistant="yo")
    assert memory["origin"] == "added over MCP by Cursor"
    async with httpx.AsyncClient(base_url=local_server.url, timeout=30) as http:
        items = (await http.get("/api/v1/memories")).json()["items"]
        listed = (await http.get("/api/v1/conversations")).json()["items"]
    assert [m["origin"] for m in items if m["id"] == memory["id"]] == [memory["origin"]]
    assert logged["conversationId"] in [c["uuid"] for c in listed]
