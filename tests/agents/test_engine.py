"""The chat engine against a fake OpenAI-compatible server: context, scenarios, durability."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from lumina_app.composition import open_services
from lumina_app.domain import (
    LOCAL,
    ConversationBusy,
    ConversationStatus,
    EventType,
    MessageStatus,
    MsgRole,
    RunEvent,
    utcnow,
)
from tests.conftest import crashed_run, forget_prefix
from tests.waits import wait_until

SYSTEM = "You are Tester.\n\nBe brief.\n\nNo tools."


async def collect(gen) -> list[RunEvent]:
    return [event async for event in gen]


async def send(
    services, text: str, conversation: str | None = None, agent: str = "tester"
) -> list[RunEvent]:
    return await collect(
        services.runs.stream(LOCAL, agent_id=agent, message=text, conversation_uuid=conversation)
    )


def answer_of(events: list[RunEvent]) -> str:
    return "".join(e.data["text"] for e in events if e.type is EventType.DELTA)


async def test_context_on_turns_1_2_and_25(services, fake_llm) -> None:
    events = await send(services, "first question")
    session = events[0]
    assert session.type is EventType.SESSION and session.data["scenario"] == "new"
    conv = session.data["conversationId"]
    assert fake_llm.requests[-1]["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "first question"},
    ]
    assert fake_llm.requests[-1]["model"] == "fake-1"
    assert events[-1].type is EventType.RESULT and events[-1].data["status"] == "complete"
    assert answer_of(events) == "Hello from the fake LLM."

    events = await send(services, "second question", conv)
    assert events[0].data["scenario"] == "continue"
    assert fake_llm.requests[-1]["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "Hello from the fake LLM."},
        {"role": "user", "content": "second question"},
    ]
    for turn in range(3, 25):
        await send(services, f"question {turn}", conv)
    await send(services, "question 25", conv)
    sent = fake_llm.requests[-1]["messages"]
    assert len(sent) == 1 + 20 + 1
    assert sent[0] == {"role": "system", "content": SYSTEM}
    assert sent[1] == {"role": "user", "content": "question 15"}
    assert [m["role"] for m in sent[1:21]] == ["user", "assistant"] * 10
    assert sent[-1] == {"role": "user", "content": "question 25"}


async def test_scenarios_new_continue_resume_and_resume_after_flushall(
    services, settings_factory, fake_llm, redis_prefix
) -> None:
    first = await send(services, "one")
    conv = first[0].data["conversationId"]
    assert (await send(services, "two", conv))[0].data["scenario"] == "continue"
    warm_context = fake_llm.requests[-1]["messages"]

    restarted = await open_services(settings_factory())  # a fresh pool: as after a restart
    try:
        events = await send(restarted, "three", conv)
        assert events[0].data["scenario"] == "resume"
        answer = {"role": "assistant", "content": "Hello from the fake LLM."}
        assert fake_llm.requests[-1]["messages"] == [
            *warm_context[:-1],
            {"role": "user", "content": "two"},
            answer,
            {"role": "user", "content": "three"},
        ]
        await forget_prefix(restarted.memory.hot.client, redis_prefix)  # the hot tier forgets
    finally:
        await restarted.close()

    again = await open_services(settings_factory())
    try:
        events = await send(again, "four", conv)
        assert events[0].data["scenario"] == "resume"
        sent = fake_llm.requests[-1]["messages"]
        assert [m["content"] for m in sent if m["role"] == "user"] == [
            "one",
            "two",
            "three",
            "four",
        ]
        assert len(sent) == 1 + 6 + 1
    finally:
        await again.close()


async def test_resume_context_equals_warm_context(services, settings_factory, fake_llm) -> None:
    conv = (await send(services, "alpha"))[0].data["conversationId"]
    for i in range(12):
        await send(services, f"msg {i}", conv)
    await send(services, "warm", conv)
    warm = fake_llm.requests[-1]["messages"][:-1]
    restarted = await open_services(settings_factory())
    try:
        # Same history, asked again from a cold process: identical context before the input.
        events = await send(restarted, "cold", conv)
        assert events[0].data["scenario"] == "resume"
        cold = fake_llm.requests[-1]["messages"][:-1]
        expected_tail = [
            *warm[3:],
            {"role": "user", "content": "warm"},
            {"role": "assistant", "content": "Hello from the fake LLM."},
        ]
        assert cold == [warm[0], *expected_tail]
    finally:
        await restarted.close()


async def test_messages_are_stored_with_turn_ids_and_roles(services) -> None:
    events = await send(services, "你好 👋")
    session, result = events[0], events[-1]
    conv = await services.reads.lookup.get_conversation(session.data["conversationId"])
    stored = await services.reads.conversations.history(conv)
    assert [(m.role, m.content, m.status) for m in stored] == [
        (MsgRole.USER, "你好 👋", MessageStatus.COMPLETE),
        (MsgRole.ASSISTANT, "Hello from the fake LLM.", MessageStatus.COMPLETE),
    ]
    assert stored[0].turn_id == stored[1].turn_id == session.data["messageId"]
    assert result.data["messageId"] == stored[1].id
    assert stored[1].meta["model"] == "fake-1" and stored[1].meta["usage"]["completionTokens"] == 5
    assert conv.status is ConversationStatus.COMPLETED and conv.message_count == 2
    assert conv.title == "你好 👋"
    record = await services.chat.runs.get_run(session.data["runId"])
    assert (record.scenario, record.status, record.model) == ("new", "complete", "fake-1")
    assert record.context_messages == 0 and record.finished_at is not None


async def test_provider_error_fails_the_answer_with_the_message(services, fake_llm) -> None:
    fake_llm.script.error_status = 400
    fake_llm.script.error_message = "context length exceeded"
    events = await send(services, "hi")
    errors = [e for e in events if e.type is EventType.ERROR]
    assert len(errors) == 1 and "context length exceeded" in errors[0].data["message"]
    assert events[-1].data["status"] == "failed"
    conv = await services.reads.lookup.get_conversation(events[0].data["conversationId"])
    answer = (await services.reads.conversations.history(conv))[-1]
    assert answer.status is MessageStatus.FAILED
    assert "context length exceeded" in answer.meta["error"]
    assert conv.status is ConversationStatus.FAILED
    fake_llm.script.error_status = None
    after = await send(services, "again", conv.uuid)
    assert after[-1].data["status"] == "complete"


async def test_unreachable_provider_fails_cleanly(services, data_dir) -> None:
    from tests.conftest import write_agent

    write_agent(
        data_dir / "agents",
        "offline",
        {"name": "x", "provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"},
    )
    events = await send(services, "hi", agent="offline")
    assert events[-1].data["status"] == "failed"
    assert "unreachable" in events[-1].data["error"] or "error" in events[-1].data["error"]


async def test_consumer_gone_the_answer_still_completes(services, fake_llm) -> None:
    fake_llm.script.chunks = [f"w{i} " for i in range(20)]
    fake_llm.script.delay = 0.02
    gen = services.runs.stream(LOCAL, agent_id="tester", message="go")
    session = await anext(gen)
    await anext(gen)
    await gen.aclose()  # the client went away after one chunk
    run = services.chat.active_run(session.data["runId"])
    assert run is not None
    await asyncio.wait_for(run.done.wait(), 5)
    conv = await services.reads.lookup.get_conversation(session.data["conversationId"])
    answer = (await services.reads.conversations.history(conv))[-1]
    assert answer.status is MessageStatus.COMPLETE
    assert answer.content == "".join(f"w{i} " for i in range(20))


async def test_a_caller_gone_mid_accept_leaves_a_whole_turn(services, monkeypatch) -> None:
    """The request that started a run is cancelled while its turn is being accepted: the
    accept still commits, the run still answers, and nothing half-done is left."""
    memory = services.memory
    begin = memory.begin_conversation
    accepting, go_on, accepted = asyncio.Event(), asyncio.Event(), []

    async def slow_begin(conversation, *args, **kwargs):
        accepting.set()
        await go_on.wait()
        stored = await begin(conversation, *args, **kwargs)
        accepted.append(conversation)
        return stored

    monkeypatch.setattr(memory, "begin_conversation", slow_begin)
    caller = asyncio.create_task(services.runs.start_run(LOCAL, agent_id="tester", message="hi"))
    await asyncio.wait_for(accepting.wait(), 5)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    go_on.set()

    async def answered():
        if not accepted:
            return None
        conv = await services.reads.lookup.get_conversation(accepted[0].uuid)
        history = await services.reads.conversations.history(conv)
        return history if history[-1].status is MessageStatus.COMPLETE else None

    history = await wait_until(answered, "the accepted run's answer")
    assert [(m.role, m.status) for m in history] == [
        (MsgRole.USER, MessageStatus.COMPLETE),
        (MsgRole.ASSISTANT, MessageStatus.COMPLETE),
    ]
    assert history[1].content == "Hello from the fake LLM."


async def test_an_accept_that_fails_reaches_the_caller_and_frees_the_slot(
    services, monkeypatch
) -> None:
    from lumina_app.domain import StoreUnavailable

    async def unavailable(*args, **kwargs):
        raise StoreUnavailable("database unavailable: test")

    memory = services.memory
    begin = memory.begin_conversation
    monkeypatch.setattr(memory, "begin_conversation", unavailable)
    with pytest.raises(StoreUnavailable):
        await services.runs.start_run(LOCAL, agent_id="tester", message="lost?")
    assert services.chat._runs == {} and services.chat._by_conversation == {}
    monkeypatch.setattr(memory, "begin_conversation", begin)
    events = await send(services, "again")
    assert events[-1].data["status"] == "complete"


async def test_cancel_on_disconnect_interrupts(settings_factory, fake_llm) -> None:
    services = await open_services(settings_factory(cancel_on_disconnect=True))
    try:
        fake_llm.script.chunks = [f"w{i} " for i in range(50)]
        fake_llm.script.delay = 0.02
        gen = services.runs.stream(LOCAL, agent_id="tester", message="go")
        session = await anext(gen)
        await anext(gen)
        run = services.chat.active_run(session.data["runId"])
        await gen.aclose()
        await asyncio.wait_for(run.done.wait(), 5)
        conv = await services.reads.lookup.get_conversation(session.data["conversationId"])
        answer = (await services.reads.conversations.history(conv))[-1]
        assert answer.status is MessageStatus.INTERRUPTED
        assert answer.content.startswith("w0 ") and len(answer.content) < len("w0 ") * 50
    finally:
        await services.close()


async def test_stop_keeps_the_partial_text(services, fake_llm) -> None:
    fake_llm.script.chunks = [f"w{i} " for i in range(100)]
    fake_llm.script.delay = 0.01
    run = await services.chat.start_run(agent_id="tester", message="long please")
    seen = []
    async for event in services.chat.follow(run):
        seen.append(event)
        if event.type is EventType.DELTA and sum(e.type is EventType.DELTA for e in seen) == 5:
            await services.chat.stop(run.run_id)
    assert seen[-1].type is EventType.RESULT and seen[-1].data["status"] == "stopped"
    conv = await services.reads.lookup.get_conversation(run.conversation.uuid)
    answer = (await services.reads.conversations.history(conv))[-1]
    assert answer.status is MessageStatus.STOPPED
    assert (
        answer.content.startswith("w0 w1 w2 w3 w4 ") and answer.content == seen[-1].data["content"]
    )
    assert conv.status is not ConversationStatus.RUNNING
    record = await services.chat.runs.get_run(run.run_id)
    assert record.status == "stopped"


async def test_one_active_run_per_conversation(services, fake_llm) -> None:
    conv = (await send(services, "hi"))[0].data["conversationId"]
    fake_llm.script.delay = 0.05
    run = await services.chat.start_run(agent_id="tester", message="slow", conversation_uuid=conv)
    with pytest.raises(ConversationBusy) as info:
        await services.chat.start_run(agent_id="tester", message="again", conversation_uuid=conv)
    assert info.value.run_id == run.run_id
    await run.done.wait()
    fake_llm.script.delay = 0
    assert (await send(services, "now free", conv))[-1].data["status"] == "complete"


async def test_crash_recovery_closes_streaming_answers(services, settings_factory) -> None:
    conv, _record = await crashed_run(services, "run-crashed", "half of it")
    # Start-up sweeps runs whose lease ran out (younger ones may be another instance's).
    started = (await services.chat.runs.get_run("run-crashed")).started_at
    await wait_until(
        lambda: utcnow() - started > timedelta(seconds=0.5), "the crashed run to outlive a lease"
    )
    restarted = await open_services(settings_factory(run_lease_seconds=0.5))
    try:
        current = await restarted.reads.lookup.get_conversation(conv.uuid)
        answer = (await restarted.reads.conversations.history(current))[-1]
        assert (answer.status, answer.content) == (MessageStatus.INTERRUPTED, "half of it")
        assert current.status is not ConversationStatus.RUNNING
        assert (await restarted.chat.runs.get_run("run-crashed")).status == "interrupted"
        events = await send(restarted, "next", conv.uuid)
        assert events[0].data["scenario"] == "resume" and events[-1].data["status"] == "complete"
    finally:
        await restarted.close()


async def test_flushes_grow_the_stored_answer_while_streaming(services, fake_llm) -> None:
    fake_llm.script.chunks = ["x" * 50] * 12
    fake_llm.script.delay = 0.03
    run = await services.chat.start_run(agent_id="tester", message="stream")
    seen_lengths = set()
    async for event in services.chat.follow(run):
        if event.type is EventType.DELTA:
            stored = await services.memory.queries.get_message(run.assistant.id)
            seen_lengths.add(len(stored.content))
    assert len(seen_lengths - {0}) >= 2  # the row grew in steps before the end
    assert (await services.memory.queries.get_message(run.assistant.id)).content == "x" * 600


async def test_demo_model_shows_the_context_it_received(services) -> None:
    first = await send(services, "my name is Ada", agent="demo")
    assert "no earlier messages" in answer_of(first)
    second = await send(services, "what is my name?", first[0].data["conversationId"], agent="demo")
    text = answer_of(second)
    assert "2 earlier messages" in text and "my name is Ada" in text


async def test_delete_drops_the_run_event_buffers(services) -> None:
    events = await send(services, "to be deleted")
    run_id, conv_id = events[0].data["runId"], events[0].data["conversationId"]
    assert await services.events.known(run_id)
    await services.memory.delete(await services.reads.lookup.get_conversation(conv_id))
    assert not await services.events.known(run_id)
    assert await services.chat.runs.get_run(run_id) is None
