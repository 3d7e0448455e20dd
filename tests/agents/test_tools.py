"""Tool calling through the engine, against the fake OpenAI-compatible server: what the
model is sent (tools, tool_calls, results), what is stored and counted, the step limit,
and contexts — warm, resumed, windowed — that never split a call from its results."""

from __future__ import annotations

import json

import pytest

from lumina_app.composition import open_services
from lumina_app.domain import (
    LOCAL,
    AgentUnavailable,
    ConversationStatus,
    EventType,
    MessageStatus,
    MsgRole,
    RunEvent,
)
from tests.conftest import SYSTEM_PROMPT_PARTS, forget_prefix, write_agent
from tests.fake_llm import Call, Reply

SYSTEM = "You are Tester.\n\nBe brief.\n\nNo tools."
SIX_BY_SEVEN = Call("call_a", "calculator", '{"expression": "6 * 7"}')
CLOCK = Call("call_b", "current_time", '{"timezone": "UTC"}')


@pytest.fixture
def tooled(data_dir, fake_llm):
    """``tooled``: the fake LLM's agent with the built-ins."""

    def make(**extra) -> str:
        config = {
            "name": "Tooled",
            "provider": "openai",
            "base_url": fake_llm.base_url,
            "model": "fake-1",
            "tools": ["current_time", "calculator"],
            **extra,
        }
        write_agent(data_dir / "agents", "tooled", config, SYSTEM_PROMPT_PARTS)
        return "tooled"

    make()
    return make


async def send(services, text: str, conversation: str | None = None) -> list[RunEvent]:
    stream = services.runs.stream(
        LOCAL, agent_id="tooled", message=text, conversation_uuid=conversation
    )
    return [event async for event in stream]


def of_type(events: list[RunEvent], kind: EventType) -> list[dict]:
    return [e.data for e in events if e.type is kind]


def as_sent(call: Call) -> dict:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


async def stored(services, conversation: str):
    conv = await services.reads.lookup.get_conversation(conversation)
    return conv, await services.reads.conversations.history(conv, limit=200)


async def test_a_tool_turn_streams_runs_the_calls_and_asks_the_model_again(
    services, fake_llm, tooled
) -> None:
    fake_llm.script.replies = [Reply(chunks=["Let me see."], calls=[SIX_BY_SEVEN, CLOCK])]
    events = await send(services, "what is 6 * 7, and the time?")
    assert [e.type.value for e in events] == [
        "session",
        "agent_output",
        "tool_call",
        "tool_call",
        "tool_result",  # in the order the calls end
        "tool_result",
        *["agent_output"] * 5,
        "result",
    ]
    calls = of_type(events, EventType.TOOL_CALL)
    assert calls == [
        {"callId": "call_a", "name": "calculator", "arguments": '{"expression": "6 * 7"}'},
        {"callId": "call_b", "name": "current_time", "arguments": '{"timezone": "UTC"}'},
    ]
    results = {r["callId"]: r for r in of_type(events, EventType.TOOL_RESULT)}
    assert results["call_a"] | {"durationMs": 0} == {
        "callId": "call_a",
        "name": "calculator",
        "content": "42",
        "isError": False,
        "durationMs": 0,
    }
    clock = results["call_b"]["content"]
    assert clock.endswith("(" + clock.split("(")[1]) and "+00:00" in clock

    # The model got the tools' schemas, then its calls and their results.
    first, second = fake_llm.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["current_time", "calculator"]
    assert first["tools"][1]["function"]["parameters"]["required"] == ["expression"]
    assert second["messages"] == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "what is 6 * 7, and the time?"},
        {
            "role": "assistant",
            "content": "Let me see.",
            "tool_calls": [as_sent(SIX_BY_SEVEN), as_sent(CLOCK)],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "42"},
        {"role": "tool", "tool_call_id": "call_b", "content": clock},
    ]

    # Stored in order with their seqs; counted; the run points at the last answer.
    result = events[-1].data
    assert result["status"] == "complete" and result["content"] == "Hello from the fake LLM."
    conv, rows = await stored(services, result["conversationId"])
    assert [(m.seq, m.role, m.status) for m in rows] == [
        (1, MsgRole.USER, MessageStatus.COMPLETE),
        (2, MsgRole.ASSISTANT, MessageStatus.COMPLETE),
        (3, MsgRole.TOOL, MessageStatus.COMPLETE),
        (4, MsgRole.TOOL, MessageStatus.COMPLETE),
        (5, MsgRole.ASSISTANT, MessageStatus.COMPLETE),
    ]
    asked, tool_a, tool_b, answer = rows[1:]
    assert asked.content == "Let me see." and asked.meta["finishReason"] == "tool_calls"
    assert asked.meta["toolCalls"] == [
        {"id": "call_a", "name": "calculator", "arguments": '{"expression": "6 * 7"}'},
        {"id": "call_b", "name": "current_time", "arguments": '{"timezone": "UTC"}'},
    ]
    assert tool_a.content == "42"
    assert tool_a.meta == {
        "toolCallId": "call_a",
        "name": "calculator",
        "isError": False,
        "durationMs": tool_a.meta["durationMs"],
    }
    assert tool_b.meta["toolCallId"] == "call_b" and tool_b.content == clock
    assert len({m.turn_id for m in rows}) == 1
    assert answer.id == result["messageId"] and answer.content == result["content"]
    assert (conv.message_count, conv.tool_call_count, conv.last_seq) == (5, 2, 5)
    assert conv.status is ConversationStatus.COMPLETED
    record = await services.chat.runs.get_run(result["runId"])
    assert (record.status, record.assistant_message_id) == ("complete", answer.id)


async def test_resume_after_a_restart_sends_what_the_warm_session_would(
    services, settings_factory, fake_llm, tooled, redis_prefix
) -> None:
    """Three conversations with the same turns: the third turn's context is the same warm,
    resumed from the hot window, and resumed with the hot window lost (rebuilt from SQL)."""
    sent = {}
    for how in ("warm", "resumed", "rebuilt"):
        fake_llm.script.replies = [Reply(chunks=["Let me see."], calls=[SIX_BY_SEVEN])]
        conv = (await send(services, "six times seven?"))[0].data["conversationId"]
        await send(services, "thanks", conv)
        runner = services
        if how != "warm":
            runner = await open_services(settings_factory())
            if how == "rebuilt":
                await forget_prefix(runner.memory.hot.client, redis_prefix)
        try:
            events = await send(runner, "and now?", conv)
            assert events[0].data["scenario"] == ("continue" if how == "warm" else "resume")
            sent[how] = fake_llm.requests[-1]["messages"]
        finally:
            if runner is not services:
                await runner.close()
    assert sent["warm"] == sent["resumed"] == sent["rebuilt"]
    assert sent["warm"][2:4] == [
        {"role": "assistant", "content": "Let me see.", "tool_calls": [as_sent(SIX_BY_SEVEN)]},
        {"role": "tool", "tool_call_id": "call_a", "content": "42"},
    ]


async def test_a_small_window_never_sends_a_call_without_its_results(
    settings_factory, fake_llm, tooled
) -> None:
    services = await open_services(settings_factory(context_window=5))
    try:
        conv = None
        for turn in range(6):
            fake_llm.script.replies = [Reply(calls=[SIX_BY_SEVEN, CLOCK][: 1 + turn % 2])]
            events = await send(services, f"turn {turn}", conv)
            conv = events[0].data["conversationId"]
            for request in fake_llm.requests:
                assert_whole(request["messages"])
            fake_llm.requests.clear()
        restarted = await open_services(settings_factory(context_window=5))
        try:
            await send(restarted, "resumed", conv)
            assert_whole(fake_llm.requests[0]["messages"])
        finally:
            await restarted.close()
    finally:
        await services.close()


def assert_whole(messages: list[dict]) -> None:
    """History starts on a user message; every tool_calls message is followed by exactly
    its results; no result without its call."""
    history = [m for m in messages if m["role"] != "system"]
    assert history[0]["role"] == "user", history
    i = 0
    while i < len(history):
        message = history[i]
        assert message["role"] != "tool", f"a result without its call: {history}"
        if message.get("tool_calls"):
            wanted = [c["id"] for c in message["tool_calls"]]
            got = [m.get("tool_call_id") for m in history[i + 1 : i + 1 + len(wanted)]]
            assert got == wanted, history
            i += len(wanted)
        i += 1


async def test_max_tool_steps_ends_failed_with_everything_kept(services, fake_llm, tooled) -> None:
    tooled(maxToolSteps=2)
    fake_llm.script.always = Reply(chunks=["again "], calls=[SIX_BY_SEVEN])
    events = await send(services, "loop forever")
    error = "maxToolSteps (2) reached: the model kept calling tools"
    assert len(fake_llm.requests) == 3  # two steps ran; the third asked and got no calls
    assert of_type(events, EventType.ERROR) == [
        {"message": error, "messageId": events[-1].data["messageId"]}
    ]
    result = events[-1].data
    assert (result["status"], result["error"], result["content"]) == ("failed", error, "again ")
    assert len(of_type(events, EventType.TOOL_CALL)) == len(of_type(events, EventType.TOOL_RESULT))
    not_run = of_type(events, EventType.TOOL_RESULT)[-1]
    assert not_run["isError"] and not_run["content"] == f"Error: not run: {error}"
    conv, rows = await stored(services, result["conversationId"])
    assert [m.role.value for m in rows] == ["USER", *["ASSISTANT", "TOOL"] * 3]
    assert [m.status.value for m in rows] == ["complete"] * 5 + ["failed", "complete"]
    last_ask = rows[-2]
    assert last_ask.meta["error"] == error and len(last_ask.meta["toolCalls"]) == 1
    assert rows[-1].tool_call_id == last_ask.meta["toolCalls"][0]["id"]
    assert (conv.tool_call_count, conv.status) == (3, ConversationStatus.FAILED)
    # The conversation goes on, with all of it in the context.
    fake_llm.script.always = None
    after = await send(services, "stop now", result["conversationId"])
    assert after[-1].data["status"] == "complete"
    assert_whole(fake_llm.requests[-1]["messages"])
    assert sum(m["role"] == "tool" for m in fake_llm.requests[-1]["messages"]) == 3


async def test_a_made_up_tool_and_bad_arguments_are_results_the_model_reads(
    services, fake_llm, tooled
) -> None:
    fake_llm.script.replies = [
        Reply(
            calls=[
                Call("c1", "rm_rf", "{}"),
                Call("c2", "calculator", '{"expr": "1"}'),
                Call("c3", "calculator", '{"expression": "1/0"}'),
            ]
        )
    ]
    events = await send(services, "do odd things")
    assert events[-1].data["status"] == "complete"
    results = {r["callId"]: r for r in of_type(events, EventType.TOOL_RESULT)}
    assert all(r["isError"] for r in results.values())
    assert results["c1"]["content"] == (
        "Error: there is no tool named 'rm_rf' (tools: current_time, calculator)"
    )
    assert results["c2"]["content"].startswith("Error: invalid arguments for calculator: ")
    assert results["c3"]["content"] == "Error: division by zero"
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [
        results[c]["content"] for c in ("c1", "c2", "c3")
    ]
    _conv, rows = await stored(services, events[0].data["conversationId"])
    assert [m.meta.get("isError") for m in rows if m.role is MsgRole.TOOL] == [True] * 3


async def test_a_provider_failure_after_a_tool_step_keeps_the_step(
    services, fake_llm, tooled
) -> None:
    fake_llm.script.replies = [
        Reply(calls=[SIX_BY_SEVEN]),
        Reply(error_status=400),
    ]  # 400: not retried
    events = await send(services, "go")
    assert events[-1].data["status"] == "failed"
    conv, rows = await stored(services, events[0].data["conversationId"])
    assert [(m.role.value, m.status.value) for m in rows] == [
        ("USER", "complete"),
        ("ASSISTANT", "complete"),
        ("TOOL", "complete"),
        ("ASSISTANT", "failed"),
    ]
    assert "provider error 400" in rows[-1].meta["error"] and conv.tool_call_count == 1


async def test_tool_call_count_adds_up_over_turns(services, fake_llm, tooled) -> None:
    fake_llm.script.replies = [Reply(calls=[SIX_BY_SEVEN, CLOCK])]
    conv = (await send(services, "one"))[0].data["conversationId"]
    fake_llm.script.replies = [Reply(calls=[SIX_BY_SEVEN]), Reply(calls=[CLOCK])]
    await send(services, "two", conv)
    await send(services, "three", conv)
    info, rows = await stored(services, conv)
    assert info.tool_call_count == 4 == sum(m.role is MsgRole.TOOL for m in rows)
    assert info.message_count == len(rows) == info.last_seq


async def test_an_agent_with_a_broken_tool_config_cannot_run(services, data_dir) -> None:
    write_agent(data_dir / "agents", "broken", {"name": "B", "mcpServers": {"x": {"args": []}}})
    with pytest.raises(AgentUnavailable) as info:
        await services.chat.start_run(agent_id="broken", message="hi")
    assert "mcpServers.x needs either 'command' (stdio) or 'url' (HTTP)" in str(info.value)


async def test_the_demo_model_tells_the_time_with_its_tool(services, data_dir) -> None:
    write_agent(data_dir / "agents", "clock", {"name": "Clock", "tools": ["current_time"]})
    events = [
        e
        async for e in services.runs.stream(
            LOCAL, agent_id="clock", message="What time is it in Asia/Tokyo?"
        )
    ]
    (call,) = of_type(events, EventType.TOOL_CALL)
    assert (call["name"], json.loads(call["arguments"])) == (
        "current_time",
        {"timezone": "Asia/Tokyo"},
    )
    (result,) = of_type(events, EventType.TOOL_RESULT)
    assert "+09:00" in result["content"] and "Asia/Tokyo" in result["content"]
    answer = events[-1].data["content"]
    assert "`current_time` said: " + result["content"] in answer


async def test_the_context_of_a_tool_run_is_every_call_it_made(services, fake_llm, tooled) -> None:
    earlier = await send(services, "hello")  # a turn before, so the window is not empty
    conv = of_type(earlier, EventType.SESSION)[0]["conversationId"]
    fake_llm.requests.clear()
    fake_llm.script.replies = [
        Reply(chunks=["First."], calls=[SIX_BY_SEVEN]),
        Reply(chunks=["Then."], calls=[CLOCK]),
    ]
    events = await send(services, "compute, then the time", conv)
    run_id = of_type(events, EventType.SESSION)[0]["runId"]
    context = await services.runs.context(LOCAL, run_id)
    assert len(fake_llm.requests) == 3 and len(context.calls) == 3
    for request, size in zip(fake_llm.requests, context.calls, strict=True):
        assert context.messages[:size] == request["messages"]  # each call, exactly
    assert context.messages == fake_llm.requests[-1]["messages"]
    assert [m["role"] for m in context.messages[context.calls[0] :]] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]


@pytest.fixture
def recaller(data_dir, fake_llm):
    config = {
        "name": "Recaller",
        "provider": "openai",
        "base_url": fake_llm.base_url,
        "model": "fake-1",
        "memory": {"recall": True},
    }
    write_agent(data_dir / "agents", "recaller", config, SYSTEM_PROMPT_PARTS)
    write_agent(data_dir / "agents", "offline", {"name": "Offline", "memory": {"recall": True}})
    write_agent(
        data_dir / "agents", "listed", {"name": "Listed", "tools": ["recall", "calculator"]}
    )


async def test_recall_finds_what_left_the_context_but_not_the_question_itself(
    services, fake_llm, recaller
) -> None:
    async def say(text: str, conversation: str | None) -> list[RunEvent]:
        stream = services.runs.stream(
            LOCAL, agent_id="recaller", message=text, conversation_uuid=conversation
        )
        return [event async for event in stream]

    first = await say("my locker code is 4711, keep it for me", None)
    conv = of_type(first, EventType.SESSION)[0]["conversationId"]
    for n in range(3):
        await say(f"small talk {n}", conv)
    assert [t["function"]["name"] for t in fake_llm.requests[-1]["tools"]] == ["recall"]
    query = Call("call_r", "recall", '{"query": "locker code"}')
    fake_llm.script.replies = [Reply(calls=[query])]
    events = await say("what is my locker code?", conv)
    (result,) = of_type(events, EventType.TOOL_RESULT)
    assert not result["isError"]
    assert "[#1 user " in result["content"] and "my locker code is 4711" in result["content"]
    assert "what is my locker code?" not in result["content"]  # the turn's own question
    # A phrase whose words never meet in one message falls back to its longest words.
    fake_llm.script.replies = [Reply(calls=[Call("call_s", "recall", '{"query": "code zebra"}')])]
    (fallback,) = of_type(await say("again?", conv), EventType.TOOL_RESULT)
    assert "4711" in fallback["content"]
    fake_llm.script.replies = [Reply(calls=[Call("call_t", "recall", '{"query": "zebra"}')])]
    (nothing,) = of_type(await say("and zebras?", conv), EventType.TOOL_RESULT)
    assert nothing["content"] == "Nothing earlier in this conversation matches 'zebra'."
    fake_llm.script.replies = [Reply(calls=[Call("call_u", "recall", '{"query": "?!"}')])]
    (bad,) = of_type(await say("and punctuation?", conv), EventType.TOOL_RESULT)
    assert bad["isError"] and "no words" in bad["content"]


async def test_the_demo_model_recalls_with_the_tool_offline(services, recaller) -> None:
    async def say(text: str, conversation: str | None) -> list[RunEvent]:
        stream = services.runs.stream(
            LOCAL, agent_id="offline", message=text, conversation_uuid=conversation
        )
        return [event async for event in stream]

    first = await say("I keep bees on the roof.", None)
    conv = of_type(first, EventType.SESSION)[0]["conversationId"]
    events = await say("What did I say about bees?", conv)
    (call,) = of_type(events, EventType.TOOL_CALL)
    assert call["name"] == "recall" and json.loads(call["arguments"]) == {"query": "bees"}
    answer = of_type(events, EventType.RESULT)[0]
    assert "I keep bees on the roof." in answer["content"]


async def test_recall_searches_only_the_callers_own_conversation(
    services, fake_llm, recaller
) -> None:
    other = await services.runs.execute_sync(
        LOCAL, agent_id="recaller", message="the secret word is heliotrope"
    )
    assert other.status.value == "complete"
    fake_llm.script.replies = [Reply(calls=[Call("call_h", "recall", '{"query": "heliotrope"}')])]
    stream = services.runs.stream(LOCAL, agent_id="recaller", message="a fresh conversation")
    events = [event async for event in stream]
    (result,) = of_type(events, EventType.TOOL_RESULT)
    assert result["content"] == "Nothing earlier in this conversation matches 'heliotrope'."


async def test_recall_can_also_be_named_among_the_built_ins(services, recaller) -> None:
    info = await services.agents.info("listed")
    assert [(t.name, t.source, t.available) for t in info.tools] == [
        ("calculator", "builtin", True),
        ("recall", "builtin", True),
    ]
