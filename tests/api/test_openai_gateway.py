"""The OpenAI-compatible gateway against a running server, through the real `openai` SDK
(sync and async, streamed and not) and langchain-openai's ChatOpenAI: answers, the
conversation header, history re-sent in full kept as one conversation with no row twice,
the model given Lumina's memory, the client's system prompt, errors in OpenAI's shape, and
Lumina's own `openai` provider pointed at another Lumina's /v1."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.conftest import write_agent
from tests.fake_llm import FakeLLM, Script
from tests.server import AppServer

ANSWER = "Hello from the fake LLM."
HEADER = "x-lumina-conversation-id"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(autouse=True)
def _fresh_script(fake: FakeLLM) -> None:
    fake.script = Script()
    fake.requests.clear()


def _start(workdir: Path, agents: dict[str, tuple[dict, dict]]) -> AppServer:
    server = AppServer(workdir, backend_only=True, env={"LUMINA_REDIS_URL": ""})
    server.prepare()
    for agent_id, (config, prompts) in agents.items():
        write_agent(server.data_dir / "agents", agent_id, config, prompts)
    server.start()
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Iterator[AppServer]:
    model = {"provider": "openai", "base_url": fake.base_url, "model": "fake-1"}
    started = _start(
        tmp_path_factory.mktemp("gateway"),
        {
            "echo": ({"name": "Echo", **model}, {"agent.md": "You are Echo."}),
            "open": (
                {"name": "Open", "allowClientSystemPrompt": True, **model},
                {"agent.md": "You are Open."},
            ),
        },
    )
    yield started
    started.stop()


@pytest.fixture
def client(server: AppServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0) as sdk:
        yield sdk


def _messages(server: AppServer, conversation_id: str) -> list[dict]:
    page = httpx.get(
        f"{server.url}/api/v1/conversations/{conversation_id}/messages", params={"limit": 100}
    )
    assert page.status_code == 200, page.text
    return page.json()["items"]


def _conversations(server: AppServer, agent_id: str) -> list[dict]:
    page = httpx.get(f"{server.url}/api/v1/conversations", params={"agentId": agent_id})
    return page.json()["items"]


def test_models_are_the_agents(client: openai.OpenAI) -> None:
    models = list(client.models.list())
    assert {"echo", "open", "assistant"} <= {model.id for model in models}
    assert all(m.object == "model" and m.owned_by == "lumina" and m.created for m in models)


def test_a_completion_names_its_conversation(client: openai.OpenAI, server: AppServer) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="echo", messages=[{"role": "user", "content": "hi there"}]
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens == 11
    conversation = raw.headers[HEADER]
    roles = [(m["role"], m["content"]) for m in _messages(server, conversation)]
    assert roles == [("USER", "hi there"), ("ASSISTANT", ANSWER)]


def test_streaming_with_usage(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="echo",
        messages=[{"role": "user", "content": "stream please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 5
    assert all(c.object == "chat.completion.chunk" for c in chunks)


async def test_async_sdk_streamed_and_not(server: AppServer) -> None:
    async with openai.AsyncOpenAI(
        base_url=server.url + "/v1", api_key="unused", max_retries=0
    ) as sdk:
        completion = await sdk.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "async"}]
        )
        assert completion.choices[0].message.content == ANSWER
        stream = await sdk.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "async stream"}], stream=True
        )
        text = [c.choices[0].delta.content or "" async for c in stream if c.choices]
        assert "".join(text) == ANSWER


def test_resent_history_keeps_one_conversation(
    client: openai.OpenAI, server: AppServer, fake: FakeLLM
) -> None:
    """Open WebUI's way: every request carries the whole history, and no id."""
    history = [{"role": "system", "content": "client prompt"}]
    conversations = set()
    for question in ("first question 7f3a", "second question", "third question"):
        history.append({"role": "user", "content": question})
        raw = client.chat.completions.with_raw_response.create(model="echo", messages=history)
        conversations.add(raw.headers[HEADER])
        history.append({"role": "assistant", "content": raw.parse().choices[0].message.content})
    assert len(conversations) == 1
    stored = _messages(server, conversations.pop())
    assert [(m["role"], m["content"]) for m in stored] == [
        ("USER", "first question 7f3a"),
        ("ASSISTANT", ANSWER),
        ("USER", "second question"),
        ("ASSISTANT", ANSWER),
        ("USER", "third question"),
        ("ASSISTANT", ANSWER),
    ]
    # The model was given Lumina's memory: the agent's prompt (not the client's, which this
    # agent does not allow) and the stored turns.
    sent = fake.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are Echo."}
    assert [m["content"] for m in sent[1:]] == [
        "first question 7f3a",
        ANSWER,
        "second question",
        ANSWER,
        "third question",
    ]


def test_history_from_elsewhere_is_stored_first(client: openai.OpenAI, server: AppServer) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="echo",
        messages=[
            {"role": "user", "content": "asked elsewhere 91c2"},
            {"role": "assistant", "content": [{"type": "text", "text": "answered elsewhere"}]},
            {"role": "user", "content": "and now here"},
        ],
    )
    stored = _messages(server, raw.headers[HEADER])
    assert [(m["role"], m["content"]) for m in stored] == [
        ("USER", "asked elsewhere 91c2"),
        ("ASSISTANT", "answered elsewhere"),
        ("USER", "and now here"),
        ("ASSISTANT", ANSWER),
    ]


def test_the_header_names_the_conversation(
    client: openai.OpenAI, server: AppServer, fake: FakeLLM
) -> None:
    first = client.chat.completions.with_raw_response.create(
        model="echo", messages=[{"role": "user", "content": "remember 4242"}]
    )
    conversation = first.headers[HEADER]
    second = client.chat.completions.with_raw_response.create(
        model="echo",
        messages=[{"role": "user", "content": "what number?"}],
        extra_headers={"X-Lumina-Conversation-Id": conversation},
    )
    assert second.headers[HEADER] == conversation
    sent = [m["content"] for m in fake.requests[-1]["messages"]]
    assert sent == ["You are Echo.", "remember 4242", ANSWER, "what number?"]
    third = client.chat.completions.with_raw_response.create(
        model="echo",
        messages=[{"role": "user", "content": "and again"}],
        metadata={"conversation_id": conversation},
    )
    assert third.headers[HEADER] == conversation
    assert len(_messages(server, conversation)) == 6


def test_client_system_prompt_only_where_allowed(client: openai.OpenAI, fake: FakeLLM) -> None:
    messages = [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "ahoy"},
    ]
    ignored = client.chat.completions.with_raw_response.create(model="echo", messages=messages)
    assert ignored.headers["x-lumina-system-prompt"] == "ignored"
    assert fake.requests[-1]["messages"][0]["content"] == "You are Echo."
    applied = client.chat.completions.with_raw_response.create(model="open", messages=messages)
    assert applied.headers["x-lumina-system-prompt"] == "applied"
    assert fake.requests[-1]["messages"][0]["content"] == "You are a pirate."
    # Stored once as the conversation's meta: the next turn by id needs not send it again.
    again = client.chat.completions.with_raw_response.create(
        model="open",
        messages=[{"role": "user", "content": "still a pirate?"}],
        extra_headers={"X-Lumina-Conversation-Id": applied.headers[HEADER]},
    )
    assert again.headers["x-lumina-system-prompt"] == "applied"
    assert fake.requests[-1]["messages"][0]["content"] == "You are a pirate."


def test_errors_in_openai_shape(client: openai.OpenAI, server: AppServer) -> None:
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="nobody", messages=[{"role": "user", "content": "x"}])
    assert missing.value.body["type"] == "not_found_error"
    with pytest.raises(openai.BadRequestError) as tools:
        client.chat.completions.create(
            model="echo",
            messages=[{"role": "user", "content": "x"}],
            tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
        )
    assert "tools" in tools.value.message and tools.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="echo", messages=[])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model="echo", messages=[{"role": "assistant", "content": "last is not a question"}]
        )
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(
            model="echo",
            messages=[{"role": "user", "content": "x"}],
            extra_headers={"X-Lumina-Conversation-Id": "00000000-0000-4000-8000-000000000000"},
        )
    for bad in (b"{", b'{"model": 3}', "\ud800".encode("utf-8", "surrogatepass")):
        resp = httpx.post(
            server.url + "/v1/chat/completions",
            content=bad,
            headers={"Content-Type": "application/json"},
        )
        assert resp.status_code == 400, resp.text
        assert set(resp.json()["error"]) == {"message", "type", "param", "code"}
    huge = httpx.post(server.url + "/v1/chat/completions", content=b"x" * (2 * 1024**2))
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "invalid_request_error"
    unknown = httpx.get(server.url + "/v1/embeddings")
    assert unknown.status_code == 404 and unknown.json()["error"]["message"]
    wrong_method = httpx.put(server.url + "/v1/models")
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "GET"


def test_one_active_run_per_conversation(
    client: openai.OpenAI, server: AppServer, fake: FakeLLM
) -> None:
    first = client.chat.completions.with_raw_response.create(
        model="echo", messages=[{"role": "user", "content": "busy test"}]
    )
    conversation = first.headers[HEADER]
    fake.script = Script(delay=0.3)
    stream = client.chat.completions.create(
        model="echo",
        messages=[{"role": "user", "content": "slow"}],
        stream=True,
        extra_headers={"X-Lumina-Conversation-Id": conversation},
    )
    with pytest.raises(openai.ConflictError) as busy:
        client.chat.completions.create(
            model="echo",
            messages=[{"role": "user", "content": "meanwhile"}],
            extra_headers={"X-Lumina-Conversation-Id": conversation},
        )
    assert busy.value.body["type"] == "conflict_error"
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == ANSWER


def test_idempotency_key_replays(client: openai.OpenAI, server: AppServer) -> None:
    body = {"model": "echo", "messages": [{"role": "user", "content": "once only 5d1e"}]}
    headers = {"Idempotency-Key": "gateway-key-1"}
    first = client.chat.completions.with_raw_response.create(**body, extra_headers=headers)
    second = client.chat.completions.with_raw_response.create(**body, extra_headers=headers)
    assert first.parse().id == second.parse().id
    assert first.headers[HEADER] == second.headers[HEADER]
    assert len(_messages(server, first.headers[HEADER])) == 2


def test_langchain_chat_openai(server: AppServer) -> None:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(model="echo", base_url=server.url + "/v1", api_key="unused", max_retries=0)
    assert chat.invoke([HumanMessage("langchain 31f0")]).content == ANSWER
    history = [HumanMessage("langchain 31f0"), AIMessage(ANSWER), HumanMessage("go on")]
    assert "".join(chunk.content for chunk in chat.stream(history)) == ANSWER
    matching = [c for c in _conversations(server, "echo") if c["title"] == "langchain 31f0"]
    assert len(matching) == 1 and matching[0]["messageCount"] == 4


def test_lumina_behind_lumina(
    tmp_path: Path, server: AppServer, client: openai.OpenAI, fake: FakeLLM
) -> None:
    """Dogfood: a Lumina whose agent's `openai` provider is this Lumina's /v1."""
    front = _start(
        tmp_path / "front",
        {"proxy": ({"provider": "openai", "base_url": server.url + "/v1", "model": "echo"}, {})},
    )
    try:
        body: dict[str, str] = {}
        for question in ("through two luminas", "and a second turn"):
            resp = httpx.post(
                f"{front.url}/api/v1/agents/proxy/execute/sync",
                json={"task": question, **body},
                timeout=30,
            )
            assert resp.status_code == 200, resp.text
            assert resp.json()["answer"] == ANSWER
            body = {"conversationId": resp.json()["conversationId"]}
    finally:
        front.stop()
    # The back Lumina kept the front's conversation as one of its own, no row twice.
    mirrored = [c for c in _conversations(server, "echo") if c["title"] == "through two luminas"]
    assert len(mirrored) == 1 and mirrored[0]["messageCount"] == 4


def _post(server: AppServer, body: dict) -> httpx.Response:
    return httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)


def _titles(server: AppServer) -> list[str]:
    page = httpx.get(server.url + "/api/v1/conversations", params={"agentId": "echo", "limit": 100})
    assert page.status_code == 200, page.text
    return [c["title"] for c in page.json()["items"]]


def test_earlier_messages_have_the_new_ones_caps(server: AppServer) -> None:
    """Issue 24, item 10: a history is held to the size and count caps of the new message,
    refused in OpenAI's shape before anything is matched or stored."""
    opening = {"role": "user", "content": "cap probe 7f3e"}
    empty = [{"role": "user"} if i % 2 else {"role": "assistant"} for i in range(9_998)]
    flood = {"model": "echo", "messages": [opening, *empty, {"role": "user", "content": "x"}]}
    started = time.monotonic()
    resp = _post(server, flood)
    took = time.monotonic() - started
    assert resp.status_code == 413, resp.text
    error = resp.json()["error"]
    assert error["type"] == "invalid_request_error" and "the limit is 1000" in error["message"]
    print(f"10,000 messages refused in {took * 1000:.0f} ms")

    too_long = {"role": "assistant", "content": "a" * 32_001}
    question = [{"role": "user", "content": "x"}]
    resp = _post(server, {"model": "echo", "messages": [opening, too_long, *question]})
    assert resp.status_code == 413 and "messages[1] is 32001 characters" in resp.text

    for hollow in ({"role": "user"}, {"role": "user", "content": "  "}):
        answer = {"role": "assistant", "content": "a"}
        resp = _post(server, {"model": "echo", "messages": [opening, answer, hollow, *question]})
        assert resp.status_code == 400, resp.text
        assert "messages[2]: a user message must have text" in resp.json()["error"]["message"]

    long_id = {"model": "echo", "messages": question, "metadata": {"conversation_id": "c" * 65}}
    resp = _post(server, long_id)
    assert resp.status_code == 400 and "metadata" in resp.json()["error"]["message"]
    many = {"model": "echo", "messages": question, "metadata": {f"k{i}": "v" for i in range(17)}}
    assert _post(server, many).status_code == 400
    assert "cap probe 7f3e" not in _titles(server)  # nothing of them was stored

    # at the cap, still accepted: 997 earlier messages after the opening, then the new one
    lines = [
        {"role": "assistant" if i % 2 else "user", "content": f"line {i}"} for i in range(1, 998)
    ]
    question = {"role": "user", "content": "last"}
    resp = _post(server, {"model": "echo", "messages": [opening, *lines, question]})
    assert resp.status_code == 200, resp.text
    conversation = httpx.get(f"{server.url}/api/v1/conversations/{resp.headers[HEADER]}")
    assert conversation.json()["messageCount"] == 1000  # 998 brought, the question, its answer
