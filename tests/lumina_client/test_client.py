"""``Lumina`` and ``AsyncLumina`` against a real server: every method, the stream's typed
events, the typed errors (the server's code and message); the retry rule (only what is
safe to send twice) on a stand-in transport."""

from __future__ import annotations

import io
import secrets
import time
import zipfile

import httpx
import pytest
from lumina_client import (
    AsyncLumina,
    AuthenticationError,
    BadRequestError,
    ChunkEvent,
    DoneEvent,
    Lumina,
    LuminaConnectionError,
    NotFoundError,
    ServerError,
    SessionEvent,
)

from tests.conftest import free_port
from tests.server import AppServer

pytestmark = pytest.mark.slow


@pytest.fixture
def alice(server: AppServer):
    with Lumina(server.url, api_key="key-alice") as client:
        yield client


def test_conversations_created_listed_page_by_page_got_and_deleted(alice: Lumina) -> None:
    made = [alice.conversations.create("assistant", title=f"c{n}") for n in range(3)]
    assert made[0].agent_id == "assistant" and made[0].title == "c0"
    listed = [c.id for c in alice.conversations.list(agent="assistant", page_size=1)]
    assert {c.id for c in made} <= set(listed)
    assert len(listed) == len(set(listed))  # no page repeats one
    assert alice.conversations.get(made[1].id) == made[1]
    alice.conversations.delete(made[1].id)
    with pytest.raises(NotFoundError) as missing:
        alice.conversations.get(made[1].id)
    assert missing.value.status == 404 and missing.value.code == "not_found"
    assert made[1].id in missing.value.message


def test_messages_appended_without_a_model_and_paged(alice: Lumina) -> None:
    conv = alice.conversations.create("assistant")
    lines = [("user", f"q{n}") if n % 2 == 0 else ("assistant", f"a{n}") for n in range(7)]
    ids = alice.messages.append(conv.id, lines)
    assert len(ids) == 7
    stored = list(alice.messages.list(conv.id, page_size=2))
    assert [m.content for m in stored] == [text for _, text in lines]
    assert [m.seq for m in stored] == list(range(1, 8))
    assert [m.role for m in stored[:2]] == ["USER", "ASSISTANT"]
    assert [m.seq for m in alice.messages.list(conv.id, after=5)] == [6, 7]
    alice.messages.delete(conv.id, ids[0])
    assert next(m.content for m in alice.messages.list(conv.id)) == "a1"


def test_stream_yields_typed_events(alice: Lumina) -> None:
    events = list(alice.stream("assistant", "Hello there, how are you?"))
    session, *middle, done = events
    assert isinstance(session, SessionEvent) and session.run_id.startswith("run-")
    assert isinstance(done, DoneEvent) and done.status == "complete"
    chunks = [e for e in middle if isinstance(e, ChunkEvent)]
    assert chunks and all(e.event_id is not None for e in events)
    text = "".join(c.text for c in chunks)
    stored = list(alice.messages.list(session.conversation_id))
    assert stored[-1].id == done.message_id and stored[-1].content == text
    again = list(alice.stream("assistant", "And again?", session.conversation_id))
    assert isinstance(again[0], SessionEvent) and again[0].scenario in ("continue", "resume")


def test_runs_start_get_stop_context_and_execute(alice: Lumina) -> None:
    started = alice.runs.start("assistant", "Tell me something short.")
    deadline = time.monotonic() + 30
    run = alice.runs.get(started.run_id)
    while run.status == "running" and time.monotonic() < deadline:
        time.sleep(0.1)
        run = alice.runs.get(started.run_id)
    assert run.status == "complete" and run.content
    assert alice.runs.stop(started.run_id).status == "complete"  # already over: its state
    context = alice.runs.context(started.run_id)
    assert context.messages[-1] == {"role": "user", "content": "Tell me something short."}
    answer = alice.runs.execute("assistant", "One more?", started.conversation_id)
    assert answer.conversation_id == started.conversation_id and answer.answer


def test_recall_and_export(alice: Lumina) -> None:
    word = "quokka" + secrets.token_hex(2)
    conv = alice.conversations.create("assistant", title="export me")
    alice.messages.append(conv.id, [("user", f"Where do {word}s live?"), ("assistant", "Rottnest")])
    hits = alice.recall(word)
    assert hits and hits[0].conversation_id == conv.id and word in hits[0].snippet
    document = alice.export(conv.id)
    assert document["meta"]["conversationId"] == conv.id
    assert f"Where do {word}s live?" in alice.export(conv.id, "md")
    archive = zipfile.ZipFile(io.BytesIO(alice.export(conv.id, "archive")))
    assert any(name.endswith("meta.json") for name in archive.namelist())


def test_memories(alice: Lumina) -> None:
    fact = f"Plays the oboe {secrets.token_hex(2)}"
    added = alice.memories.add(fact, agent="assistant")
    assert added.text == fact and added.origin is None
    assert added.id in [m.id for m in alice.memories.list(agent="assistant")]
    assert alice.memories.search("oboe", agent="assistant")[0].id == added.id
    assert alice.memories.get(added.id) == added
    pinned = alice.memories.update(added.id, pinned=True)
    assert pinned.pinned and pinned.text == fact
    newer = alice.memories.update(added.id, text=fact + " and the flute", supersede=True)
    assert newer.id != added.id and alice.memories.get(added.id).status == "superseded"
    alice.memories.delete(newer.id)
    with pytest.raises(NotFoundError):
        alice.memories.get(newer.id)


def test_errors_are_typed_with_the_servers_code_and_message(server: AppServer) -> None:
    with (
        Lumina(server.url, api_key="wrong") as stranger,
        pytest.raises(AuthenticationError) as refused,
    ):
        stranger.conversations.create("assistant")
    assert refused.value.status == 401 and refused.value.code == "unauthorized"
    with Lumina(server.url, api_key="key-alice") as alice, Lumina(server.url, "key-bob") as bob:
        conv = alice.conversations.create("assistant")
        with pytest.raises(NotFoundError):  # another owner's id: not found
            bob.conversations.get(conv.id)
        with pytest.raises(NotFoundError):
            bob.messages.append(conv.id, [("user", "hi")])
        with pytest.raises(BadRequestError) as bad:
            alice.memories.add("x" * 501, agent="assistant")
        assert bad.value.status == 422 and "text" in bad.value.message
        with pytest.raises(NotFoundError) as agent:
            list(alice.stream("no-such-agent", "hi"))
        assert "no-such-agent" in agent.value.message
        with pytest.raises(ValueError):
            alice.messages.append(conv.id, [("tool", "x")])
    with (
        Lumina(f"http://127.0.0.1:{free_port()}", max_retries=1) as nowhere,
        pytest.raises(LuminaConnectionError),
    ):
        next(nowhere.conversations.list())


async def test_async_client(server: AppServer) -> None:
    async with AsyncLumina(server.url, api_key="key-alice") as alice:
        conv = await alice.conversations.create("assistant", title="async")
        await alice.messages.append(conv.id, [("user", "hi"), ("assistant", "hello")])
        assert [m.content async for m in alice.messages.list(conv.id, page_size=1)] == [
            "hi",
            "hello",
        ]
        assert conv.id in [c.id async for c in alice.conversations.list(page_size=2)]
        events = [e async for e in alice.stream("assistant", "Hello?", conv.id)]
        assert isinstance(events[0], SessionEvent) and isinstance(events[-1], DoneEvent)
        run = await alice.runs.get(events[0].run_id)
        assert run.message_id == events[-1].message_id
        context = await alice.runs.context(run.run_id)
        assert context.messages[-1]["content"] == "Hello?"
        memory = await alice.memories.add("Async fact about tea", agent="assistant")
        assert (await alice.memories.search("tea"))[0].id == memory.id
        await alice.memories.delete(memory.id)
        assert (await alice.export(conv.id))["meta"]["conversationId"] == conv.id
        assert await alice.recall("hello") is not None
        await alice.conversations.delete(conv.id)
        with pytest.raises(NotFoundError):
            await alice.conversations.get(conv.id)


# -- the retry rule ------------------------------------------------------------------------


def _counting(status: int) -> tuple[httpx.Client, list[str]]:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.method)
        body = {"error": {"code": "unavailable", "message": "try later"}}
        return httpx.Response(status, json=body)

    return httpx.Client(transport=httpx.MockTransport(answer)), seen


@pytest.mark.unit
def test_only_gets_are_retried_after_a_server_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lumina_client.client.backoff", lambda attempt: 0)
    http, seen = _counting(503)
    client = Lumina("http://lumina.test", http_client=http, max_retries=2)
    with pytest.raises(ServerError) as failed:
        client.conversations.get("00000000-0000-4000-8000-000000000000")
    assert seen == ["GET"] * 3 and failed.value.code == "unavailable"
    seen.clear()
    with pytest.raises(ServerError):
        client.memories.add("x", agent="assistant")
    assert seen == ["POST"]  # it may have been stored: never sent twice


@pytest.mark.unit
def test_a_request_that_never_connected_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lumina_client.client.backoff", lambda attempt: 0)
    tries: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        tries.append(request.method)
        if len(tries) < 3:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(201, json={"error": "not json we read"})

    http = httpx.Client(transport=httpx.MockTransport(refuse))
    client = Lumina("http://lumina.test", http_client=http, max_retries=2)
    with pytest.raises(Exception):  # noqa: B017 - the body is not a memory: parsing fails
        client.memories.add("x", agent="assistant")
    assert tries == ["POST"] * 3

    tries.clear()

    def reset(request: httpx.Request) -> httpx.Response:
        tries.append(request.method)
        raise httpx.ReadError("reset", request=request)

    client = Lumina(
        "http://lumina.test", http_client=httpx.Client(transport=httpx.MockTransport(reset))
    )
    with pytest.raises(LuminaConnectionError):
        client.memories.add("x", agent="assistant")
    assert tries == ["POST"]  # sent: the server may have acted on it
