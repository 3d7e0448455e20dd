"""Memory beyond the window, on every backend: rolling summaries written in the background
and carried into every later context (also after a Redis loss and on another instance),
token budgets that leave out whole turns, and each run's exact context on record."""

from __future__ import annotations

import pytest

from lumina_app.agents.run.context import SUMMARY_PREFIX, build_context
from lumina_app.composition import open_services
from lumina_app.domain import LOCAL
from tests.api.helpers import bearer
from tests.conftest import write_agent

WINDOW = 4  # a small window, so messages leave it after a few turns


@pytest.fixture
def agents(data_dir, fake_llm):
    """``keeper``: the fake model, with a summary; ``budget``: a small token budget;
    ``plain``: no memory block (the seed behaviour)."""
    base = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
    folder = data_dir / "agents"
    write_agent(folder, "keeper", {**base, "memory": {"summary": True}}, {"agent.md": "Keep."})
    (folder / "keeper" / "summary.md").write_text("Summarize tersely.", encoding="utf-8")
    write_agent(folder, "budget", {**base, "memory": {"contextTokens": 300}}, {"agent.md": "B."})
    write_agent(folder, "plain", base, {"agent.md": "Plain."})
    write_agent(folder, "offline", {"name": "Offline", "memory": {"summary": True}})
    return folder


@pytest.fixture
async def memory_services(settings_factory, database, agents):
    opened = await open_services(settings_factory(database_url=database.url, context_window=WINDOW))
    yield opened
    await opened.close()


async def turn(services, agent: str, text: str, conversation: str | None = None):
    result = await services.runs.execute_sync(
        LOCAL, agent_id=agent, message=text, conversation_uuid=conversation
    )
    await services.chat.summaries.wait()  # the background summary, if one is due
    return result


async def test_a_summary_of_what_left_the_window_joins_every_later_context(
    memory_services, fake_llm
) -> None:
    services = memory_services
    first = await turn(services, "keeper", "my name is Ada")
    conv = first.conversation_uuid
    for n in range(2, 9):  # 16 messages: 10+ have left a window of 4
        await turn(services, "keeper", f"question {n}", conv)
    summaries = await services.reads.archive.summaries_of(
        await services.reads.lookup.get_conversation(conv)
    )
    assert summaries, "no summary was written"
    latest = summaries[-1]
    assert latest.covered_to_seq >= 10 and latest.model == "fake-1"
    # the summarizer was asked with the agent's summary.md and the messages that left
    asks = [r for r in fake_llm.requests if r["messages"][0]["content"] == "Summarize tersely."]
    assert asks and "USER: my name is Ada" in asks[0]["messages"][1]["content"]

    fake_llm.requests.clear()
    await turn(services, "keeper", "what is my name?", conv)
    sent = fake_llm.requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": "Keep."}
    assert sent[1] == {"role": "system", "content": SUMMARY_PREFIX + latest.text}
    # then what left the window after the summary's end (seqs 11..12), the window, the input
    earlier = 16 - WINDOW - latest.covered_to_seq
    assert len(sent) == 2 + earlier + WINDOW + 1
    assert sent[2] == {"role": "user", "content": f"question {latest.covered_to_seq // 2 + 1}"}
    assert sent[-1] == {"role": "user", "content": "what is my name?"}


async def test_an_agent_without_a_memory_block_keeps_the_seed_context(
    memory_services, fake_llm
) -> None:
    services = memory_services
    conv = (await turn(services, "plain", "one")).conversation_uuid
    for n in range(2, 10):
        await turn(services, "plain", f"q{n}", conv)
    assert services.chat.summaries.written == 0
    sent = fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(not m["content"].startswith(SUMMARY_PREFIX) for m in sent)


async def test_after_a_redis_loss_another_instance_sends_what_the_warm_session_would(
    memory_services, settings_factory, database, fake_llm
) -> None:
    services = memory_services
    conv = (await turn(services, "keeper", "alpha")).conversation_uuid
    for n in range(9):
        await turn(services, "keeper", f"beta {n}", conv)
    warm = services.chat.sessions.get("keeper", conv)
    assert warm is not None and warm.summary is not None
    agent = services.registry.get("keeper")
    would_send = build_context(
        agent.system_prompt,
        warm.history,
        "gamma",
        window=WINDOW,
        summary=warm.summary,
        earlier=True,
    ).messages
    assert would_send[1]["content"].startswith(SUMMARY_PREFIX)

    await services.memory.hot.delete(conv)  # Redis forgot the window and its summary
    other = await open_services(
        settings_factory(database_url=database.url, context_window=WINDOW), recover=False
    )
    try:
        fake_llm.requests.clear()
        result = await other.runs.execute_sync(
            LOCAL, agent_id="keeper", message="gamma", conversation_uuid=conv
        )
        assert result.scenario.value == "resume"
        assert fake_llm.requests[0]["messages"] == would_send
    finally:
        await other.close()


async def test_a_token_budget_leaves_out_whole_turns_and_says_how_many(
    memory_services, fake_llm
) -> None:
    services = memory_services
    long = "word " * 120  # ~150 tokens per message
    conv = (await turn(services, "budget", long)).conversation_uuid
    await turn(services, "budget", long, conv)
    result = await turn(services, "budget", "short question", conv)
    sent = fake_llm.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and sent[-1]["content"] == "short question"
    assert [m["role"] for m in sent[1:-1]][:1] in ([], ["user"])  # never starts on an answer
    record = await services.chat.runs.get_run(result.run_id)
    assert record.trimmed >= 2 and record.trimmed % 2 == 0  # whole turns
    status = await services.runs.status(LOCAL, result.run_id)
    assert status.trimmed == record.trimmed


async def test_the_offline_demo_model_writes_an_extractive_summary(memory_services) -> None:
    services = memory_services
    conv = (await turn(services, "offline", "I live in Lisbon. I like trams.")).conversation_uuid
    for n in range(8):
        await turn(services, "offline", f"next {n}", conv)
    (summary,) = (
        await services.reads.archive.summaries_of(
            await services.reads.lookup.get_conversation(conv)
        )
    )[-1:]
    assert summary.model == "demo-extractive"
    assert "The user said: “I live in Lisbon. I like trams.”" in summary.text


async def test_a_summary_that_fails_never_blocks_a_turn(memory_services, fake_llm, caplog) -> None:
    services = memory_services
    services.chat.summaries.retry_after = 0.01
    conv = (await turn(services, "keeper", "one")).conversation_uuid
    for n in range(5):  # 12 messages: 8 left the window, not yet 10
        await turn(services, "keeper", f"q{n}", conv)
    conversation = await services.reads.lookup.get_conversation(conv)
    assert await services.reads.archive.summaries_of(conversation) == []
    fake_llm.script.error_status = 503  # the model is down: answers and summaries fail
    for n in range(2):
        failed = await turn(services, "keeper", f"down {n}", conv)
        assert failed.status.value == "failed"
    assert await services.reads.archive.summaries_of(conversation) == []
    assert any("not written" in r.getMessage() for r in caplog.records)
    fake_llm.script.error_status = None
    after = await turn(services, "keeper", "q6", conv)  # the turn was never held up
    assert after.status.value == "complete"
    assert await services.reads.archive.summaries_of(conversation)  # caught up after the next run


async def test_the_context_endpoint_is_exactly_what_the_model_was_sent(
    api_factory, database, agents, fake_llm
) -> None:
    _services, api = await api_factory(
        database_url=database.url, context_window=WINDOW, api_keys="alice:ka,bob:kb"
    )
    alice = bearer("ka")
    conv = None
    for n in range(9):
        body = {"task": f"message {n}", **({"conversationId": conv} if conv else {})}
        resp = await api.post("/api/v1/agents/keeper/execute/sync", json=body, headers=alice)
        conv = resp.json()["conversationId"]
        await _services.chat.summaries.wait()
    run_id = resp.json()["runId"]
    sent = [r for r in fake_llm.requests if r["messages"][0]["content"] == "Keep."][-1]
    context = await api.get(f"/api/v1/runs/{run_id}/context", headers=alice)
    assert context.status_code == 200, context.text
    body = context.json()
    assert body["messages"] == sent["messages"]  # byte for byte, as JSON
    assert body["summary"] is not None and body["window"]["lastSeq"] == 16
    assert (
        await api.get(f"/api/v1/runs/{run_id}/context", headers=bearer("kb"))
    ).status_code == 404


async def test_delete_takes_the_summaries_and_export_import_carries_them(
    memory_services, tmp_path
) -> None:
    services = memory_services
    conv = (await turn(services, "offline", "remember the fig tree")).conversation_uuid
    for n in range(8):
        await turn(services, "offline", f"and then {n}", conv)
    conversation = await services.reads.lookup.get_conversation(conv)
    kept = await services.reads.archive.summaries_of(conversation)
    assert kept
    folder = tmp_path / "export"  # not the data dir, whose copy goes with a delete
    report = await services.archive.export_all(folder, conversation_uuid=conv)
    assert report.conversations == 1
    meta_path = next(folder.rglob("meta.json"))
    assert '"summaries"' in meta_path.read_text(encoding="utf-8")

    await services.conversations.delete(LOCAL, conv)
    assert await services.reads.archive.summaries_of(conversation) == []  # gone with it
    assert await services.search.everywhere(LOCAL, "fig") == []  # and its index entries

    imported = await services.archive.import_path(folder)
    assert imported.errors == []
    again = await services.reads.lookup.get_conversation(conv)
    restored = await services.reads.archive.summaries_of(again)
    assert [(s.covered_to_seq, s.text, s.model) for s in restored] == [
        (s.covered_to_seq, s.text, s.model) for s in kept
    ]
    await services.archive.import_path(folder)  # again: nothing added twice
    assert len(await services.reads.archive.summaries_of(again)) == len(kept)
    view = await services.memory.load_view(again)
    assert view.summary is not None and view.summary.text == kept[-1].text
