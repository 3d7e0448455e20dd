"""Robustness found on the way (issue #12): ids checked to their very end, Last-Event-ID
parsed strictly and bounded on both replay paths, idempotency claims that outlive a crash,
and a 413 shaped like every other error."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx
import pytest
import sqlalchemy as sa

from lumina_app.agents.definitions.registry import is_valid_agent_id
from lumina_app.api.errors import error_response
from lumina_app.composition import open_services
from lumina_app.domain import utcnow
from lumina_app.storage.sql.models import idempotency, runs
from tests.api.helpers import assert_sse_response, error_of, new_conversation
from tests.conftest import BACKENDS, make_database, write_agent
from tests.server import AppServer
from tests.waits import wait_until, wait_until_sync

# -- ids end where the id ends -----------------------------------------------------------


@pytest.mark.parametrize("agent_id", ["demo\n", "demo\r\n", "\ndemo", "de\nmo"])
def test_an_agent_id_with_a_newline_is_not_an_agent_id(agent_id) -> None:
    assert is_valid_agent_id("demo")
    assert not is_valid_agent_id(agent_id)


async def test_an_agent_folder_named_with_a_trailing_newline_is_not_served(
    api_factory, data_dir
) -> None:
    """``$`` also matches before a final newline: a folder ``demo\\n`` (say, unpacked from
    a tarball) was listed, served and given conversations under that id."""
    write_agent(data_dir / "agents", "demo\n", {"name": "Newline"})
    _services, api = await api_factory()
    assert [a["id"] for a in (await api.get("/api/agent/list")).json()] == ["demo", "tester"]
    error_of(await api.get("/api/agent/demo%0A/info"), 404)
    error_of(await api.get("/api/agent/demo%0A/conversations"), 404)
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo\n"})
    error_of(resp, 404)
    resp = await api.post("/api/agent/demo%0A/chat", json={"message": "hi"})
    error_of(resp, 404)
    assert (await api.get("/api/v1/conversations")).json()["items"] == []


# -- Last-Event-ID: strict, bounded, prompt --------------------------------------------

BEYOND = [
    str(2**64 - 1),  # Redis's largest stream id: XREAD from it blocked until the key expired
    str(2**64),  # no longer a stream id: XREAD failed with a traceback mid-stream
    "9" * 20,  # the longest accepted
]
MALFORMED = ["1_0", "+3", "-1", "3.0", "0x10", "abc", "1 2", "9" * 21, "١٠"]


async def finished_run(api, agent: str = "tester") -> tuple[str, bytes]:
    resp = await api.post(f"/api/v1/agents/{agent}/execute/stream", params={"task": "hi"})
    events = assert_sse_response(resp)
    return events[0].json["runId"], resp.content


@pytest.mark.parametrize("value", MALFORMED)
async def test_a_malformed_last_event_id_is_422(api, value) -> None:
    run_id, _ = await finished_run(api)
    url = f"/api/v1/runs/{run_id}/stream"
    if value.isascii():
        error = error_of(await api.get(url, headers={"Last-Event-ID": value}), 422)
        assert "Last-Event-ID" in error["message"]
    error = error_of(await api.get(url, params={"lastEventId": value}), 422)
    assert "Last-Event-ID" in error["message"]
    both = await api.get(url, params={"lastEventId": value}, headers={"Last-Event-ID": "1"})
    error_of(both, 422)  # the header wins, but what was sent must be an id either way


async def test_last_event_id_is_read_as_written(api) -> None:
    """``int()`` read ``1_0`` as 10; leading zeros are still plain digits."""
    run_id, whole = await finished_run(api)
    url = f"/api/v1/runs/{run_id}/stream"
    assert (await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "0"})).content
    resumed = await api.get(url, params={"format": "v1"}, headers={"Last-Event-ID": "001"})
    assert resumed.status_code == 200 and resumed.content == whole.split(b"\n\n", 1)[1]
    for empty in ({"Last-Event-ID": ""}, {}):  # no id: the whole stream
        resp = await api.get(url, params={"format": "v1"}, headers=empty)
        assert resp.content == whole


@pytest.mark.parametrize("value", BEYOND)
async def test_last_event_id_beyond_a_finished_in_process_run_ends_at_once(api, value) -> None:
    run_id, _ = await finished_run(api)
    async with asyncio.timeout(5):
        resp = await api.get(f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": value})
    assert resp.status_code == 200 and resp.content == b""


@pytest.fixture
async def published(settings_factory, fake_llm):
    """A run that finished on another instance: here it is only in Redis Streams."""
    fake_llm.script.chunks = ["a", "b", "c"]
    one = await open_services(settings_factory())
    try:
        run = await one.chat.start_run(agent_id="tester", message="hello")
        seen = [e async for e in one.chat.follow(run)]
        await one.events.flush()
    finally:
        await one.close()
    return run.run_id, seen


@pytest.mark.parametrize("value", ["last", *BEYOND])
async def test_last_event_id_beyond_a_finished_run_read_from_redis_ends_at_once(
    api_factory, published, value
) -> None:
    """Also the last id itself: what an EventSource sends when it reconnects after the end."""
    run_id, seen = published
    services, api = await api_factory(run_buffer_ttl_seconds=300)
    assert not await services.events.local.known(run_id)  # read from Redis, not this process
    value = str(seen[-1].id) if value == "last" else value
    async with asyncio.timeout(5):  # not the buffer's TTL
        resp = await api.get(f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": value})
    assert resp.status_code == 200 and resp.content == b""
    resumed = await api.get(
        f"/api/v1/runs/{run_id}/stream", headers={"Last-Event-ID": str(seen[1].id)}
    )
    assert [e.id for e in assert_sse_response(resumed)] == [e.id for e in seen[2:]]


async def test_last_event_id_beyond_a_live_run_read_from_redis_ends_with_the_run(
    settings_factory, fake_llm
) -> None:
    """A live run's stream followed with an id it has not reached: nothing comes, and the
    stream ends as soon as the run does (not at the next block timeout, not at the TTL)."""
    fake_llm.script.chunks = [f"p{i} " for i in range(10)]
    fake_llm.script.delay = 0.05
    one = await open_services(settings_factory())
    two = await open_services(settings_factory(), recover=False)
    two.events.block_ms = 5000
    try:
        run = await one.chat.start_run(agent_id="tester", message="hello")
        await wait_until(lambda: run.next_event_id > 2, "the run's first events")
        await one.events.flush()
        stream = await two.chat.open_stream(run.run_id, after=2**64 + 5, owner="")
        follower = asyncio.ensure_future(anext(stream, "ended"))
        await run.done.wait()
        await one.events.flush()
        ended = asyncio.get_running_loop().time()
        async with asyncio.timeout(2):
            assert await follower == "ended"
        assert asyncio.get_running_loop().time() - ended < 1
    finally:
        await one.close()
        await two.close()


# -- one error shape, 413 included --------------------------------------------------------


async def chunks(data: bytes, size: int = 300):
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
async def test_a_413_is_rendered_like_every_other_error(api_factory, streamed) -> None:
    """The declared-length 413 was written by hand: ``{"error": {"code": ...}}`` with
    json.dumps's spaces and no content-length, unlike every other error."""
    _services, api = await api_factory(max_body_bytes=1024)
    body = json.dumps({"agentId": "demo", "title": "x" * 2000}).encode()
    too_large = await api.post(
        "/api/v1/conversations",
        content=chunks(body) if streamed else body,
        headers={"Content-Type": "application/json"},
    )
    error = error_of(too_large, 413)
    assert error == {"code": "too_large", "message": "request body exceeds 1024 bytes"}
    expected = error_response(413, "too_large", error["message"])
    assert too_large.content == expected.body  # compact JSON, as JSONResponse renders it
    assert too_large.headers["content-length"] == str(len(expected.body))
    if not streamed:  # refused before reading: the unread body cannot be drained
        assert too_large.headers["connection"] == "close"
    not_found = await api.get("/api/agent/nobody/info")
    invalid = await api.get("/api/v1/conversations", params={"limit": 0})
    for other, status in ((not_found, 404), (invalid, 422)):
        error_of(other, status)
        assert too_large.headers["content-type"] == other.headers["content-type"]
        assert other.content == error_response(status, **other.json()["error"]).body
    assert (await api.get("/api/v1/conversations")).json()["items"] == []


# -- Idempotency-Key: a claim outlives its request's process only for a lease ------------


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_key_whose_request_died_with_its_process_is_retried_after_the_lease(
    tmp_path, backend
) -> None:
    """kill -9 mid execute/sync left the claim in progress, and every retry was a 409
    "in progress" for ever. Now a retry after the lease runs the request, once."""
    database, cleanup = make_database(backend, tmp_path)
    server = AppServer(
        tmp_path / "server",
        backend_only=True,
        database_url=database.url,
        env={
            "LUMINA_REDIS_URL": "",
            "LUMINA_DEMO_DELAY_MS": "20",
            "LUMINA_FLUSH_INTERVAL_MS": "50",
            "LUMINA_IDEMPOTENCY_LEASE_SECONDS": "2",
        },
    )
    key = {"Idempotency-Key": "crash-1"}
    try:
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as client:
            conv = client.post("/api/v1/conversations", json={"agentId": "assistant"}).json()
            body = {"task": "a long answer please /long", "conversationId": conv["uuid"]}
            with ThreadPoolExecutor(1) as pool:
                first = pool.submit(
                    client.post, "/api/v1/agents/assistant/execute/sync", json=body, headers=key
                )
                wait_until_sync(
                    lambda: answer_text(client, conv["uuid"]), "the answer's first words", within=20
                )
                server.kill()  # mid-answer: no response recorded, no claim released
                with pytest.raises(httpx.TransportError):
                    first.result()
        assert claim_state(server.database_url) == [("crash-1", None, True)]

        server.extra_env["LUMINA_DEMO_DELAY_MS"] = "0"
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as client:
            started, refused = time.monotonic(), 0
            while True:
                retry = client.post("/api/v1/agents/assistant/execute/sync", json=body, headers=key)
                if retry.status_code != 409:
                    break
                assert retry.json()["error"]["code"] == "in_progress"
                assert time.monotonic() - started < 15, "the claim was never taken over"
                refused += 1
                time.sleep(0.2)
            assert retry.status_code == 200, retry.text
            assert retry.json()["status"] == "complete"
            again = client.post("/api/v1/agents/assistant/execute/sync", json=body, headers=key)
            assert again.status_code == 200 and again.json() == retry.json()
            items = client.get(f"/api/v1/conversations/{conv['uuid']}/messages").json()["items"]
            assert [(m["role"], m["status"]) for m in items] == [
                ("USER", "complete"),
                ("ASSISTANT", "interrupted"),  # the dead process's run, closed at start-up
                ("USER", "complete"),
                ("ASSISTANT", "complete"),  # the retry's run: the only one it started
            ]
            assert items[-1]["id"] == retry.json()["messageId"]
        assert claim_state(server.database_url) == [("crash-1", retry.json()["runId"], False)]
        assert run_statuses(server.database_url) == ["complete", "interrupted"]
    finally:
        server.kill()
        cleanup()


def answer_text(client: httpx.Client, conv: str) -> str:
    items = client.get(f"/api/v1/conversations/{conv}/messages").json()["items"]
    return items[-1]["content"] if items and items[-1]["role"] == "ASSISTANT" else ""


def _rows(url: str, query: sa.Select) -> list[sa.Row]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    engine.dispose()
    return rows


def claim_state(url: str) -> list[tuple[str, str | None, bool]]:
    """(key, the recorded response's runId, still held) of every idempotency record."""
    rows = _rows(url, sa.select(idempotency.c.key, idempotency.c.response, idempotency.c.alive_at))
    return [(r.key, (r.response or {}).get("runId"), r.alive_at is not None) for r in rows]


def run_statuses(url: str) -> list[str]:
    return sorted(r.status for r in _rows(url, sa.select(runs.c.status)))


async def test_of_retries_racing_for_a_stale_claim_exactly_one_wins(api_factory, database) -> None:
    services, _api = await api_factory(database_url=database.url)
    store = services.idempotency
    dead = await store.claim("o", "k", "f", lease=30)
    claimed = utcnow()
    assert dead is not None
    assert await store.claim("o", "k", "f", lease=30) is None  # held: not stale yet
    # Its holder renews no more (it died) until the claim is older than the racers' lease.
    # A lease of 1 s: a racer that started more than a lease after the winner may rightly
    # take over the winner's claim (a 0.2 s lease let a stall of a loaded CI machine do so).
    await wait_until(lambda: utcnow() - claimed > timedelta(seconds=1), "the claim to go stale")
    claims = await asyncio.gather(*(store.claim("o", "k", "f", lease=1.0) for _ in range(6)))
    winners = [c for c in claims if c is not None]
    assert len(winners) == 1
    assert await store.claim("o", "k", "other request", lease=0.01) is None  # still a 422
    # The dead holder, were it only stalled, can no longer renew, record or release.
    assert not await store.keep_alive(dead)
    await store.complete(dead, {"runId": "dead"})
    await store.release(dead)
    assert (await store.get("o", "k")).response is None
    assert await store.keep_alive(winners[0])
    await store.complete(winners[0], {"runId": "won"})
    await asyncio.sleep(0.05)  # the point: older than the lease below, and still not taken
    assert await store.claim("o", "k", "f", lease=0.01) is None  # done: never taken over
    assert (await store.get("o", "k")).response == {"runId": "won"}


async def test_a_live_request_keeps_its_key_past_the_lease(api_factory, database, fake_llm) -> None:
    """execute/sync may run for minutes: its claim is renewed while it runs, so a retry
    during a run several leases long is a 409, not a second run."""
    # 3 s: six leases of 0.5 s (a lease of 0.2 s left a loaded machine too little slack
    # between the renewals)
    lease = 0.5
    fake_llm.script.chunks = [f"w{i} " for i in range(30)]
    fake_llm.script.delay = 0.1
    _services, api = await api_factory(database_url=database.url, idempotency_lease_seconds=lease)
    body, key = {"task": "slow"}, {"Idempotency-Key": "live"}
    url = "/api/v1/agents/tester/execute/sync"
    loop = asyncio.get_running_loop()
    first = asyncio.ensure_future(api.post(url, json=body, headers=key))
    # the retries begin once the first run holds the key and reached the model: on a
    # loaded machine a retry sent 0.1 s after could claim the key before the first did
    # (it then ran the answer itself and no 409 was seen)
    await wait_until(lambda: fake_llm.requests or first.done(), "the first run at the model")
    started = loop.time()
    last_refused = started
    while not first.done():
        await asyncio.sleep(0.1)
        if not first.done():
            resp = await api.post(url, json=body, headers=key)
            if resp.status_code == 200:  # the first finished meanwhile: a replay
                break
            assert error_of(resp, 409)["code"] == "in_progress"
            last_refused = loop.time()
    assert last_refused - started > 4 * lease  # still held several leases after it began
    done = await first
    assert done.status_code == 200 and done.json()["answer"] == "".join(fake_llm.script.chunks)
    again = await api.post(url, json=body, headers=key)
    assert again.json() == done.json()
    conversations = (await api.get("/api/v1/conversations")).json()["items"]
    assert [c["messageCount"] for c in conversations] == [2]


async def test_keys_differing_only_in_case_are_two_keys(api_factory, database) -> None:
    """MariaDB's case- and accent-insensitive collation made ``AbC``, ``abc`` and ``abç``
    one key there: the second request got the first one's conversation."""
    _services, api = await api_factory(database_url=database.url)
    made = []
    for key in (b"AbC", b"abc", "abç".encode("latin-1")):  # header bytes are latin-1
        resp = await api.post(
            "/api/v1/conversations", json={"agentId": "demo"}, headers={"Idempotency-Key": key}
        )
        assert resp.status_code == 201, resp.text
        made.append(resp.json()["uuid"])
    assert len(set(made)) == 3


# -- page cursors: only what the API issues ---------------------------------------------


def cursor(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "raw",
    [
        "0001-01-01T00:00:00+14:00|1",  # before 0001-01-01 in UTC: OverflowError, a 500
        "9999-12-31T23:59:59-14:00|1",  # after 9999-12-31 in UTC: the same
        "2026-01-01T00:00:00+00:00|1_0",  # int() read these three as 10, 1 and 1
        "2026-01-01T00:00:00+00:00| 1",
        "2026-01-01T00:00:00+00:00|١",
    ],
)
async def test_a_cursor_the_api_cannot_have_issued_is_422(api_factory, database, raw) -> None:
    _services, api = await api_factory(database_url=database.url)
    await new_conversation(api)
    for path in ("/api/v1/conversations", "/api/agent/demo/conversations"):
        error = error_of(await api.get(path, params={"after": cursor(raw)}), 422)
        assert "cursor" in error["message"]
    edge = cursor("0001-01-01T00:00:00+00:00|1")  # the earliest time, in range: a page
    assert (await api.get("/api/v1/conversations", params={"after": edge})).json()["items"] == []
