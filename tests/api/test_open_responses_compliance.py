"""The Open Responses compliance suite (``openresponses/openresponses``,
``src/lib/compliance-tests.ts``), ported: its seven cases — basic text, streaming, system
prompt, client tool calling, tool calling streamed, image input, multi-turn — sent as it
sends them (``POST /v1/responses``, ``stream`` true or false) to a running Lumina server.
As there, every response must validate as the spec's ``ResponseResource`` and every stream
event as its streaming-event schema (``fixtures/open_responses_schemas.json``, extracted
from the spec's ``public/openapi/openapi.json`` version 2026-04-24), and then pass the
case's own checks.

The agent is on the stand-in model (tests/fake_llm.py), which calls a tool when it is
offered one and marked ``"vision": true``, so image input is answered; a text-only agent
(the demo model) refuses the image case with a 400 in OpenAI's error shape. The text cases
also run against the demo agent."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from tests.api.helpers import fake_model_server, parse_sse
from tests.fake_llm import Call, FakeLLM, Reply, Script
from tests.server import AppServer

KEY = "key-ada"
SPEC = json.loads((Path(__file__).parent / "fixtures" / "open_responses_schemas.json").read_text())
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {
        "type": "object",
        "properties": {
            "location": {
                "type": "string",
                "description": "The city and state, e.g. San Francisco, CA",
            }
        },
        "required": ["location"],
    },
}
# The suite's own image: a red heart icon on a white background (32x32 PNG).
HEART = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAABmklEQVR42tyWAaTyUBzFew"
    "/eG4AHz+MBSAHKBiJRGFKwIgQQJKLUIioBIhCAiCAAEizAQIAECaASqFFJq84nudjnaqvuPnxzgP9xfrq5938csPn7PwHT"
    "KSoViCIEAYEAMhmoKsU2mUCWEQqB5xEMIp/HaGQG2G6RSuH9HQ7H34rFrtPbdz4jl6PbwmEsl3QA1mt4vcRKk8dz9eg6"
    "IpF7tt9fzGY0gCgafFRFo5Blc5vLhf3eCOj1yNhM5GRMVK0aATxPZoz09YXjkQDmczJgquGQAPp9WwCNBgG027YACgUC"
    "6HRsAZRKBDAY2AJoNv/ZnwzA6WScznG3p4UAymXGAEkyXrTFAh8fLAGqagQAyGaZpYsi7bHTNPz8MEj//LxuFPo+UBS8"
    "vb0KaLXubrRa7aX0RMLCykwmn0z3+XA4WACcTpCkh9MFAZpmuVXo+mO/w+/HZvNgbblcUCxaSo/Hyck80Yu6XXDcvfVZ"
    "r79cvMZjuN2U9O9vKAqjZrfbIZ0mV4TUi9Xqz6jddNy//7+e3n8Fhf/Llo2kxi8AQyGRoDkmAhAAAAAASUVORK5CYII="
)


def _message(role: str, content: Any) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


# (id, request body without model, streamed): the suite's templates, in its order.
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("basic-response", {"input": [_message("user", "Say hello in exactly 3 words.")]}, False),
    ("streaming-response", {"input": [_message("user", "Count from 1 to 5.")]}, True),
    (
        "system-prompt",
        {
            "input": [
                _message("system", "You are a pirate. Always respond in pirate speak."),
                _message("user", "Say hello."),
            ]
        },
        False,
    ),
    (
        "tool-calling",
        {
            "input": [_message("user", "What's the weather like in San Francisco?")],
            "tools": [WEATHER],
        },
        False,
    ),
    (
        "tool-calling-streaming",
        {
            "input": [_message("user", "What's the weather like in San Francisco?")],
            "tools": [WEATHER],
        },
        True,
    ),
    (
        "image-input",
        {
            "input": [
                _message(
                    "user",
                    [
                        {
                            "type": "input_text",
                            "text": "What do you see in this image? Answer in one sentence.",
                        },
                        {"type": "input_image", "image_url": HEART},
                    ],
                )
            ]
        },
        False,
    ),
    (
        "multi-turn",
        {
            "input": [
                _message("user", "My name is Alice."),
                _message("assistant", "Hello Alice! Nice to meet you. How can I help you today?"),
                _message("user", "What is my name?"),
            ]
        },
        False,
    ),
]
TEXT_CASES = [case for case in CASES if case[0] not in ("tool-calling", "tool-calling-streaming")]


def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator({**SPEC, "$ref": f"#/components/schemas/{name}"})


RESOURCE = _validator("ResponseResource")
EVENTS = {
    _schema["properties"]["type"]["enum"][0]: _validator(name)
    for name, _schema in SPEC["components"]["schemas"].items()
    if name in SPEC["x-streaming-events"]
}


def _errors(validator: Draft202012Validator, document: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def _fake_model(body: dict) -> Reply:
    """The stand-in model: calls the weather tool when it is offered, else answers."""
    offered = [tool["function"]["name"] for tool in body.get("tools", [])]
    if "get_weather" in offered and body["messages"][-1]["role"] == "user":
        return Reply(calls=[Call("call_sf", "get_weather", '{"location": "San Francisco, CA"}')])
    return Reply(chunks=["Ahoy, ", "hello ", "there."])


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        server.script = Script(respond=_fake_model)
        yield server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Iterator[AppServer]:
    agents = {"compliance": {"name": "Compliance", "vision": True}}
    workdir = tmp_path_factory.mktemp("open-responses")
    with fake_model_server(workdir, f"ada:{KEY}", fake.base_url, agents) as up:
        yield up


def _run(server: AppServer, model: str, body: dict[str, Any], streaming: bool):
    """One case as the suite runs it: its body with ``stream``; the final response and the
    stream's events (a streamed response's final object is its terminal event's)."""
    response = httpx.post(
        f"{server.url}/v1/responses",
        json={"model": model, **body, "stream": streaming},
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=60,
    )
    assert response.status_code == 200, f"HTTP {response.status_code}: {response.text}"
    if not streaming:
        return response.json(), []
    events = [event.json for event in parse_sse(response.content) if event.data != "[DONE]"]
    terminal = ("response.completed", "response.failed", "response.incomplete")
    final = next((e["response"] for e in reversed(events) if e["type"] in terminal), None)
    return final, events


def _check(case: str, final: Any, events: list[dict[str, Any]], streaming: bool) -> None:
    errors = _errors(RESOURCE, final)
    if streaming:
        if not events:
            errors.append("No streaming events received")
        for event in events:
            validator = EVENTS.get(event.get("type"))
            if validator is None:
                errors.append(f"unknown event type {event.get('type')!r}")
                continue
            errors += [f"{event['type']}: {e}" for e in _errors(validator, event)]
    assert not errors, "\n".join(errors)
    # The case's own validators.
    if case not in ("streaming-response", "tool-calling-streaming"):
        assert final["output"], "Response has no output items"
    if case != "tool-calling" and case != "tool-calling-streaming":
        assert final["status"] == "completed"
    if case == "tool-calling":
        assert any(item["type"] == "function_call" for item in final["output"])
    if case == "tool-calling-streaming":
        kinds = [event["type"] for event in events]
        added = [e for e in events if e["type"] == "response.output_item.added"]
        done = [e for e in events if e["type"] == "response.output_item.done"]
        assert any(e["item"]["type"] == "function_call" for e in added)
        assert "response.function_call_arguments.delta" in kinds
        assert "response.function_call_arguments.done" in kinds
        assert any(e["item"]["type"] == "function_call" for e in done)


@pytest.mark.parametrize(("case", "body", "streaming"), CASES, ids=[c[0] for c in CASES])
def test_the_compliance_case(
    server: AppServer, case: str, body: dict[str, Any], streaming: bool
) -> None:
    final, events = _run(server, "compliance", body, streaming)
    _check(case, final, events, streaming)
    if streaming:  # sequence numbers count up from 0, all of one response
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        ids = {e["response"]["id"] for e in events if "response" in e}
        assert ids == {final["id"]}


@pytest.mark.parametrize(
    ("case", "body", "streaming"),
    [c for c in TEXT_CASES if c[0] != "image-input"],
    ids=[c[0] for c in TEXT_CASES if c[0] != "image-input"],
)
def test_the_text_cases_on_the_demo_model(
    server: AppServer, case: str, body: dict[str, Any], streaming: bool
) -> None:
    final, events = _run(server, "assistant", body, streaming)
    _check(case, final, events, streaming)


def test_image_input_on_a_text_only_agent_is_a_clear_400(server: AppServer) -> None:
    body = next(body for case, body, _ in CASES if case == "image-input")
    response = httpx.post(
        f"{server.url}/v1/responses",
        json={"model": "assistant", **body},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == "image_input_unsupported" and "text-only" in error["message"]


def test_the_schemas_reject_what_they_should() -> None:
    """The validators can fail: a response missing a field, an event of the wrong shape."""
    assert _errors(RESOURCE, {"id": "resp_x", "object": "response"})
    assert _errors(EVENTS["response.output_text.delta"], {"type": "response.output_text.delta"})
    assert len(EVENTS) == 24


@pytest.mark.parametrize("streaming", [False, True])
def test_reasoning_and_compaction_validate_too(server: AppServer, streaming: bool) -> None:
    """Beyond the suite: the demo model's thoughts (a ``reasoning`` item and its summary
    events) and Codex's compaction (a ``compaction`` item) are spec-shaped as well."""
    thinking = {"input": [_message("user", "/think Is 7 prime?")]}
    final, events = _run(server, "assistant", thinking, streaming)
    _check("streaming-response" if streaming else "basic-response", final, events, streaming)
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    if streaming:
        kinds = {event["type"] for event in events}
        assert "response.reasoning_summary_text.delta" in kinds
    compacting = {"input": [*thinking["input"], {"type": "compaction_trigger"}]}
    final, events = _run(server, "assistant", compacting, streaming)
    _check("basic-response", final, events, streaming)
    assert [item["type"] for item in final["output"]] == ["compaction"]


def _upload(server: AppServer, name: str, data: bytes) -> str:
    response = httpx.post(
        f"{server.url}/api/v1/files",
        files={"file": (name, data, "application/octet-stream")},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert response.status_code == 201, response.text
    return response.json()["id"]


@pytest.mark.parametrize("streaming", [False, True])
def test_images_and_files_by_id_and_inline_validate_too(server: AppServer, streaming: bool) -> None:
    """The image case with the heart uploaded first (``input_image`` by ``file_id``) and
    a document beside it, by ``file_id`` and as ``file_data``: the same checks pass."""
    heart = _upload(server, "heart.png", base64.b64decode(HEART.partition(",")[2]))
    notes = _upload(server, "notes.txt", b"The heart is red.\n")
    body = {
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What do you see? Use the notes."},
                    {"type": "input_image", "file_id": heart},
                    {"type": "input_file", "file_id": notes},
                    {
                        "type": "input_file",
                        "filename": "more.md",
                        "file_data": base64.b64encode(b"# More\n\nIt is small.\n").decode(),
                    },
                ],
            }
        ]
    }
    final, events = _run(server, "compliance", body, streaming)
    _check("image-input", final, events, streaming)
