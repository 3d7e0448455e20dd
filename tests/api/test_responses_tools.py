"""Client function tools through the Responses API, against a running server whose agent is
on the stand-in model (tests/fake_llm.py) scripted to call the client's tool: the tool is
offered to the model, its call comes back as a ``function_call`` item (JSON and streamed,
with ``response.function_call_arguments.*`` events), the client's
``function_call_output`` goes on with the same turn — the model then sees its call and the
output — and Lumina's transcript holds the call and its output once. Through the real
`openai` SDK and an OpenAI Agents SDK tool loop (whole history resent: found by matching).
Bad tool items and another owner's ids: 4xx in OpenAI's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

from tests.api.helpers import fake_model_server
from tests.fake_llm import Call, FakeLLM, Reply, Script
from tests.server import AppServer

KEYS = "ada:key-ada,bob:key-bob"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}
ARGS = '{"city": "Paris"}'


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Iterator[AppServer]:
    set_tracing_disabled(True)
    agents = {"echo": {"name": "Echo"}, "calc": {"name": "Calc", "tools": ["calculator"]}}
    workdir = tmp_path_factory.mktemp("responses-tools")
    with fake_model_server(workdir, KEYS, fake.base_url, agents) as up:
        yield up


@pytest.fixture
def client(server: AppServer, fake: FakeLLM) -> Iterator[openai.OpenAI]:
    fake.requests.clear()
    with openai.OpenAI(base_url=server.url + "/v1", api_key="key-ada", max_retries=0) as sdk:
        yield sdk
    fake.script = Script()


def _calls_then(fake: FakeLLM, call_id: str, answer: str) -> None:
    fake.script = Script(
        replies=[Reply(calls=[Call(call_id, "get_weather", ARGS)]), Reply(chunks=[answer])]
    )


def _rows(server: AppServer, uuid: str) -> list[dict]:
    page = httpx.get(
        f"{server.url}/api/v1/conversations/{uuid}/messages",
        params={"limit": 100},
        headers={"Authorization": "Bearer key-ada"},
    )
    assert page.status_code == 200, page.text
    return page.json()["items"]


def _offered(request: dict) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def test_a_call_of_the_clients_tool_and_its_output(
    client: openai.OpenAI, fake: FakeLLM, server: AppServer
) -> None:
    _calls_then(fake, "call_w1", "It is sunny in Paris.")
    first = client.responses.create(model="echo", input="Weather in Paris?", tools=[WEATHER])
    assert "get_weather" in _offered(fake.requests[0])
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1 and first.status == "completed"
    assert (calls[0].call_id, calls[0].name, json.loads(calls[0].arguments)) == (
        "call_w1",
        "get_weather",
        {"city": "Paris"},
    )
    assert first.tools[0].name == "get_weather"
    # The client ran it; only its output goes back, continued by previous_response_id.
    second = client.responses.create(
        model="echo",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_w1", "output": "sunny, 21 C"}],
        tools=[WEATHER],
    )
    assert second.output_text == "It is sunny in Paris." and second.status == "completed"
    sent = fake.requests[1]["messages"]
    asked = next(m for m in sent if m.get("tool_calls"))
    assert asked["tool_calls"][0]["id"] == "call_w1"
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 21 C"}
    assert [m["content"] for m in sent if m["role"] == "user"][-1] == "Weather in Paris?"
    # Lumina's transcript: the question, the answer that asked, the output, the answer.
    rows = _rows(server, first.metadata["lumina_conversation_id"])
    assert [row["role"] for row in rows] == ["USER", "ASSISTANT", "TOOL", "ASSISTANT"]
    assert rows[2]["content"] == "sunny, 21 C"
    # GET: the stored call, and the previous response echoed.
    stored = client.responses.retrieve(first.id)
    assert [item.type for item in stored.output] == ["message", "function_call"]
    assert client.responses.retrieve(second.id).previous_response_id == first.id
    inputs = client.responses.input_items.list(second.id).data
    assert [item.type for item in inputs] == ["function_call_output"]
    run = "run-" + second.id.removeprefix("resp_")
    context = httpx.get(
        f"{server.url}/api/v1/runs/{run}/context", headers={"Authorization": "Bearer key-ada"}
    )
    assert context.status_code == 200, context.text
    # Its question is the turn's, and the model saw the call and its output after it.
    shown = context.json()["messages"]
    assert [m["content"] for m in shown if m["role"] == "user"] == ["Weather in Paris?"]
    assert shown[-1] == {"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 21 C"}
    # The call is answered: the same output again is no pending call.
    with pytest.raises(openai.BadRequestError) as again:
        client.responses.create(
            model="echo",
            previous_response_id=second.id,
            input=[{"type": "function_call_output", "call_id": "call_w1", "output": "x"}],
        )
    assert "no pending call" in again.value.message


def test_streamed_function_call_events(
    client: openai.OpenAI, fake: FakeLLM, server: AppServer
) -> None:
    _calls_then(fake, "call_s1", "Sunny, streamed.")
    with client.responses.stream(model="echo", input="Weather?", tools=[WEATHER]) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [e.item.type for e in added] == ["message", "function_call"]
    assert added[1].output_index == 1 and added[1].item.call_id == "call_s1"
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == ARGS and done.item_id == added[1].item.id
    assert kinds.index("response.function_call_arguments.delta") < kinds.index(
        "response.function_call_arguments.done"
    )
    assert [item.type for item in final.output] == ["message", "function_call"]
    streamed = client.responses.create(
        model="echo",
        previous_response_id=final.id,
        input=[{"type": "function_call_output", "call_id": "call_s1", "output": "sunny"}],
        stream=True,
    )
    last = list(streamed)[-1]
    assert last.type == "response.completed"
    assert last.response.output[0].content[0].text == "Sunny, streamed."


async def test_an_agents_sdk_tool_loop(server: AppServer, fake: FakeLLM) -> None:
    ran: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}"

    fake.requests.clear()
    _calls_then(fake, "call_a1", "It is sunny in Paris, says the tool.")
    async with openai.AsyncOpenAI(
        base_url=server.url + "/v1", api_key="key-ada", max_retries=0
    ) as sdk:
        agent = Agent(
            name="Lumina",
            instructions="Use the tool.",
            model=OpenAIResponsesModel(model="echo", openai_client=sdk),
            tools=[get_weather],
        )
        result = await Runner.run(agent, "Agents SDK: weather in Paris?")
        assert ran == ["Paris"]
        assert result.final_output == "It is sunny in Paris, says the tool."
        assert fake.requests[1]["messages"][-1]["content"] == "sunny in Paris"
        # No state: the next turn resends it all, tool items too — still one conversation.
        fake.script = Script(replies=[Reply(chunks=["Still sunny."])])
        resent = [*result.to_input_list(), {"role": "user", "content": "And tomorrow?"}]
        again = await Runner.run(agent, resent)
    assert again.final_output == "Still sunny."
    sent = fake.requests[2]["messages"]
    assert [m["role"] for m in sent[-5:]] == ["user", "assistant", "tool", "assistant", "user"]
    assert [m["content"] for m in sent if m["role"] == "user"][-2:] == [
        "Agents SDK: weather in Paris?",
        "And tomorrow?",
    ]
    fake.script = Script()


@pytest.mark.parametrize(
    "body",
    [
        {"model": "echo", "input": "x", "tools": [{"type": "function", "name": "bad name"}]},
        {"model": "echo", "input": "x", "tools": [{"type": "function"}]},
        {"model": "echo", "input": "x", "tools": [WEATHER, WEATHER]},
        {"model": "echo", "input": [{"type": "item_reference", "id": "msg_1"}]},
        {"model": "echo", "input": [{"type": "function_call_output", "call_id": "c"}]},
        {
            "model": "echo",
            "input": [{"type": "function_call_output", "call_id": "zz", "output": 3}],
        },
        {
            "model": "echo",
            "input": [{"type": "function_call_output", "call_id": "q", "output": "o"}],
        },
    ],
)
def test_bad_tool_input_is_a_400_in_openai_shape(server: AppServer, body: dict) -> None:
    resp = httpx.post(
        server.url + "/v1/responses", json=body, headers={"Authorization": "Bearer key-ada"}
    )
    assert resp.status_code == 400, resp.text
    assert set(resp.json()["error"]) == {"message", "type", "param", "code"}


def test_reasoning_items_are_accepted_and_ignored(client: openai.OpenAI, fake: FakeLLM) -> None:
    answer = client.responses.create(
        model="echo",
        input=[
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {"role": "user", "content": "after reasoning"},
        ],
    )
    assert answer.output_text == "Hello from the fake LLM."
    assert fake.requests[-1]["messages"][-1] == {"role": "user", "content": "after reasoning"}


def test_another_owners_call_is_not_found(client: openai.OpenAI, fake: FakeLLM) -> None:
    _calls_then(fake, "call_b1", "never")
    first = client.responses.create(model="echo", input="Weather, Bob?", tools=[WEATHER])
    output = [{"type": "function_call_output", "call_id": "call_b1", "output": "mine"}]
    bob = openai.OpenAI(base_url=str(client.base_url), api_key="key-bob", max_retries=0)
    with bob, pytest.raises(openai.NotFoundError):
        bob.responses.create(model="echo", previous_response_id=first.id, input=output)
        with pytest.raises(openai.NotFoundError):
            bob.responses.create(model="echo", conversation=first.conversation.id, input=output)
        with pytest.raises(openai.BadRequestError):  # unnamed: none of Bob's has it pending
            bob.responses.create(model="echo", input=output)


def test_an_idempotency_key_starts_one_response(
    client: openai.OpenAI, fake: FakeLLM, server: AppServer
) -> None:
    key = {"Idempotency-Key": "resp-key-1"}
    first = client.responses.create(model="echo", input="once only", extra_headers=key)
    again = client.responses.create(model="echo", input="once only", extra_headers=key)
    assert again.id == first.id and again.output_text == first.output_text
    assert len(fake.requests) == 1
    rows = _rows(server, first.metadata["lumina_conversation_id"])
    assert [row["content"] for row in rows].count("once only") == 1
    with pytest.raises(openai.BadRequestError) as other:
        client.responses.create(model="echo", input="another", extra_headers=key)
    assert "Idempotency-Key" in other.value.message
    streamed = {"Idempotency-Key": "resp-key-2"}
    events = list(
        client.responses.create(
            model="echo", input="streamed once", stream=True, extra_headers=streamed
        )
    )
    replayed = list(
        client.responses.create(
            model="echo", input="streamed once", stream=True, extra_headers=streamed
        )
    )
    assert len(fake.requests) == 2
    assert {e.type for e in replayed} == {e.type for e in events}  # the text in one delta
    assert [e.sequence_number for e in replayed] == list(range(len(replayed)))
    assert replayed[-1].response.id == events[-1].response.id
    assert replayed[-1].response.output_text == events[-1].response.output_text


def test_compaction_names_the_conversation(
    client: openai.OpenAI, fake: FakeLLM, server: AppServer
) -> None:
    first = client.responses.create(model="echo", input="My name is Ada, compacted.")
    compacted = client.responses.compact(model="echo", previous_response_id=first.id)
    assert compacted.object == "response.compaction"
    item = compacted.output[-1]
    assert item.type == "compaction" and item.encrypted_content
    after = client.responses.create(
        model="echo",
        input=[
            {"type": "compaction", "id": item.id, "encrypted_content": item.encrypted_content},
            {"role": "user", "content": "What is my name?"},
        ],
    )
    uuid = first.metadata["lumina_conversation_id"]
    assert after.metadata["lumina_conversation_id"] == uuid
    sent = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert sent[-2:] == ["My name is Ada, compacted.", "What is my name?"]  # from memory
    assert len(_rows(server, uuid)) == 4
    # A history no conversation has yet: compacting stores it in a new one.
    fresh = client.responses.compact(
        model="echo",
        input=[
            {"role": "user", "content": "Remember 7, compacted."},
            {"role": "assistant", "content": "Remembered."},
        ],
    )
    assert [o.type for o in fresh.output] == ["message", "compaction"]
    handle = fresh.output[-1].encrypted_content
    went_on = client.responses.create(
        model="echo",
        input=[
            {"role": "user", "content": "Remember 7, compacted."},
            {"type": "compaction", "encrypted_content": handle},
            {"role": "user", "content": "Which number?"},
        ],
    )
    rows = _rows(server, went_on.metadata["lumina_conversation_id"])
    assert [row["content"] for row in rows][:3] == [
        "Remember 7, compacted.",
        "Remembered.",
        "Which number?",
    ]
    bob = openai.OpenAI(base_url=str(client.base_url), api_key="key-bob", max_retries=0)
    with bob, pytest.raises(openai.NotFoundError):
        bob.responses.create(
            model="echo",
            input=[
                {"type": "compaction", "encrypted_content": handle},
                {"role": "user", "content": "mine?"},
            ],
        )
    with pytest.raises(openai.BadRequestError):
        client.responses.create(
            model="echo",
            input=[
                {"type": "compaction", "encrypted_content": "not-ours"},
                {"role": "user", "content": "x"},
            ],
        )


def test_the_demo_models_thoughts_stream_as_a_reasoning_item(client: openai.OpenAI) -> None:
    with client.responses.stream(model="assistant", input="/think Why is the sky blue?") as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [event.type for event in events]
    assert "response.reasoning_summary_text.delta" in kinds
    assert kinds.index("response.reasoning_summary_text.done") < kinds.index(
        "response.output_text.delta"
    )
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [(e.item.type, e.output_index) for e in added] == [("reasoning", 0), ("message", 1)]
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert {e.output_index for e in deltas} == {1}
    assert [item.type for item in final.output] == ["reasoning", "message"]
    thought = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert thought and final.output[0].summary[0].text == thought
    stored = client.responses.retrieve(final.id)
    assert [item.type for item in stored.output] == ["reasoning", "message"]
    assert stored.output[0].summary[0].text == thought
    plain = client.responses.create(model="assistant", input="/think again")
    assert [item.type for item in plain.output] == ["reasoning", "message"]


def test_a_compaction_trigger_answers_the_compaction_item(
    client: openai.OpenAI, fake: FakeLLM, server: AppServer
) -> None:
    """Codex ends its input with ``compaction_trigger`` to compact: no run, the output is
    the ``compaction`` item (JSON and streamed), and carrying it goes on in memory."""
    history = [
        {"role": "user", "content": "Remember 9, triggered."},
        {"role": "assistant", "content": "Remembered 9."},
    ]
    compacted = client.responses.create(
        model="echo", store=False, input=[*history, {"type": "compaction_trigger"}]
    )
    assert compacted.status == "completed" and not fake.requests  # the model was not asked
    assert [item.type for item in compacted.output] == ["compaction"]
    handle = compacted.output[0].encrypted_content
    uuid = compacted.metadata["lumina_conversation_id"]
    assert [row["content"] for row in _rows(server, uuid)] == [m["content"] for m in history]

    with client.responses.stream(
        model="echo", input=[*history, {"type": "compaction_trigger"}]
    ) as stream:
        events = list(stream)
    kinds = [event.type for event in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    final = events[-1].response
    assert final.output[0].type == "compaction"
    assert final.metadata["lumina_conversation_id"] == uuid  # the same conversation, once
    assert len(_rows(server, uuid)) == 2

    went_on = client.responses.create(
        model="echo",
        input=[
            {"type": "compaction", "encrypted_content": handle},
            {"role": "user", "content": "Which number, triggered?"},
        ],
    )
    assert went_on.metadata["lumina_conversation_id"] == uuid
    sent = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert sent[-2:] == ["Remember 9, triggered.", "Which number, triggered?"]
    # Not the last item: a 400 in OpenAI's shape.
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(model="echo", input=[{"type": "compaction_trigger"}, *history])
    assert "compaction_trigger" in refused.value.message


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_tool_named_like_the_agents_is_the_agents(
    client: openai.OpenAI, fake: FakeLLM, stream: bool
) -> None:
    """The rule: the agent's own tool wins; the client's of the same name is not offered,
    and a call of that name runs on the server — no ``function_call`` item, JSON or
    streamed."""
    fake.script = Script(
        replies=[
            Reply(calls=[Call("call_c1", "calculator", '{"expression": "6*7"}')]),
            Reply(chunks=["It is 42."]),
        ]
    )
    theirs = {**WEATHER, "name": "calculator", "description": "The client's own."}
    request = {"model": "calc", "input": "What is 6*7?", "tools": [theirs, WEATHER]}
    if stream:
        with client.responses.stream(**request) as streamed:
            events = list(streamed)
            final = streamed.get_final_response()
        added = [e.item.type for e in events if e.type == "response.output_item.added"]
        assert added == ["message"]
    else:
        final = client.responses.create(**request)
    assert [item.type for item in final.output] == ["message"]
    assert final.output_text == "It is 42."
    offered = fake.requests[0]["tools"]
    assert sorted(_offered(fake.requests[0])) == ["calculator", "get_weather"]
    ours = next(t for t in offered if t["function"]["name"] == "calculator")
    assert ours["function"]["description"] != "The client's own."
    result = next(m for m in fake.requests[1]["messages"] if m["role"] == "tool")
    assert result["tool_call_id"] == "call_c1" and "42" in result["content"]
