"""The Responses and Conversations APIs through the OpenAI Agents SDK against a running
server with the demo agent, in its four ways of keeping state: none (the whole history
resent), ``previous_response_id``, ``conversation_id``, and ``OpenAIConversationsSession``.
Each time the second turn's answer shows the first turn came from Lumina's memory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import openai
import pytest
from agents import (
    Agent,
    OpenAIConversationsSession,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)

from tests.server import AppServer

FIRST, SECOND = "My name is Ada.", "What is my name?"
REMEMBERED = "Your previous message was: “My name is Ada.”"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    set_tracing_disabled(True)
    started = AppServer(
        tmp_path_factory.mktemp("agents-sdk"), backend_only=True, env={"LUMINA_REDIS_URL": ""}
    )
    started.prepare()
    started.start()
    yield started
    started.stop()


@pytest.fixture
async def client(server: AppServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.url + "/v1", api_key="unused", max_retries=0
    ) as sdk:
        yield sdk


def _agent(client: openai.AsyncOpenAI) -> Agent:
    model = OpenAIResponsesModel(model="assistant", openai_client=client)
    return Agent(name="Lumina", instructions="Be helpful.", model=model)


async def test_no_state_the_history_resent(client: openai.AsyncOpenAI) -> None:
    agent = _agent(client)
    first = await Runner.run(agent, FIRST)
    resent = [*first.to_input_list(), {"role": "user", "content": SECOND}]
    second = await Runner.run(agent, resent)
    assert REMEMBERED in second.final_output
    assert "I can see 2 earlier messages" in second.final_output  # not stored twice


async def test_previous_response_id(client: openai.AsyncOpenAI) -> None:
    agent = _agent(client)
    first = await Runner.run(agent, FIRST)
    second = await Runner.run(agent, SECOND, previous_response_id=first.last_response_id)
    assert REMEMBERED in second.final_output


async def test_conversation_id_streamed(client: openai.AsyncOpenAI) -> None:
    agent = _agent(client)
    conversation = await client.conversations.create()
    await Runner.run(agent, FIRST, conversation_id=conversation.id)
    streamed = Runner.run_streamed(agent, SECOND, conversation_id=conversation.id)
    async for _event in streamed.stream_events():
        pass
    assert REMEMBERED in streamed.final_output


async def test_openai_conversations_session(client: openai.AsyncOpenAI) -> None:
    agent = _agent(client)
    session = OpenAIConversationsSession(openai_client=client)
    await Runner.run(agent, FIRST, session=session)
    second = await Runner.run(agent, SECOND, session=session)
    assert REMEMBERED in second.final_output
    items = await session.get_items()
    assert [item["role"] for item in items] == ["user", "assistant", "user", "assistant"]
