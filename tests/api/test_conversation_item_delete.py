"""``DELETE /v1/conversations/{id}/items/{item}`` on the three databases (with Redis as the
hot window): the Agents SDK's ``OpenAIConversationsSession.pop_item()`` and the ``openai``
SDK's ``conversations.items.delete``. A deleted item is gone from the listing, the next
turn's context (the window is rebuilt, a warm session dropped), recall's vectors and the
archive; an answer goes with its tool calls' results; another owner's item is a 404; an
item of a conversation whose turn is running is a 409."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest
from agents import (
    Agent,
    OpenAIConversationsSession,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)

from lumina_app.archive.format import HISTORY, TURN_LOG, conversation_dir
from lumina_app.domain import Msg, MsgRole
from tests.api.helpers import openai_sdk
from tests.waits import wait_until

KEYS = "ada:key-ada,bob:key-bob"


@pytest.fixture
async def site(api_factory, database):
    services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return services, client


def _sdk(client: httpx.AsyncClient, key: str = "key-ada") -> openai.AsyncOpenAI:
    return openai_sdk(client, key)


async def _turn(sdk: openai.AsyncOpenAI, conversation: str, text: str, model: str = "demo"):
    return await sdk.responses.create(model=model, input=text, conversation=conversation)


async def test_pop_item_with_the_agents_sdk(api_factory, database, data_dir) -> None:
    services, client = await api_factory(
        database_url=database.url, api_keys=KEYS, archive_mirror=True
    )
    set_tracing_disabled(True)
    sdk = _sdk(client)
    conversation = await sdk.conversations.create(metadata={"agent": "demo"})
    session = OpenAIConversationsSession(conversation_id=conversation.id, openai_client=sdk)
    agent = Agent(name="Lumina", model=OpenAIResponsesModel(model="demo", openai_client=sdk))
    await Runner.run(agent, "My name is Ada.", session=session)
    await Runner.run(agent, "What is my name?", session=session)

    uuid = conversation.id.removeprefix("conv_")
    found = await services.reads.lookup.get_conversation(uuid, owner="ada")
    second_turn = (await services.memory.load(found))[-1].turn_id
    folder = conversation_dir(data_dir, "demo", uuid)
    assert await services.mirror.drain()
    assert (folder / second_turn / TURN_LOG).is_file()

    popped = await session.pop_item()
    assert popped is not None and popped["role"] == "assistant"
    popped = await session.pop_item()
    assert popped is not None and popped["role"] == "user"
    assert "What is my name?" in json.dumps(popped["content"])
    items = await session.get_items()
    assert [item["role"] for item in items] == ["user", "assistant"]
    # The archive follows: history.json has the two left, the emptied turn has no log.
    assert await services.mirror.drain()
    history = json.loads((folder / HISTORY).read_text(encoding="utf-8"))
    assert [entry["content"] for entry in history][:1] == ["My name is Ada."]
    assert len(history) == 2
    assert not (folder / second_turn).exists()

    # The next turn's context is the two items left (the window was rebuilt, the warm
    # session of the two deleted rows dropped), not four.
    third = await Runner.run(agent, "Hello again.", session=session)
    assert "I can see 2 earlier messages" in third.final_output
    found = await services.reads.lookup.get_conversation(uuid, owner="ada")
    assert found.message_count == 4
    window = await services.memory.load(found)
    assert [m.content for m in window if m.role is MsgRole.USER] == [
        "My name is Ada.",
        "Hello again.",
    ]
    await sdk.close()


async def test_items_delete_with_the_openai_sdk(site) -> None:
    services, client = site
    sdk = _sdk(client)
    conversation = await sdk.conversations.create(metadata={"agent": "demo"})
    await _turn(sdk, conversation.id, "The code word is marmalade.")
    await _turn(sdk, conversation.id, "Remember the colour teal.")
    page = await sdk.conversations.items.list(conversation.id, order="asc")
    question = next(item for item in page.data if "marmalade" in item.content[0].text)
    uuid = conversation.id.removeprefix("conv_")
    found = await services.reads.lookup.get_conversation(uuid, owner="ada")
    deleted_seq = next(
        m.seq for m in await services.memory.load(found) if m.id == int(question.id[4:])
    )

    answer = await sdk.conversations.items.delete(question.id, conversation_id=conversation.id)
    assert answer.id == conversation.id and answer.object == "conversation"
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.items.retrieve(question.id, conversation_id=conversation.id)
    with pytest.raises(openai.NotFoundError):  # twice: the second finds nothing
        await sdk.conversations.items.delete(question.id, conversation_id=conversation.id)
    left = await sdk.conversations.items.list(conversation.id, order="asc")
    assert question.id not in [item.id for item in left.data]
    assert len(left.data) == 3

    found = await services.reads.lookup.get_conversation(uuid, owner="ada")
    # The hot window (Redis) holds what SQL holds, and is current: no rebuild needed.
    window = await services.memory.load(found)
    assert deleted_seq not in [m.seq for m in window]
    rebuilt = await services.memory.rebuild(found)
    assert [m.id for m in window] == [m.id for m in rebuilt]
    # Recall no longer finds it (its vector went with it; the lexical index too).
    recall = await client.get(
        f"/api/v1/conversations/{uuid}/recall",
        params={"q": "marmalade"},
        headers={"Authorization": "Bearer key-ada"},
    )
    assert recall.status_code == 200
    assert recall.json()["items"]  # the answer quoting it is still there
    assert deleted_seq not in [hit["seq"] for hit in recall.json()["items"]]
    # The next turn is answered from what is left: the first answer lost its question, and
    # a context never opens on an answer, so the second exchange is what the model sees.
    after = await _turn(sdk, conversation.id, "Anything else?")
    assert "I can see 2 earlier messages" in after.output_text
    await sdk.close()


async def test_an_answer_goes_with_its_tool_results(site) -> None:
    services, client = site
    sdk = _sdk(client)
    conversation = await sdk.conversations.create(metadata={"agent": "tester"})
    uuid = conversation.id.removeprefix("conv_")
    found = await services.reads.lookup.get_conversation(uuid, owner="ada")
    # A stored tool step, as a run writes it: an answer asking, the TOOL row answering.
    asking = Msg(MsgRole.ASSISTANT, "", turn_id="msg-t1", meta={"toolCalls": [
        {"id": "call_1", "name": "calculator", "arguments": "{}"}]})  # fmt: skip
    rows = [
        Msg(MsgRole.USER, "Add these.", turn_id="msg-t1"),
        asking,
        Msg.tool("2", call_id="call_1", name="calculator", turn_id="msg-t1"),
        Msg(MsgRole.ASSISTANT, "It is 2.", turn_id="msg-t1"),
    ]
    saved = await services.memory.append_history(found, rows)
    answer = await sdk.conversations.items.delete(
        f"msg_{saved[1].id}", conversation_id=conversation.id
    )
    assert answer.id == conversation.id
    found = await services.reads.lookup.get_conversation(uuid, owner="ada")
    left = await services.reads.context.rows_after(found, 0)
    assert [m.content for m in left] == ["Add these.", "It is 2."]
    assert found.message_count == 2
    await sdk.close()


async def test_another_owners_item_is_not_found(site) -> None:
    _services, client = site
    ada, bob = _sdk(client), _sdk(client, "key-bob")
    conversation = await ada.conversations.create(metadata={"agent": "demo"})
    await _turn(ada, conversation.id, "Mine.")
    item = (await ada.conversations.items.list(conversation.id)).data[0]
    with pytest.raises(openai.NotFoundError) as refused:
        await bob.conversations.items.delete(item.id, conversation_id=conversation.id)
    assert refused.value.body["type"] == "not_found_error"  # OpenAI's error shape
    for bad in ("msg_x", "msg_99999999999999999999", "other"):
        with pytest.raises(openai.NotFoundError):
            await ada.conversations.items.delete(bad, conversation_id=conversation.id)
    still = await ada.conversations.items.retrieve(item.id, conversation_id=conversation.id)
    assert still.id == item.id
    await ada.close()
    await bob.close()


async def test_an_item_of_a_running_turn_is_a_409(site, fake_llm) -> None:
    _services, client = site
    sdk = _sdk(client)
    fake_llm.release.clear()
    fake_llm.script.hold = lambda body: True
    conversation = await sdk.conversations.create(metadata={"agent": "tester"})
    running = asyncio.create_task(_turn(sdk, conversation.id, "Slow one.", model="tester"))
    await wait_until(lambda: fake_llm.requests, "the turn reached the model", within=20)
    items = await sdk.conversations.items.list(conversation.id)
    question = next(item for item in items.data if item.role == "user")
    with pytest.raises(openai.ConflictError) as busy:
        await sdk.conversations.items.delete(question.id, conversation_id=conversation.id)
    assert "busy" in busy.value.message
    fake_llm.release.set()
    await running
    await sdk.conversations.items.delete(question.id, conversation_id=conversation.id)
    await sdk.close()
