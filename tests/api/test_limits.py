"""Input limits and error mapping: oversize bodies and tasks are 413, malformed input 422,
and every error is ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import base64
import json

import pytest

from tests.api.helpers import error_of, messages, new_conversation

MAX_BODY = 1024
MAX_TASK = 100


@pytest.fixture
async def limited(api_factory):
    _services, client = await api_factory(max_body_bytes=MAX_BODY, max_task_chars=MAX_TASK)
    return client


def body_routes(conv: str) -> list[tuple[str, str, str]]:
    """(method, path, the field that carries text) for every route that reads a JSON body."""
    return [
        ("POST", "/api/v1/conversations", "title"),
        ("PATCH", f"/api/v1/conversations/{conv}", "title"),
        ("POST", "/api/v1/agents/demo/execute", "task"),
        ("POST", "/api/v1/agents/demo/execute/sync", "task"),
        ("POST", "/api/v1/agents/demo/execute/stream", "task"),
        ("POST", "/api/agent/demo/chat", "message"),
    ]


def oversize(field: str) -> bytes:
    body = json.dumps({field: "x" * (MAX_BODY + 10)}).encode()
    assert len(body) > MAX_BODY
    return body


async def chunked(data: bytes, size: int = 300):
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def assert_nothing_changed(api, conv: str) -> None:
    listed = (await api.get("/api/v1/conversations")).json()["items"]
    assert [(c["uuid"], c["title"]) for c in listed] == [(conv, "kept")]
    assert await messages(api, conv) == []


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
async def test_oversize_bodies_are_413(limited, streamed) -> None:
    conv = (await new_conversation(limited, title="kept"))["uuid"]
    for method, path, field in body_routes(conv):
        data = oversize(field)
        content = chunked(data) if streamed else data
        resp = await limited.request(
            method, path, content=content, headers={"Content-Type": "application/json"}
        )
        assert error_of(resp, 413)["code"] == "too_large", (method, path)
        assert str(MAX_BODY) in resp.json()["error"]["message"]
    await assert_nothing_changed(limited, conv)


async def test_a_body_just_under_the_limit_is_accepted(limited) -> None:
    title = "x" * 200
    body = json.dumps({"agentId": "demo", "title": title}).encode()
    assert len(body) < MAX_BODY
    resp = await limited.post(
        "/api/v1/conversations", content=body, headers={"Content-Type": "application/json"}
    )
    assert resp.status_code == 201 and resp.json()["title"] == title


@pytest.mark.parametrize(
    "route, how",
    [
        ("/api/v1/agents/demo/execute", "query"),
        ("/api/v1/agents/demo/execute", "body"),
        ("/api/v1/agents/demo/execute/sync", "query"),
        ("/api/v1/agents/demo/execute/sync", "body"),
        ("/api/v1/agents/demo/execute/stream", "query"),
        ("/api/v1/agents/demo/execute/stream", "body"),
        ("/api/agent/demo/chat", "chat"),
    ],
)
async def test_a_task_over_the_limit_is_413(limited, route, how) -> None:
    conv = (await new_conversation(limited, title="kept"))["uuid"]

    def request(text: str) -> dict:
        if how == "query":
            return {"params": {"task": text, "conversationId": conv}}
        field = "message" if how == "chat" else "task"
        return {"json": {field: text, "conversationId": conv}}

    too_long = "长" * (MAX_TASK + 1)  # characters count, not bytes
    error = error_of(await limited.post(route, **request(too_long)), 413)
    assert error["code"] == "too_large" and str(MAX_TASK) in error["message"]
    await assert_nothing_changed(limited, conv)
    ok = await limited.post(route, **request("长" * MAX_TASK))
    assert ok.status_code in (200, 202), ok.text


@pytest.mark.parametrize("bad", [b"{", b'{"task": }', b"\xff\xfe", b'{"agentId": "demo",}'])
async def test_malformed_json_is_422(api, bad) -> None:
    conv = (await new_conversation(api, title="kept"))["uuid"]
    for method, path, _field in body_routes(conv):
        resp = await api.request(
            method, path, content=bad, headers={"Content-Type": "application/json"}
        )
        error = error_of(resp, 422)
        assert error["code"] == "invalid_input", (method, path)
        if bad != b"\xff\xfe":
            assert "JSON" in error["message"], error["message"]
    await assert_nothing_changed(api, conv)


async def test_unknown_paths_and_methods_answer_json_errors(api) -> None:
    assert error_of(await api.get("/api/v1/nothing-here"), 404)["code"] == "not_found"
    assert error_of(await api.put("/api/v1/conversations"), 405)["code"] == "method_not_allowed"
    assert error_of(await api.delete("/api/agent/list"), 405)


async def test_validation_errors_name_the_field(api) -> None:
    error = error_of(await api.get("/api/v1/conversations", params={"limit": 0}), 422)
    assert "limit" in error["message"]
    error = error_of(await api.post("/api/v1/conversations", json={"title": "x"}), 422)
    assert "agentId" in error["message"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_nul_characters_are_422_not_a_database_error(
    api_factory, _databases, backend
) -> None:
    """PostgreSQL cannot store NUL in text: refused at the edge on every backend."""
    database = _databases(backend)
    database.truncate()
    _services, api = await api_factory(database_url=database.url)
    conv = (await new_conversation(api, title="kept"))["uuid"]
    attempts = [
        api.post("/api/v1/conversations", json={"agentId": "demo", "title": "a\x00"}),
        api.patch(f"/api/v1/conversations/{conv}", json={"title": "a\x00"}),
        api.get("/api/v1/conversations", params={"q": "a\x00"}),
        api.get("/api/v1/conversations", params={"agentId": "demo\x00"}),
        api.get("/api/agent/demo/conversations", params={"q": "\x00"}),
        api.post("/api/v1/agents/demo/execute/sync", json={"task": "a\x00"}),
        api.post("/api/agent/demo/chat", json={"message": "a\x00"}),
    ]
    for attempt in attempts:
        assert error_of(await attempt, 422)["code"] == "invalid_input"
    error_of(await api.get("/api/v1/runs/run-%00"), 404)
    error_of(await api.get("/api/agent/demo%00/info"), 404)
    await assert_nothing_changed(api, conv)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_numbers_beyond_the_columns_are_422_not_a_database_error(
    api_factory, _databases, backend
) -> None:
    """Seqs and ids are 32-bit columns; PostgreSQL refuses to compare with larger numbers."""
    database = _databases(backend)
    database.truncate()
    _services, api = await api_factory(database_url=database.url)
    conv = (await new_conversation(api, title="kept"))["uuid"]
    huge = 2**31
    for path, params in [
        (f"/api/v1/conversations/{conv}/messages", {"after": huge}),
        (f"/api/v1/conversations/{conv}/messages", {"before": huge}),
        (f"/api/agent/demo/conversations/{conv}", {"after": huge}),
    ]:
        error_of(await api.get(path, params=params), 422)
    for raw in (f"2026-01-01T00:00:00+00:00|{huge}", "2026-01-01T00:00:00|1"):  # naive time
        cursor = base64.urlsafe_b64encode(raw.encode()).decode()
        for path in ("/api/v1/conversations", "/api/agent/demo/conversations"):
            error_of(await api.get(path, params={"after": cursor}), 422)
    largest = 2**31 - 1
    page = await api.get(f"/api/v1/conversations/{conv}/messages", params={"after": largest})
    assert page.status_code == 200 and page.json()["items"] == []
