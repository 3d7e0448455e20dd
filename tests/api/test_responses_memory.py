"""The Responses and Conversations services on each database (SQLite, MariaDB,
PostgreSQL) with real Redis: a response continued by id stores the input's earlier items
before its question, once; conversation items page both ways; another owner's ids are
not found."""

from __future__ import annotations

import pytest

from lumina_app.composition import open_services
from lumina_app.domain import ConversationBusy, NotFound, Principal
from lumina_app.domain.access import Via
from lumina_app.domain.transcript import Line
from lumina_app.services.openai_gateway import Found
from lumina_app.services.responses import ResponseTurn, response_id


@pytest.fixture
async def services(settings_factory, database):
    """Services on each of the three databases."""
    opened = await open_services(settings_factory(database_url=database.url))
    yield opened
    await opened.close()


ALICE = Principal(owner="alice", via=Via.API_KEY)
BOB = Principal(owner="bob", via=Via.API_KEY)


async def test_a_continued_response_stores_its_new_items_once(services) -> None:
    first = await services.responses.start_response(
        ALICE, ResponseTurn("demo", [Line("user", "q1")])
    )
    await first.run.done.wait()
    previous = response_id(first.run.run_id)
    lines = [
        Line("system", "be kind"),
        Line("user", "q2"),
        Line("assistant", "a2"),
        Line("user", "q3"),
    ]
    second = await services.responses.start_response(ALICE, ResponseTurn("demo", lines, previous))
    await second.run.done.wait()
    assert second.conversation_uuid == first.conversation_uuid
    msgs = await services.reads.archive.final_messages(second.run.conversation)
    contents = [m.content for m in msgs]
    assert contents[0] == "q1" and contents[2:5] == ["q2", "a2", "q3"] and len(msgs) == 6
    with pytest.raises(NotFound):
        await services.responses.start_response(
            BOB, ResponseTurn("demo", [Line("user", "x")], previous)
        )
    with pytest.raises(NotFound):
        await services.responses.get(BOB, previous)
    view = await services.responses.get(ALICE, previous)
    assert (
        view.content == first.run.result.content and view.message_id == first.run.result.message_id
    )


async def test_conversation_items_page_both_ways(services) -> None:
    chats = services.openai_conversations
    lines = [Line("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(5)]
    view, saved = await chats.create(ALICE, metadata={"agent": "demo"}, items=lines)
    conv = "conv_" + view.conversation.uuid
    assert [m.content for m in saved] == [f"m{i}" for i in range(5)]
    forward = await chats.items(ALICE, conv, limit=2, after=None, descending=False)
    assert [m.content for m in forward.items] == ["m0", "m1"] and forward.has_more
    nxt = await chats.items(
        ALICE, conv, limit=10, after=f"msg_{forward.items[-1].id}", descending=False
    )
    assert [m.content for m in nxt.items] == ["m2", "m3", "m4"] and not nxt.has_more
    back = await chats.items(ALICE, conv, limit=2, after=None, descending=True)
    assert [m.content for m in back.items] == ["m4", "m3"] and back.has_more
    added = await chats.add(ALICE, conv, [Line("user", "m5")])
    assert (await chats.item(ALICE, conv, f"msg_{added[0].id}")).content == "m5"
    for call in (
        chats.get(BOB, conv),
        chats.item(BOB, conv, f"msg_{added[0].id}"),
        chats.item(ALICE, conv, "msg_x1"),
        chats.delete(BOB, conv),
    ):
        with pytest.raises(NotFound):
            await call
    await chats.delete(ALICE, conv)
    with pytest.raises(NotFound):
        await chats.get(ALICE, conv)


async def test_a_session_key_finds_its_conversation(services) -> None:
    turn = ResponseTurn("demo", [Line("user", "k1")], session_key="sess-42")
    first = await services.responses.start_response(ALICE, turn)
    await first.run.done.wait()
    again = ResponseTurn("demo", [Line("user", "k2")], session_key="sess-42")
    second = await services.responses.start_response(ALICE, again)
    await second.run.done.wait()
    assert second.found is Found.KEYED and second.conversation_uuid == first.conversation_uuid
    other = await services.responses.start_response(BOB, again)
    await other.run.done.wait()
    assert other.found is Found.NEW and other.conversation_uuid != first.conversation_uuid
    meta = await services.reads.gateway.gateway_meta(first.run.conversation)
    assert "sess-42" not in str(meta)  # recorded as a hash, never the key itself


async def test_deleting_a_response_keeps_its_messages(services, fake_llm) -> None:
    first = await services.responses.start_response(
        ALICE, ResponseTurn("demo", [Line("user", "d1")])
    )
    await first.run.done.wait()
    gone = response_id(first.run.run_id)
    with pytest.raises(NotFound):
        await services.responses.delete(BOB, gone)
    await services.responses.delete(ALICE, gone)
    for call in (
        services.responses.get(ALICE, gone),
        services.responses.delete(ALICE, gone),
        services.responses.start_response(ALICE, ResponseTurn("demo", [Line("user", "x")], gone)),
    ):
        with pytest.raises(NotFound):
            await call
    msgs = await services.reads.archive.final_messages(first.run.conversation)
    assert [m.content for m in msgs][:1] == ["d1"] and len(msgs) == 2
    fake_llm.script.delay = 0.2
    running = await services.responses.start_response(
        ALICE, ResponseTurn("tester", [Line("user", "r")])
    )
    with pytest.raises(ConversationBusy):
        await services.responses.delete(ALICE, response_id(running.run.run_id))
    await running.run.done.wait()
    await services.responses.delete(ALICE, response_id(running.run.run_id))
