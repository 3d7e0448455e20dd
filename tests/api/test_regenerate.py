"""Regenerate, on every backend (with real Redis): the last question answered again, the
old answer kept ``superseded`` and out of every window and context from then on, the
versions of an answer numbered; busy, empty and foreign conversations refused; after a
failed answer and a tool-using turn; superseded rows through the archive."""

from __future__ import annotations

import asyncio

import pytest

from lumina_app.composition import current
from lumina_app.domain import ImportOutcome, MessageStatus
from tests.api.helpers import (
    LiveStream,
    assert_sse_response,
    bearer,
    error_of,
    messages,
    new_conversation,
    say,
    wait_for_text,
    wait_run,
)
from tests.api.test_tools_api import tooled  # noqa: F401 - the agent with a calculator
from tests.fake_llm import Call, Reply
from tests.waits import wait_until

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")


@pytest.fixture
async def api_on(api_factory, database):
    _services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return client


async def two_turns(api, agent: str = "demo") -> str:
    conv = (await new_conversation(api, agent=agent, title="Trip", headers=ALICE))["uuid"]
    for text in ("first: Lisbon", "second: Porto"):
        await say(api, text, conv, agent=agent, headers=ALICE)
    return conv


async def regenerate(api, conv: str, status: int = 200, headers=ALICE, **kwargs):
    resp = await api.post(
        f"/api/v1/conversations/{conv}/regenerate",
        json={"stream": False},
        headers=headers,
        **kwargs,
    )
    assert resp.status_code == status, resp.text
    return resp.json()


async def sent_to_model(api, run_id: str) -> list[str]:
    context = (await api.get(f"/api/v1/runs/{run_id}/context", headers=ALICE)).json()
    return [m["content"] for m in context["messages"] if m["role"] != "system"]


async def test_regenerate_replaces_the_last_answer(api_on) -> None:
    conv = await two_turns(api_on)
    before = await messages(api_on, conv, headers=ALICE)
    result = await regenerate(api_on, conv)
    assert set(result) >= {"runId", "conversationId", "messageId", "status", "answer", "scenario"}
    assert (result["conversationId"], result["status"]) == (conv, "complete")
    after = await messages(api_on, conv, headers=ALICE)
    assert [m["seq"] for m in after] == [1, 2, 3, 4, 5]
    old, new = after[3], after[4]
    assert old["id"] == before[3]["id"] and old["content"] == before[3]["content"]
    assert (old["status"], new["status"]) == ("superseded", "complete")
    assert new["id"] == result["messageId"] and new["turnId"] == after[2]["turnId"]
    assert (old["version"], old["versions"], new["version"], new["versions"]) == (1, 2, 2, 2)
    assert (after[1]["version"], after[1]["versions"]) == (1, 1)
    assert after[0]["version"] is None and after[2]["versions"] is None
    # the new answer was given what came before the question, and the question itself
    assert await sent_to_model(api_on, result["runId"]) == [
        "first: Lisbon",
        before[1]["content"],
        "second: Porto",
    ]
    got = (await api_on.get(f"/api/v1/conversations/{conv}", headers=ALICE)).json()
    assert (got["status"], got["lastSeq"], got["messageCount"]) == ("completed", 5, 5)


async def test_twice_then_a_send_sees_no_superseded_answer(api_on) -> None:
    conv = await two_turns(api_on)
    first = await regenerate(api_on, conv)
    second = await regenerate(api_on, conv)
    rows = await messages(api_on, conv, headers=ALICE)
    assert [m["status"] for m in rows[3:]] == ["superseded", "superseded", "complete"]
    assert [(m["version"], m["versions"]) for m in rows[3:]] == [(1, 3), (2, 3), (3, 3)]
    assert rows[-1]["id"] == second["messageId"] != first["messageId"]
    run = await say(api_on, "third: Faro", conv, headers=ALICE)
    sent = await sent_to_model(api_on, run["runId"])
    assert sent == [
        "first: Lisbon",
        rows[1]["content"],
        "second: Porto",
        rows[5]["content"],
        "third: Faro",
    ]
    memory, lookup = current().memory, current().reads.lookup
    window = await memory.load(await lookup.get_conversation(conv))
    assert MessageStatus.SUPERSEDED not in {m.status for m in window}
    assert [m.seq for m in window] == [1, 2, 3, 6, 7, 8]


async def test_the_stream_has_the_execute_stream_frames(api_on) -> None:
    conv = await two_turns(api_on)
    resp = await api_on.post(f"/api/v1/conversations/{conv}/regenerate", headers=ALICE)
    events = assert_sse_response(resp)
    first, last = events[0].json, events[-1].json
    assert first["conversationId"] == conv and first["runId"].startswith("run-")
    assert first["scenario"] == "resume"
    assert "".join(e.json.get("chunk", "") for e in events[1:-1])
    rows = await messages(api_on, conv, headers=ALICE)
    assert last == {"done": True, "messageId": rows[-1]["id"]}
    assert rows[-1]["content"] == "".join(e.json.get("chunk", "") for e in events[1:-1])


async def test_no_user_message_is_422_and_others_are_404(api_on) -> None:
    empty = (await new_conversation(api_on, headers=ALICE))["uuid"]
    error = error_of(
        await api_on.post(f"/api/v1/conversations/{empty}/regenerate", headers=ALICE), 422
    )
    assert "no user message" in error["message"]
    conv = await two_turns(api_on)
    resp = await api_on.post(f"/api/v1/conversations/{conv}/regenerate", headers=BOB)
    assert error_of(resp, 404)["code"] == "not_found"
    missing = "00000000-0000-4000-8000-000000000000"
    resp = await api_on.post(f"/api/v1/conversations/{missing}/regenerate", headers=ALICE)
    assert error_of(resp, 404)["code"] == "not_found"
    resp = await api_on.post(
        f"/api/v1/conversations/{conv}/regenerate", json={"stream": "no"}, headers=ALICE
    )
    error_of(resp, 422)
    assert len(await messages(api_on, conv, headers=ALICE)) == 4


async def test_busy_while_a_run_is_active(api_on, fake_llm) -> None:
    conv = await two_turns(api_on, agent="tester")
    fake_llm.script.delay = 0.05
    started = await api_on.post(
        "/api/v1/agents/tester/execute",
        json={"task": "slow", "conversationId": conv},
        headers=ALICE,
    )
    run_id = started.json()["runId"]
    await wait_for_text(api_on, conv, headers=ALICE)
    error = error_of(
        await api_on.post(f"/api/v1/conversations/{conv}/regenerate", headers=ALICE), 409
    )
    assert run_id in str(error)
    await wait_run(api_on, run_id, headers=ALICE)
    # and a regenerate holds the conversation like any run (~2 s of answer: long enough
    # to be seen running on a loaded machine)
    fake_llm.script.chunks = [f"w{i} " for i in range(40)]
    live = asyncio.create_task(regenerate(api_on, conv))

    async def held() -> bool:
        got = await api_on.get(f"/api/v1/conversations/{conv}", headers=ALICE)
        return got.json()["status"] == "running"

    await wait_until(held, "the regenerate to hold the conversation")
    resp = await api_on.post(
        "/api/v1/agents/tester/execute/sync",
        json={"task": "x", "conversationId": conv},
        headers=ALICE,
    )
    error_of(resp, 409)
    assert (await live)["status"] == "complete"


async def test_a_regenerate_outlives_its_client(api_on, fake_llm) -> None:
    conv = await two_turns(api_on, agent="tester")
    fake_llm.script.delay = 0.05
    services = current()
    async with LiveStream(
        services, "POST", f"/api/v1/conversations/{conv}/regenerate", headers=ALICE
    ) as stream:
        first = (await stream.wait_events(2))[0].json
        await stream.hang_up()
    run = await wait_run(api_on, first["runId"], headers=ALICE)
    assert run["status"] == "complete" and run["content"] == "Hello from the fake LLM."
    rows = await messages(api_on, conv, headers=ALICE)
    assert [m["status"] for m in rows[-2:]] == ["superseded", "complete"]


async def test_after_a_failed_answer(api_on, fake_llm) -> None:
    conv = await two_turns(api_on, agent="tester")
    fake_llm.script.error_status = 503
    failed = await say(api_on, "third", conv, agent="tester", headers=ALICE)
    assert failed["status"] == "failed"
    fake_llm.script.error_status = None
    result = await regenerate(api_on, conv)
    assert (result["status"], result["answer"]) == ("complete", "Hello from the fake LLM.")
    rows = await messages(api_on, conv, headers=ALICE)
    assert [m["status"] for m in rows[-2:]] == ["superseded", "complete"]
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "user", "content": "third"}


@pytest.mark.usefixtures("tooled")
async def test_after_a_tool_using_turn(api_on, fake_llm) -> None:
    conv = (await new_conversation(api_on, agent="tooled", headers=ALICE))["uuid"]
    await say(api_on, "6*7?", conv, agent="tooled", headers=ALICE)
    assert [m["role"] for m in await messages(api_on, conv, headers=ALICE)] == [
        "USER",
        "ASSISTANT",
        "TOOL",
        "ASSISTANT",
    ]
    fake_llm.script.replies = [
        Reply(chunks=["Again."], calls=[Call("call_b", "calculator", '{"expression": "2+2"}')])
    ]
    result = await regenerate(api_on, conv)
    assert result["status"] == "complete"
    rows = await messages(api_on, conv, headers=ALICE)
    assert [(m["role"], m["status"], m["version"]) for m in rows[1:]] == [
        ("ASSISTANT", "superseded", 1),
        ("TOOL", "superseded", 1),
        ("ASSISTANT", "superseded", 1),
        ("ASSISTANT", "complete", 2),
        ("TOOL", "complete", 2),
        ("ASSISTANT", "complete", 2),
    ]
    assert rows[5]["content"] == "4" and {m["versions"] for m in rows[1:]} == {2}
    # the regenerated turn's tool round went to the model without the old one
    last = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in last if m["role"] != "system"] == ["user", "assistant", "tool"]
    assert last[-1]["tool_call_id"] == "call_b"
    got = (await api_on.get(f"/api/v1/conversations/{conv}", headers=ALICE)).json()
    assert got["toolCallCount"] == 2
    context = (await api_on.get(f"/api/v1/runs/{result['runId']}/context", headers=ALICE)).json()
    shown = [(m["role"], m["content"]) for m in context["messages"] if m["role"] != "system"]
    assert shown == [("user", "6*7?"), ("assistant", "Again."), ("tool", "4")]


async def test_the_hot_window_equals_a_rebuilt_one(api_on) -> None:
    conv = await two_turns(api_on)
    await regenerate(api_on, conv)
    memory, lookup = current().memory, current().reads.lookup
    conversation = await lookup.get_conversation(conv)
    hits = memory.stats.hits
    hot = await memory.load_view(conversation)
    again = await memory.load_view(conversation)
    assert memory.stats.hits == hits + 2, "a window with superseded rows is current"
    rebuilt = await memory.rebuild(conversation)
    assert [(m.id, m.seq, m.content, m.status) for m in hot.messages] == [
        (m.id, m.seq, m.content, m.status) for m in rebuilt
    ]
    assert [m.seq for m in again.messages] == [1, 2, 3, 5]


async def test_a_retry_with_the_same_key_regenerates_once(api_on) -> None:
    conv = await two_turns(api_on)
    headers = {**ALICE, "Idempotency-Key": "regen-1"}
    first = await regenerate(api_on, conv, headers=headers)
    again = await regenerate(api_on, conv, headers=headers)
    assert first == again
    assert len(await messages(api_on, conv, headers=ALICE)) == 5


async def test_superseded_answers_survive_export_and_import(api_on, tmp_path) -> None:
    conv = await two_turns(api_on)
    await regenerate(api_on, conv)
    exported = await api_on.get(
        f"/api/v1/conversations/{conv}/export", params={"format": "archive"}, headers=ALICE
    )
    assert exported.status_code == 200, exported.text
    before = await messages(api_on, conv, headers=ALICE)
    assert (await api_on.delete(f"/api/v1/conversations/{conv}", headers=ALICE)).status_code == 204
    archive = tmp_path / "regen.zip"
    archive.write_bytes(exported.content)
    report = await current().archive.import_path(archive, owner="alice")
    assert report.count(ImportOutcome.CREATED) == 1, report
    after = await messages(api_on, conv, headers=ALICE)
    assert [(m["seq"], m["content"], m["status"]) for m in after] == [
        (m["seq"], m["content"], m["status"]) for m in before
    ]
    assert [(m["version"], m["versions"]) for m in after[3:]] == [(1, 2), (2, 2)]
    run = await say(api_on, "third", conv, headers=ALICE)
    sent = await sent_to_model(api_on, run["runId"])  # one answer to "second", not both
    assert sent == [
        "first: Lisbon",
        before[1]["content"],
        "second: Porto",
        before[4]["content"],
        "third",
    ]


async def test_a_summary_reaching_the_question_goes(api_on) -> None:
    conv = await two_turns(api_on)
    memory, lookup = current().memory, current().reads.lookup
    source = await lookup.get_conversation(conv)
    await memory.write_summary(source, covered_to_seq=2, text="Lisbon.", model="t")
    await memory.write_summary(source, covered_to_seq=4, text="Lisbon, Porto: old.", model="t")
    await regenerate(api_on, conv)
    kept = await current().reads.archive.summaries_of(await lookup.get_conversation(conv))
    assert [(s.covered_to_seq, s.text) for s in kept] == [(2, "Lisbon.")]
    view = await memory.load_view(await lookup.get_conversation(conv))
    assert view.summary.text == "Lisbon."


async def test_the_in_process_window_too(api_factory, sqlite_database) -> None:
    _services, api = await api_factory(database_url=sqlite_database.url, redis_url=None)
    conv = (await new_conversation(api))["uuid"]
    for text in ("first: Lisbon", "second: Porto"):
        await say(api, text, conv)
    resp = await api.post(f"/api/v1/conversations/{conv}/regenerate", json={"stream": False})
    assert resp.status_code == 200, resp.text
    memory, lookup = current().memory, current().reads.lookup
    assert memory.hot_backend == "memory"
    conversation = await lookup.get_conversation(conv)
    hits = memory.stats.hits
    hot = await memory.load(conversation)
    assert memory.stats.hits == hits + 1
    assert [(m.id, m.status) for m in hot] == [
        (m.id, m.status) for m in await memory.rebuild(conversation)
    ]
    assert [m.seq for m in hot] == [1, 2, 3, 5]


async def test_family_b_shows_superseded_answers(api_on) -> None:
    conv = await two_turns(api_on)
    await regenerate(api_on, conv)
    resp = await api_on.get(f"/api/agent/demo/conversations/{conv}", headers=ALICE)
    assert resp.status_code == 200, resp.text
    statuses = [m["status"] for m in resp.json()["messages"]]
    assert statuses == ["complete", "complete", "complete", "superseded", "complete"]
