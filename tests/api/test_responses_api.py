"""The Responses API against a running server through the real `openai` SDK (sync, async,
streamed, ``responses.stream``) with the demo agent: a turn continued by
``previous_response_id`` or ``conversation`` gets its context from Lumina's memory, a
response validates as Open Responses' ``ResponseResource``, the stream's events come in
order, stored responses can be read, cancelled and asked for their input, and bad input or
another owner's id answers in OpenAI's error shape."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.api.helpers import fake_model_server
from tests.fake_llm import FakeLLM, Script
from tests.server import AppServer

KEYS = "ada:key-ada,bob:key-bob"
# Open Responses' ResponseResource: every one of its 31 fields is required.
RESOURCE_FIELDS = {
    "id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
    "previous_response_id", "instructions", "output", "error", "tools", "tool_choice",
    "truncation", "parallel_tool_calls", "text", "top_p", "presence_penalty",
    "frequency_penalty", "top_logprobs", "temperature", "reasoning", "usage",
    "max_output_tokens", "max_tool_calls", "store", "background", "service_tier", "metadata",
    "safety_identifier", "prompt_cache_key",
}  # fmt: skip
MESSAGE_FIELDS = {"type", "id", "status", "role", "content"}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Iterator[AppServer]:
    agents = {"echo": {"name": "Echo"}}
    with fake_model_server(tmp_path_factory.mktemp("responses"), KEYS, fake.base_url, agents) as up:
        yield up


def _sdk(server: AppServer, key: str = "key-ada") -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)


@pytest.fixture
def client(server: AppServer) -> Iterator[openai.OpenAI]:
    with _sdk(server) as sdk:
        yield sdk


def _messages(server: AppServer, conversation: str) -> list[tuple[str, str]]:
    page = httpx.get(
        f"{server.url}/api/v1/conversations/{conversation}/messages",
        params={"limit": 100},
        headers={"Authorization": "Bearer key-ada"},
    )
    assert page.status_code == 200, page.text
    return [(m["role"], m["content"]) for m in page.json()["items"]]


def _uuid(response: openai.types.responses.Response) -> str:
    return response.metadata["lumina_conversation_id"]


def test_two_turns_by_previous_response_id(client: openai.OpenAI, server: AppServer) -> None:
    first = client.responses.create(model="assistant", input="My name is Ada.")
    assert first.status == "completed" and first.id.startswith("resp_")
    raw = first.model_dump(mode="json")
    assert set(raw) >= RESOURCE_FIELDS and raw["error"] is None
    assert set(raw["output"][0]) >= MESSAGE_FIELDS and raw["output"][0]["id"].startswith("msg_")
    assert "start of our conversation" in first.output_text
    assert first.usage.output_tokens > 0 and first.conversation.id == "conv_" + _uuid(first)
    second = client.responses.create(
        model="assistant", input="What is my name?", previous_response_id=first.id
    )
    # Only the new input was sent: the first turn came from Lumina's memory.
    assert "Your previous message was: “My name is Ada.”" in second.output_text
    assert second.previous_response_id == first.id and _uuid(second) == _uuid(first)
    stored = _messages(server, _uuid(first))
    assert [role for role, _ in stored] == ["USER", "ASSISTANT", "USER", "ASSISTANT"]
    assert stored[2] == ("USER", "What is my name?")


def test_conversation_and_item_input(client: openai.OpenAI, server: AppServer) -> None:
    first = client.responses.create(
        model="assistant",
        input=[{"role": "user", "content": "Remember 4242."}],
        instructions="Be brief.",
        store=True,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "low"},
        truncation="auto",
        prompt_cache_key="k-1",
        extra_body={"client_metadata": {"x": "y"}, "context_management": [{"type": "x"}]},
    )
    assert first.instructions == "Be brief."
    conversation = first.conversation.id
    second = client.responses.create(
        model="assistant",
        conversation=conversation,
        input=[
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Which number?"}],
            }
        ],
    )
    assert "“Remember 4242.”" in second.output_text
    third = client.responses.create(
        model="assistant", conversation={"id": conversation}, input="and again"
    )
    assert "“Which number?”" in third.output_text
    assert len(_messages(server, _uuid(first))) == 6


def test_streamed(client: openai.OpenAI, server: AppServer) -> None:
    events = list(client.responses.create(model="assistant", input="stream me", stream=True))
    kinds = [event.type for event in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert set(kinds[4:-4]) == {"response.output_text.delta"} and len(kinds) > 9
    assert [event.sequence_number for event in events] == list(range(len(events)))
    ids = {events[0].response.id, events[-1].response.id}
    assert len(ids) == 1
    item = events[2].item.id
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert all((e.item_id, e.output_index, e.content_index) == (item, 0, 0) for e in deltas)
    done = events[-1].response
    text = "".join(e.delta for e in deltas)
    assert done.output_text == text == events[-4].text and done.error is None
    assert done.usage.total_tokens > 0 and done.output[0].id == item
    assert set(done.model_dump(mode="json")) >= RESOURCE_FIELDS
    # The streamed response is stored: the next turn continues it.
    again = client.responses.create(model="assistant", input="next", previous_response_id=done.id)
    assert "“stream me”" in again.output_text


def test_responses_stream_helper(client: openai.OpenAI) -> None:
    with client.responses.stream(model="assistant", input="helper 1") as stream:
        texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == "".join(texts)
    assert "“helper 1”" in final.output_text


async def test_async_sdk(server: AppServer) -> None:
    async with openai.AsyncOpenAI(
        base_url=server.url + "/v1", api_key="key-ada", max_retries=0
    ) as sdk:
        first = await sdk.responses.create(model="assistant", input="async one")
        stream = await sdk.responses.create(
            model="assistant", input="async two", previous_response_id=first.id, stream=True
        )
        final = None
        async for event in stream:
            if event.type == "response.completed":
                final = event.response
        assert final is not None and "“async one”" in final.output_text


def test_stored_response_get_input_items_cancel_delete(
    client: openai.OpenAI, server: AppServer
) -> None:
    created = client.responses.create(model="assistant", input="keep me 77")
    fetched = client.responses.retrieve(created.id)
    assert fetched.id == created.id and fetched.output_text == created.output_text
    assert fetched.status == "completed" and set(fetched.model_dump()) >= RESOURCE_FIELDS
    items = client.responses.input_items.list(created.id)
    assert [(i.role, i.content[0].text) for i in items.data] == [("user", "keep me 77")]
    cancelled = client.responses.cancel(created.id)  # already over: left as it is
    assert cancelled.status == "completed"
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    # The conversation keeps the turn: it is Lumina's memory, not the response object.
    assert len(_messages(server, _uuid(created))) == 2


def test_another_owners_ids_are_not_found(client: openai.OpenAI, server: AppServer) -> None:
    theirs = client.responses.create(model="assistant", input="secret of ada")
    with _sdk(server, "key-bob") as bob:
        for call in (
            lambda: bob.responses.retrieve(theirs.id),
            lambda: bob.responses.input_items.list(theirs.id),
            lambda: bob.responses.cancel(theirs.id),
            lambda: bob.responses.delete(theirs.id),
            lambda: bob.responses.create(
                model="assistant", input="x", previous_response_id=theirs.id
            ),
            lambda: bob.responses.create(
                model="assistant", input="x", conversation=theirs.conversation.id
            ),
        ):
            with pytest.raises(openai.NotFoundError) as missing:
                call()
            assert missing.value.body["type"] == "not_found_error"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve("resp_nonsense")
    with pytest.raises(openai.AuthenticationError):
        _sdk(server, "wrong").responses.create(model="assistant", input="x")


@pytest.mark.parametrize(
    "body",
    [
        {"model": "assistant"},
        {"model": "assistant", "input": []},
        {"model": "assistant", "input": [{"role": "robot", "content": "x"}]},
        {"model": "assistant", "input": [{"type": "function_call_output", "call_id": "c"}]},
        {"model": "assistant", "input": [{"role": "user", "content": [{"type": "input_image"}]}]},
        {"model": "assistant", "input": [{"role": "assistant", "content": "last is no question"}]},
        {"model": "assistant", "input": "nul \u0000"},
        {"model": "assistant", "input": "x", "conversation": "conv_nonsense"},
        {"model": 3, "input": "x"},
    ],
)
def test_bad_input_is_a_4xx_in_openai_shape(server: AppServer, body: dict) -> None:
    resp = httpx.post(
        server.url + "/v1/responses", json=body, headers={"Authorization": "Bearer key-ada"}
    )
    assert resp.status_code in (400, 404), resp.text
    assert set(resp.json()["error"]) == {"message", "type", "param", "code"}


def test_oversize_and_unknown_agent(server: AppServer, client: openai.OpenAI) -> None:
    huge = httpx.post(
        server.url + "/v1/responses",
        content=b'{"model": "assistant", "input": "' + b"x" * (2 * 1024**2) + b'"}',
        headers={"Authorization": "Bearer key-ada", "Content-Type": "application/json"},
    )
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "invalid_request_error"
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="nobody", input="x")


def test_conversations_round_trip(client: openai.OpenAI, server: AppServer) -> None:
    conversation = client.conversations.create(
        metadata={"topic": "pets"},
        items=[{"type": "message", "role": "user", "content": "My cat is Tom."}],
    )
    assert conversation.id.startswith("conv_") and conversation.metadata == {"topic": "pets"}
    assert client.conversations.retrieve(conversation.id).created_at == conversation.created_at
    updated = client.conversations.update(conversation.id, metadata={"topic": "cats"})
    assert client.conversations.retrieve(conversation.id).metadata == updated.metadata
    added = client.conversations.items.create(
        conversation.id, items=[{"role": "assistant", "content": "Noted: Tom."}]
    )
    assert [item.role for item in added.data] == ["assistant"]
    answer = client.responses.create(
        model="assistant", conversation=conversation.id, input="What is my cat called?"
    )
    assert "“My cat is Tom.”" in answer.output_text
    items = client.conversations.items.list(conversation.id, order="asc")
    assert [(i.role, i.content[0].text) for i in items.data][:3] == [
        ("user", "My cat is Tom."),
        ("assistant", "Noted: Tom."),
        ("user", "What is my cat called?"),
    ]
    assert len(items.data) == 4 and items.data[-1].id == answer.output[0].id
    newest = client.conversations.items.list(conversation.id, limit=1)
    assert newest.data[0].id == answer.output[0].id and newest.has_more
    older = client.conversations.items.list(conversation.id, limit=2, after=newest.data[0].id)
    assert [i.role for i in older.data] == ["user", "assistant"]
    one = client.conversations.items.retrieve(items.data[0].id, conversation_id=conversation.id)
    assert one.content[0].text == "My cat is Tom."
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve("msg_999999", conversation_id=conversation.id)
    with _sdk(server, "key-bob") as bob:
        with pytest.raises(openai.NotFoundError):
            bob.conversations.retrieve(conversation.id)
        with pytest.raises(openai.NotFoundError):
            bob.conversations.items.list(conversation.id)
        with pytest.raises(openai.NotFoundError):
            bob.conversations.delete(conversation.id)
    deleted = client.conversations.delete(conversation.id)
    assert deleted.deleted and deleted.id == conversation.id
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conversation.id)
    with pytest.raises(openai.BadRequestError):
        client.conversations.create(metadata={"agent": "assistant"}, items=[{"role": "x"}])


def test_resent_history_keeps_one_conversation(client: openai.OpenAI, server: AppServer) -> None:
    """Codex's and the stateless Agents SDK's way: ``store: false``, the whole history
    every turn (with the server's own item ids echoed back), developer messages."""
    history: list[dict] = [{"role": "developer", "content": "You are terse."}]
    conversations = set()
    for question in ("resent first 5c1d", "resent second", "resent third"):
        history.append({"type": "message", "role": "user", "content": question})
        answer = client.responses.create(model="assistant", input=history, store=False)
        assert answer.store is False
        conversations.add(_uuid(answer))
        history.append(answer.output[0].model_dump(mode="json", exclude_none=True))
    assert len(conversations) == 1
    stored = _messages(server, conversations.pop())
    assert [content for _, content in stored[::2]] == [
        "resent first 5c1d",
        "resent second",
        "resent third",
    ]
    assert len(stored) == 6  # no row twice
    assert "I can see 4 earlier messages" in stored[-1][1]


def test_a_session_key_finds_the_conversation(client: openai.OpenAI, server: AppServer) -> None:
    """``prompt_cache_key`` or Codex's ``session-id`` header, before history matching: a
    turn whose input does not replay the history still lands in its conversation, and
    only what the conversation lacks is stored."""
    first = client.responses.create(
        model="assistant", input="keyed first", store=False, prompt_cache_key="thread-a1"
    )
    second = client.responses.create(
        model="assistant", input="keyed second", store=False, prompt_cache_key="thread-a1"
    )
    assert _uuid(second) == _uuid(first)
    assert "“keyed first”" in second.output_text
    header = {"session-id": "codex-session-7"}
    third = client.responses.create(
        model="assistant", input="by header one", store=False, extra_headers=header
    )
    fourth = client.responses.create(
        model="assistant",
        input=[
            {"role": "user", "content": "by header one"},
            {"role": "assistant", "content": third.output_text},
            {"role": "user", "content": "an answer the server never saw?"},
            {"role": "assistant", "content": "from elsewhere"},
            {"role": "user", "content": "by header two"},
        ],
        store=False,
        extra_headers=header,
    )
    assert _uuid(fourth) == _uuid(third) != _uuid(first)
    assert [c for _, c in _messages(server, _uuid(third))][2:4] == [
        "an answer the server never saw?",
        "from elsewhere",
    ]
    assert len(_messages(server, _uuid(third))) == 6
    with _sdk(server, "key-bob") as bob:  # the same key of another owner is another session
        theirs = bob.responses.create(
            model="assistant", input="bob keyed", prompt_cache_key="thread-a1"
        )
    assert _uuid(theirs) != _uuid(first)
    assert "start of our conversation" in theirs.output_text


def test_one_active_run_and_cancel(client: openai.OpenAI, fake: FakeLLM) -> None:
    fake.script = Script(chunks=[f"w{i} " for i in range(60)], delay=0.05)
    stream = client.responses.create(model="echo", input="slow one", stream=True)
    events = iter(stream)
    created = next(events)
    assert created.type == "response.created" and created.response.status == "in_progress"
    with pytest.raises(openai.ConflictError) as busy:
        client.responses.create(
            model="echo", input="meanwhile", previous_response_id=created.response.id
        )
    assert busy.value.body["type"] == "conflict_error"
    cancelled = client.responses.cancel(created.response.id)
    assert cancelled.status == "cancelled"
    rest = list(events)
    assert rest[-1].type == "response.incomplete" and rest[-1].response.status == "cancelled"
    assert client.responses.retrieve(created.response.id).status == "cancelled"
    fake.script = Script()


def test_a_failed_model_is_a_failed_response(client: openai.OpenAI, fake: FakeLLM) -> None:
    fake.script = Script(error_status=400, error_message="context too long")
    failed = client.responses.create(model="echo", input="will fail")
    assert failed.status == "failed" and "context too long" in failed.error.message
    streamed = list(client.responses.create(model="echo", input="will fail", stream=True))
    assert streamed[-1].type == "response.failed"
    assert streamed[-1].response.error.message == failed.error.message
    fake.script = Script()


def test_a_conversation_keeps_its_agent(client: openai.OpenAI, fake: FakeLLM) -> None:
    conversation = client.conversations.create(metadata={"agent": "echo"})
    with pytest.raises(openai.BadRequestError) as other:
        client.responses.create(model="assistant", conversation=conversation.id, input="x")
    assert "'echo'" in other.value.message
    answer = client.responses.create(model="echo", conversation=conversation.id, input="hi")
    assert answer.output_text == "Hello from the fake LLM."
    with pytest.raises(openai.BadRequestError):
        client.conversations.update(conversation.id, metadata={"agent": "assistant"})
    fake.script = Script(chunks=[f"w{i} " for i in range(40)], delay=0.05)
    stream = client.responses.create(
        model="echo", conversation=conversation.id, input="slow", stream=True
    )
    events = iter(stream)
    assert next(events).type == "response.created"
    with pytest.raises(openai.ConflictError):  # no rows slipped in beside a running turn
        client.conversations.items.create(
            conversation.id, items=[{"role": "user", "content": "meanwhile"}]
        )
    assert list(events)[-1].type == "response.completed"
    fake.script = Script()
