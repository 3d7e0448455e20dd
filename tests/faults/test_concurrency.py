"""Concurrency through the API (in-process app, real SQL + Redis).

- 50 sends race for ONE conversation, through all four send routes: exactly one starts a
  run, the 49 others get 409 naming that run, only one generation reaches the model, and
  the conversation holds that one turn (seqs 1, 2) and carries on gaplessly afterwards.
  On SQLite and on PostgreSQL.
- 200 conversations talk at once (two turns each, the second quoting the first): every
  stored message and every answer belongs to its own conversation, no 5xx. Both backends.
  (This one also caught the orphan sweep closing a run still being accepted: an answer
  stored ``interrupted`` and empty, now and then, on a loaded machine.)
"""

from __future__ import annotations

import asyncio
import random
import re
import secrets
import time

import httpx
import pytest

from tests.api.helpers import error_of, messages, new_conversation, parse_sse, wait_run

SENDERS = 50
CONVERSATIONS = 200


@pytest.fixture(params=["sqlite", "postgresql"])
def backend_url(request: pytest.FixtureRequest, _databases) -> str:
    database = _databases(request.param)
    database.truncate()
    return database.url


def send(api: httpx.AsyncClient, index: int, conv: str):
    """Sender ``index`` through one of the four routes that start a run."""
    task = f"sender {index}"
    route = index % 4
    if route == 0:
        body = {"task": task, "conversationId": conv}
        return api.post("/api/v1/agents/tester/execute", json=body)
    if route == 1:
        return api.post(
            "/api/v1/agents/tester/execute/sync", json={"task": task, "conversationId": conv}
        )
    if route == 2:
        return api.post(
            "/api/v1/agents/tester/execute/stream", params={"task": task, "conversationId": conv}
        )
    return api.post("/api/agent/tester/chat", json={"message": task, "conversationId": conv})


def run_id_of(resp: httpx.Response) -> str:
    """The run a successful send started, whichever route it went through."""
    if resp.headers["content-type"].startswith("text/event-stream"):
        return parse_sse(resp.content)[0].json["runId"]
    return resp.json()["runId"]


async def test_fifty_simultaneous_sends_to_one_conversation_start_one_run(
    api_factory, fake_llm, backend_url
) -> None:
    # 5 chunks, 0.3 s apart: the winner's run is still going when the 49 others arrive.
    fake_llm.script.delay = 0.3
    _services, api = await api_factory(database_url=backend_url)
    conv = (await new_conversation(api, agent="tester"))["uuid"]

    order = random.sample(range(SENDERS), SENDERS)  # any route may be the one that wins
    started = time.monotonic()
    replies = await asyncio.gather(*(send(api, i, conv) for i in order))
    took = time.monotonic() - started
    responses = [reply for _, reply in sorted(zip(order, replies, strict=True))]

    winners = [(i, r) for i, r in enumerate(responses) if r.status_code in (200, 202)]
    losers = [r for r in responses if r.status_code == 409]
    others = [(r.status_code, r.text) for r in responses if r.status_code not in (200, 202, 409)]
    assert not others, others
    assert len(winners) == 1, [(i, r.status_code) for i, r in winners]
    assert len(losers) == SENDERS - 1
    index, winner = winners[0]
    run_id = run_id_of(winner)
    for resp in losers:
        error = error_of(resp, 409)
        assert error["code"] == "conversation_busy"
        assert error["runId"] == run_id

    run = await wait_run(api, run_id)
    assert run["status"] == "complete" and run["conversationId"] == conv
    assert len(fake_llm.requests) == 1, "one generation only"
    items = await messages(api, conv)
    assert [(m["seq"], m["role"], m["content"], m["status"]) for m in items] == [
        (1, "USER", f"sender {index}", "complete"),
        (2, "ASSISTANT", "Hello from the fake LLM.", "complete"),
    ]
    assert items[0]["turnId"] == items[1]["turnId"]
    info = (await api.get(f"/api/v1/conversations/{conv}")).json()
    assert (info["lastSeq"], info["messageCount"], info["status"]) == (2, 2, "completed")

    # The slot was released and no seq was taken by the losers: the next turn is 3, 4.
    fake_llm.script.delay = 0
    again = await api.post(
        "/api/v1/agents/tester/execute/sync", json={"task": "after", "conversationId": conv}
    )
    assert again.status_code == 200, again.text
    assert [m["seq"] for m in await messages(api, conv)] == [1, 2, 3, 4]
    routes = ["execute", "execute/sync", "execute/stream", "chat"]
    print(f"50 sends: 1 run ({routes[index % 4]}), 49x409, all answered in {took:.2f}s")


TOKEN = re.compile(r"tok[0-9a-f]{12}")


@pytest.mark.slow
async def test_two_hundred_conversations_at_once_do_not_cross_talk(
    api_factory, backend_url
) -> None:
    _services, api = await api_factory(
        database_url=backend_url, demo_delay_ms=0, max_active_runs_per_owner=CONVERSATIONS
    )
    tokens = [(f"tok{secrets.token_hex(6)}", f"tok{secrets.token_hex(6)}") for _ in range(200)]

    async def talk(first: str, second: str) -> tuple[str, list[httpx.Response]]:
        one = await api.post("/api/v1/agents/demo/execute/sync", json={"task": f"say {first}"})
        if one.status_code != 200:
            return "", [one]
        conv = one.json()["conversationId"]
        two = await api.post(
            "/api/v1/agents/demo/execute/sync",
            json={"task": f"say {second}", "conversationId": conv},
        )
        return conv, [one, two]

    started = time.monotonic()
    results = await asyncio.gather(*(talk(a, b) for a, b in tokens))
    took = time.monotonic() - started

    statuses = [r.status_code for _conv, resps in results for r in resps]
    assert not [s for s in statuses if s >= 500], "server errors"
    assert statuses == [200] * (2 * CONVERSATIONS), sorted(set(statuses))
    convs = [conv for conv, _ in results]
    assert len(set(convs)) == CONVERSATIONS

    for (conv, (one, two)), (first, second) in zip(results, tokens, strict=True):
        assert one.json()["conversationId"] == two.json()["conversationId"] == conv
        assert one.json()["status"] == two.json()["status"] == "complete"
        assert set(TOKEN.findall(one.json()["answer"])) == {first}
        # The second answer quotes both: the history it saw was this conversation's own.
        assert TOKEN.findall(two.json()["answer"]) == [first, second]
        items = await messages(api, conv)
        assert [m["seq"] for m in items] == [1, 2, 3, 4]
        assert [m["content"] for m in items if m["role"] == "USER"] == [
            f"say {first}",
            f"say {second}",
        ]
        assert {t for m in items for t in TOKEN.findall(m["content"])} == {first, second}
        assert all(m["status"] == "complete" for m in items), [
            (m["seq"], m["role"], m["status"], m["content"][-30:]) for m in items
        ]
    print(f"{CONVERSATIONS} conversations x 2 turns in parallel: {took:.1f}s, no cross-talk")
