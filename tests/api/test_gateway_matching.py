"""History matching through the gateway service on a real database and Redis: a re-sent
history continues the conversation a client saw even when its rows hold tool rounds,
replaced and failed answers; only the missing messages are stored; another owner's or
another agent's conversation is never continued."""

from __future__ import annotations

import pytest

from lumina_app.domain import ConversationBusy, MessageStatus, Msg, Principal
from lumina_app.domain.access import Via
from lumina_app.domain.transcript import Line, opening_hash
from lumina_app.services.openai_gateway import ChatTurn, Found

ALICE = Principal(owner="alice", via=Via.API_KEY)
BOB = Principal(owner="bob", via=Via.API_KEY)
U, A = "user", "assistant"


async def stored_conversation(services, owner: str = "alice"):
    """A gateway conversation whose rows a client saw as q1, a1, q2, a2."""
    memory = services.memory
    conversation = await memory.create_conversation(agent_id="demo", title="t", owner=owner)
    await services.reads.gateway.set_gateway_meta(conversation, opening=opening_hash("q1"), meta={})
    await memory.append_history(
        conversation,
        [
            Msg.user("q1", turn_id="t1"),
            Msg.assistant(
                "calling ",
                turn_id="t1",
                meta={"toolCalls": [{"id": "c1", "name": "calculator", "arguments": "{}"}]},
            ),
            Msg.tool("4", call_id="c1", name="calculator", turn_id="t1"),
            Msg.assistant("a1", turn_id="t1"),
            Msg.user("q2", turn_id="t2"),
            Msg.assistant("old", turn_id="t2", status=MessageStatus.SUPERSEDED),
            Msg.assistant("a2", turn_id="t2"),
            Msg.user("q3", turn_id="t3"),
            Msg.assistant("boom", turn_id="t3", status=MessageStatus.FAILED),
        ],
    )
    owned_by = Principal(owner=owner, via=Via.API_KEY)
    return await services.reads.lookup.find_visible(owned_by, conversation.uuid)


def history(*texts: str) -> list[Line]:
    return [Line(U if i % 2 == 0 else A, text) for i, text in enumerate(texts)]


async def finish(started) -> None:
    await started.run.done.wait()


async def test_a_resent_history_continues_what_the_client_saw(services) -> None:
    conversation = await stored_conversation(services)
    lines = [*history("q1", "calling a1", "q2", "a2", "q3"), Line(U, "q4")]
    started = await services.gateway.start_completion(ALICE, ChatTurn("demo", lines))
    await finish(started)
    assert started.found is Found.MATCHED
    assert started.conversation_uuid == conversation.uuid
    after = await services.reads.lookup.find_visible(ALICE, conversation.uuid)
    assert after.message_count == conversation.message_count + 2  # q4 and its answer only


async def test_messages_the_conversation_lacks_are_stored_first(services) -> None:
    conversation = await stored_conversation(services)
    lines = history("q1", "calling a1", "q2", "a2", "q3", "an answer from elsewhere", "q4")
    started = await services.gateway.start_completion(ALICE, ChatTurn("demo", lines))
    await finish(started)
    assert started.found is Found.MATCHED
    msgs = await services.reads.archive.final_messages(
        await services.reads.lookup.find_visible(ALICE, conversation.uuid)
    )
    assert [m.content for m in msgs[-3:-1]] == ["an answer from elsewhere", "q4"]
    assert len(msgs) == conversation.message_count + 3  # that answer, q4, the new answer


async def test_a_different_history_makes_a_new_conversation(services) -> None:
    conversation = await stored_conversation(services)
    lines = history("q1", "not what was answered", "q2")
    started = await services.gateway.start_completion(ALICE, ChatTurn("demo", lines))
    await finish(started)
    assert started.found is Found.CREATED
    assert started.conversation_uuid != conversation.uuid
    msgs = await services.reads.archive.final_messages(started.run.conversation)
    assert [m.content for m in msgs[:3]] == ["q1", "not what was answered", "q2"]


async def test_never_someone_elses_or_another_agents(services) -> None:
    theirs = await stored_conversation(services, owner="bob")
    lines = [*history("q1", "calling a1", "q2", "a2"), Line(U, "mine?")]
    started = await services.gateway.start_completion(ALICE, ChatTurn("demo", lines))
    await finish(started)
    assert started.found is Found.CREATED and started.conversation_uuid != theirs.uuid
    other_agent = await services.gateway.start_completion(BOB, ChatTurn("tester", lines))
    await finish(other_agent)
    assert other_agent.conversation_uuid != theirs.uuid


async def test_no_rows_slip_in_beside_a_running_turn(services, fake_llm) -> None:
    first = await services.gateway.start_completion(ALICE, ChatTurn("tester", [Line(U, "q1")]))
    await finish(first)
    answer = first.run.result.content
    fake_llm.script.delay = 0.2
    running = await services.gateway.start_completion(
        ALICE, ChatTurn("tester", history("q1", answer, "q2"))
    )
    assert running.found is Found.MATCHED
    resent = history("q1", answer, "q2", "an answer from elsewhere", "q3")
    with pytest.raises(ConversationBusy):
        await services.gateway.start_completion(ALICE, ChatTurn("tester", resent))
    await finish(running)
    msgs = await services.reads.archive.final_messages(running.run.conversation)
    assert [m.content for m in msgs] == ["q1", answer, "q2", running.run.result.content]


async def test_a_history_that_opens_with_a_greeting(services) -> None:
    greeting = Line(A, "Hi! How can I help?")
    first = await services.gateway.start_completion(
        ALICE, ChatTurn("demo", [greeting, Line(U, "hello 77")])
    )
    await finish(first)
    assert first.found is Found.CREATED
    answer = first.run.result.content
    lines = [greeting, Line(U, "hello 77"), Line(A, answer), Line(U, "next")]
    second = await services.gateway.start_completion(ALICE, ChatTurn("demo", lines))
    await finish(second)
    assert second.found is Found.MATCHED and second.conversation_uuid == first.conversation_uuid
    msgs = await services.reads.archive.final_messages(second.run.conversation)
    assert [m.content for m in msgs[:4]] == ["Hi! How can I help?", "hello 77", answer, "next"]
