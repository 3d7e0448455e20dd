"""``LuminaChatMessageHistory`` under LangChain's own ``RunnableWithMessageHistory`` with a
fake chat model from langchain-core: two turns, then a new client (a restarted app) whose
history comes from Lumina; the async methods; clear."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from lumina_client import AsyncLumina, Lumina, NotFoundError
from lumina_client.langchain import LuminaChatMessageHistory

from tests.server import AppServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated"),
]


def chain(client: Lumina, answers: list[str], seen: list[list[BaseMessage]]):
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{question}")]
    )

    def record(value):
        seen.append(value.to_messages())
        return value

    model = FakeListChatModel(responses=answers)
    return RunnableWithMessageHistory(
        prompt | RunnableLambda(record) | model,
        lambda session_id: LuminaChatMessageHistory(session_id, client=client),
        input_messages_key="question",
        history_messages_key="history",
    )


def test_two_turns_then_a_new_client_reads_the_history_from_lumina(server: AppServer) -> None:
    seen: list[list[BaseMessage]] = []
    with Lumina(server.url, api_key="key-alice") as first:
        conv = first.conversations.create("assistant", title="langchain")
        config = {"configurable": {"session_id": conv.id}}
        talk = chain(first, ["Hello Ada.", "You are Ada."], seen)
        assert talk.invoke({"question": "I am Ada."}, config).content == "Hello Ada."
        assert talk.invoke({"question": "Who am I?"}, config).content == "You are Ada."
        assert [m.content for m in seen[1][1:3]] == ["I am Ada.", "Hello Ada."]

    with Lumina(server.url, api_key="key-alice") as restarted:
        talk = chain(restarted, ["Still Ada."], seen)
        talk.invoke({"question": "And now?"}, {"configurable": {"session_id": conv.id}})
        history = seen[-1][1:-1]
        assert [(type(m), m.content) for m in history] == [
            (HumanMessage, "I am Ada."),
            (AIMessage, "Hello Ada."),
            (HumanMessage, "Who am I?"),
            (AIMessage, "You are Ada."),
        ]
        stored = list(restarted.messages.list(conv.id))
        assert [m.role for m in stored] == ["USER", "ASSISTANT"] * 3
        assert stored[-1].content == "Still Ada."
        assert restarted.recall("Ada")  # searchable like any conversation

    with (
        Lumina(server.url, api_key="key-bob") as bob,  # not Bob's conversation
        pytest.raises(NotFoundError),
    ):
        _ = LuminaChatMessageHistory(conv.id, client=bob).messages


def test_add_read_and_clear(server: AppServer) -> None:
    with Lumina(server.url, api_key="key-alice") as client:
        history = LuminaChatMessageHistory.new("assistant", client=client)
        history.add_messages([SystemMessage("Be brief."), HumanMessage("hi"), AIMessage("hello")])
        assert [type(m) for m in history.messages] == [SystemMessage, HumanMessage, AIMessage]
        with pytest.raises(ValueError):
            history.add_messages([ToolMessage("42", tool_call_id="c1")])
        history.clear()
        assert history.messages == []
        assert client.conversations.get(history.conversation_id)  # the conversation stays


async def test_async_methods(server: AppServer) -> None:
    with Lumina(server.url, api_key="key-alice") as client:
        async with AsyncLumina(server.url, api_key="key-alice") as aclient:
            history = LuminaChatMessageHistory.new("assistant", client=client, async_client=aclient)
            await history.aadd_messages([HumanMessage("ping"), AIMessage("pong")])
            assert [m.content for m in await history.aget_messages()] == ["ping", "pong"]
            assert [m.content for m in history.messages] == ["ping", "pong"]
            await history.aclear()
            assert await history.aget_messages() == []
            threaded = LuminaChatMessageHistory(history.conversation_id, client=client)
            await threaded.aadd_messages([HumanMessage("via a thread")])
            assert [m.content for m in await threaded.aget_messages()] == ["via a thread"]
