"""Who may call: bearer keys when LUMINA_API_KEYS is set (each key's owner sees only its
own conversations and runs), loopback only when it is not."""

from __future__ import annotations

import pytest

from tests.api.helpers import (
    bearer,
    client_for,
    error_of,
    messages,
    new_conversation,
    say,
    start_run,
    wait_for_text,
)

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")


def routes(
    conv: str,
    run: str,
    session: str = "1",
    key: str = "1",
    user: str = "alice",
    memory: str = "1",
    seq: str = "1",
    file: str = "file-" + "0" * 24,
) -> list[tuple[str, str, dict]]:
    """One request per route of the API (the health, docs and sign-in routes are open)."""
    return [
        ("POST", "/api/v1/conversations", {"json": {"agentId": "demo"}}),
        ("GET", "/api/v1/conversations", {}),
        ("GET", f"/api/v1/conversations/{conv}", {}),
        ("PATCH", f"/api/v1/conversations/{conv}", {"json": {"title": "mine now"}}),
        ("DELETE", f"/api/v1/conversations/{conv}", {}),
        ("POST", f"/api/v1/conversations/{conv}/fork", {"json": {"atSeq": 1}}),
        ("POST", f"/api/v1/conversations/{conv}/regenerate", {"json": {"stream": False}}),
        (
            "POST",
            f"/api/v1/conversations/{conv}/messages/{seq}/edit",
            {"json": {"message": "x", "stream": False}},
        ),
        ("POST", f"/api/v1/conversations/{conv}/messages/{seq}/branch", {"json": {"branch": 1}}),
        ("GET", f"/api/v1/conversations/{conv}/messages", {}),
        ("GET", f"/api/v1/conversations/{conv}/export", {}),
        ("POST", "/api/v1/agents/tester/execute/stream", {"params": {"task": "x"}}),
        ("POST", "/api/v1/agents/tester/execute", {"json": {"task": "x"}}),
        ("POST", "/api/v1/agents/tester/execute/sync", {"json": {"task": "x"}}),
        ("GET", "/api/agent/list", {}),
        ("GET", "/api/agent/tester/info", {}),
        ("GET", "/api/agent/tester/conversations", {}),
        ("GET", f"/api/agent/tester/conversations/{conv}", {}),
        ("POST", "/api/agent/tester/chat", {"json": {"message": "x"}}),
        ("DELETE", f"/api/agent/tester/conversations/{conv}", {}),
        ("GET", f"/api/v1/runs/{run}", {}),
        ("GET", f"/api/v1/runs/{run}/stream", {}),
        ("GET", f"/api/v1/runs/{run}/context", {}),
        ("POST", f"/api/v1/runs/{run}/stop", {}),
        ("POST", f"/api/v1/runs/{run}/permissions/PERM", {"json": {"optionId": "yes"}}),
        ("GET", "/api/v1/me", {}),
        ("GET", f"/api/v1/conversations/{conv}/search", {"params": {"q": "x"}}),
        ("GET", "/api/v1/search", {"params": {"q": "x"}}),
        ("GET", f"/api/v1/conversations/{conv}/recall", {"params": {"q": "x"}}),
        ("GET", "/api/v1/recall", {"params": {"q": "x"}}),
        ("GET", "/api/v1/memories", {}),
        ("POST", "/api/v1/memories", {"json": {"text": "x"}}),
        ("POST", "/api/v1/memories/forget", {"json": {}}),
        ("GET", f"/api/v1/memories/{memory}", {}),
        ("PATCH", f"/api/v1/memories/{memory}", {"json": {"text": "x"}}),
        ("DELETE", f"/api/v1/memories/{memory}", {}),
        ("GET", f"/api/v1/memories/{memory}/history", {}),
        ("POST", "/api/v1/imports", {"data": {"source": "chatgpt"}, "files": IMPORT_FILE}),
        ("POST", "/api/v1/imports/preview", {"data": {"source": "chatgpt"}, "files": IMPORT_FILE}),
        ("GET", "/api/v1/imports/IMPORT", {}),
        ("POST", "/api/v1/files", {"files": UPLOAD_FILE}),
        ("GET", "/api/v1/files", {}),
        ("GET", f"/api/v1/files/{file}", {}),
        ("DELETE", f"/api/v1/files/{file}", {}),
        ("GET", "/api/v1/account/export", {}),
        ("POST", "/api/v1/account/delete", {"json": {"password": "x", "confirm": "x"}}),
        ("GET", "/api/v1/account/sessions", {}),
        ("DELETE", f"/api/v1/account/sessions/{session}", {}),
        ("POST", "/api/v1/account/sessions/revoke-others", {}),
        ("POST", "/api/v1/account/password", {"json": PASSWORD_CHANGE}),
        ("GET", "/api/v1/keys", {}),
        ("POST", "/api/v1/keys", {"json": {"name": "mine now"}}),
        ("DELETE", f"/api/v1/keys/{key}", {}),
        ("GET", "/api/v1/admin/users", {}),
        ("POST", "/api/v1/admin/users", {"json": {"username": "mallory"}}),
        ("GET", f"/api/v1/admin/users/{user}", {}),
        ("POST", f"/api/v1/admin/users/{user}/disable", {}),
        ("POST", f"/api/v1/admin/users/{user}/enable", {}),
        ("POST", f"/api/v1/admin/users/{user}/password", {"json": {}}),
        ("POST", f"/api/v1/admin/users/{user}/delete", {}),
        ("GET", "/api/v1/admin/audit", {}),
        ("GET", "/v1/models", {}),
        ("POST", "/v1/chat/completions", {"json": chat_body()}),
        ("POST", "/v1/responses/compact", {"json": {"model": "tester", "input": "x"}}),
        *openai_state_routes(conv, run),
        ("GET", "/metrics", {}),
    ]


def openai_state_routes(conv: str, run: str) -> list[tuple[str, str, dict]]:
    """The Responses and Conversations routes, naming ``conv`` and ``run`` their way."""
    resp, oconv = "resp_" + run.removeprefix("run-"), "conv_" + conv
    return [
        ("POST", "/v1/responses", {"json": {"model": "tester", "input": "x"}}),
        ("GET", f"/v1/responses/{resp}", {}),
        ("DELETE", f"/v1/responses/{resp}", {}),
        ("POST", f"/v1/responses/{resp}/cancel", {}),
        ("GET", f"/v1/responses/{resp}/input_items", {}),
        ("POST", "/v1/conversations", {"json": {"metadata": {"agent": "tester"}}}),
        ("GET", f"/v1/conversations/{oconv}", {}),
        ("POST", f"/v1/conversations/{oconv}", {"json": {"metadata": {}}}),
        ("DELETE", f"/v1/conversations/{oconv}", {}),
        ("GET", f"/v1/conversations/{oconv}/items", {}),
        ("POST", f"/v1/conversations/{oconv}/items", {"json": {"items": [ITEM]}}),
        ("GET", f"/v1/conversations/{oconv}/items/msg_1", {}),
        ("DELETE", f"/v1/conversations/{oconv}/items/msg_1", {}),
    ]


ITEM = {"role": "user", "content": "x"}
IMPORT_FILE = {"file": ("conversations.json", b"[]", "application/json")}
UPLOAD_FILE = {"file": ("notes.txt", b"mine now\n", "text/plain")}


def chat_body(conversation: str | None = None) -> dict:
    """A chat completion for the gateway; naming ``conversation`` in its metadata."""
    body: dict = {"model": "tester", "messages": [{"role": "user", "content": "x"}]}
    if conversation is not None:
        body["metadata"] = {"conversation_id": conversation}
    return body


PASSWORD_CHANGE = {"currentPassword": "not the password", "newPassword": "a brand new password"}


def foreign_routes(conv: str, run: str) -> list[tuple[str, str, dict]]:
    """Every request that names someone else's conversation or run."""
    on_conv = {"task": "x", "conversationId": conv}
    return [(m, p, kw) for m, p, kw in routes(conv, run) if conv in p or run in p] + [
        ("POST", "/api/v1/agents/tester/execute/stream", {"params": on_conv}),
        ("POST", "/api/v1/agents/tester/execute/stream", {"json": on_conv}),
        ("POST", "/api/v1/agents/tester/execute", {"json": on_conv}),
        ("POST", "/api/v1/agents/tester/execute/sync", {"params": on_conv}),
        ("POST", "/api/agent/tester/chat", {"json": {"message": "x", "conversationId": conv}}),
        ("GET", f"/api/v1/runs/{run}/stream", {"params": {"format": "v1"}}),
        ("POST", "/v1/chat/completions", {"json": chat_body(conv)}),
        (
            "POST",
            "/v1/responses",
            {"json": {"model": "tester", "input": "x", "conversation": conv}},
        ),
        *[r for r in openai_state_routes(conv, run) if r[1].count("/") > 2],
    ]


async def test_the_route_table_covers_every_api_route(api) -> None:
    schema = (await api.get("/openapi.json")).json()
    served = {
        (method.upper(), path)
        for path, ops in schema["paths"].items()
        for method in ops
        if path != "/healthz" and not path.startswith("/api/v1/auth/")  # open: sign in/out
    }
    placeholders = {
        "resp_RUN": "{response_id}",
        "conv_CONV/items/msg_1": "{conversation}/items/{item}",
        "conv_CONV": "{conversation}",
        "CONV": "{conversation_id}",
        "RUN": "{run_id}",
        "PERM": "{request_id}",
        "SESSION": "{session_id}",
        "KEY": "{key_id}",
        "USER": "{username}",
        "MEMORY": "{memory_id}",
        "IMPORT": "{import_id}",
        "SEQ": "{seq}",
        "FILE": "{file_id}",
    }
    listed = set()
    for m, p, _ in routes("CONV", "RUN", "SESSION", "KEY", "USER", "MEMORY", "SEQ", "FILE"):
        for placeholder, name in placeholders.items():
            p = p.replace(placeholder, name)
        listed.add((m, p))
    listed = {(m, p.replace("/tester/", "/{agent_id}/")) for m, p in listed}
    assert served == listed


@pytest.mark.parametrize(
    "headers",
    [{}, bearer("wrong"), {"Authorization": "Basic a2E="}, {"Authorization": "Bearer"}, bearer("")],
)
async def test_every_route_needs_a_valid_bearer_key(api_factory, headers) -> None:
    _services, api = await api_factory(api_keys=KEYS)
    conv = (await new_conversation(api, agent="tester", headers=ALICE))["uuid"]
    run = (await say(api, "x", conv, agent="tester", headers=ALICE))["runId"]
    for method, path, kwargs in routes(conv, run):
        resp = await api.request(method, path, headers=headers, **kwargs)
        assert error_of(resp, 401)["code"] == "unauthorized", (method, path)
        assert resp.headers["www-authenticate"] == "Bearer"
    assert len(await messages(api, conv, headers=ALICE)) == 2  # nothing happened


async def test_unauthenticated_bad_bodies_are_401_not_422(api_factory) -> None:
    _services, api = await api_factory(api_keys=KEYS)
    conv = (await new_conversation(api, headers=ALICE))["uuid"]
    bad = {"content": b"{nope", "headers": {"Content-Type": "application/json"}}
    with_bodies = [(m, p) for m, p, _ in routes(conv, "run-0") if m in ("POST", "PATCH")]
    assert len(with_bodies) == 34  # every POST and PATCH route above
    for method, path in with_bodies:
        error_of(await api.request(method, path, **bad), 401)


async def test_open_routes_need_no_key(api_factory) -> None:
    _services, api = await api_factory(api_keys=KEYS)
    assert (await api.get("/healthz")).status_code == 200
    assert (await api.get("/openapi.json")).status_code == 200
    assert (await api.get("/docs")).status_code == 200


async def test_a_valid_key_works_and_scopes_the_lists(api_factory) -> None:
    _services, api = await api_factory(api_keys=KEYS)
    mine = await new_conversation(api, title="alice's", headers=ALICE)
    await say(api, "x", mine["uuid"], headers=ALICE)
    theirs = await new_conversation(api, title="bob's", headers=BOB)
    alice_list = (await api.get("/api/v1/conversations", headers=ALICE)).json()["items"]
    bob_list = (await api.get("/api/v1/conversations", headers=BOB)).json()["items"]
    assert [c["uuid"] for c in alice_list] == [mine["uuid"]]
    assert [c["uuid"] for c in bob_list] == [theirs["uuid"]]
    bob_b = (await api.get("/api/agent/demo/conversations", headers=BOB)).json()
    assert [m["conversationId"] for m in bob_b["conversations"]] == [theirs["uuid"]]
    found = (await api.get("/api/v1/conversations", params={"q": "x"}, headers=BOB)).json()
    assert found["items"] == []


async def test_bob_gets_404_for_everything_of_alices(api_factory, fake_llm) -> None:
    _services, api = await api_factory(api_keys=KEYS)
    conv = (await new_conversation(api, agent="tester", title="private", headers=ALICE))["uuid"]
    done = (await say(api, "secret", conv, agent="tester", headers=ALICE))["runId"]

    async def bob_sees_nothing(run: str) -> None:
        for method, path, kwargs in foreign_routes(conv, run):
            resp = await api.request(method, path, headers=BOB, **kwargs)
            assert error_of(resp, 404)["code"] == "not_found", (method, path, kwargs)

    await bob_sees_nothing(done)

    # the same while alice has a run going (no 409 that would reveal it, no stop)
    fake_llm.script.chunks = [f"w{i} " for i in range(100)]  # outlasts bob's attempts
    fake_llm.script.delay = 0.05
    live = await start_run(api, conversation=conv, headers=ALICE)
    await wait_for_text(api, conv, headers=ALICE)
    await bob_sees_nothing(live["runId"])
    stopped = await api.post(f"/api/v1/runs/{live['runId']}/stop", headers=ALICE)
    assert stopped.json()["status"] == "stopped"  # bob's stop did not stop it first

    got = await api.get(f"/api/v1/conversations/{conv}", headers=ALICE)
    assert got.json()["title"] == "private"
    assert len(await messages(api, conv, headers=ALICE)) == 4


async def test_idempotency_keys_are_per_owner(api_factory) -> None:
    _services, api = await api_factory(api_keys=KEYS)
    key = {"Idempotency-Key": "same"}
    a = await api.post("/api/v1/conversations", json={"agentId": "demo"}, headers={**ALICE, **key})
    b = await api.post("/api/v1/conversations", json={"agentId": "demo"}, headers={**BOB, **key})
    assert a.status_code == b.status_code == 201
    assert a.json()["uuid"] != b.json()["uuid"]
    listed = (await api.get("/api/v1/conversations", headers=BOB)).json()["items"]
    assert [c["uuid"] for c in listed] == [b.json()["uuid"]]


async def test_without_keys_only_loopback_may_call(api_factory) -> None:
    services, local = await api_factory()
    conv = (await new_conversation(local, agent="tester"))["uuid"]
    run = (await say(local, "x", conv, agent="tester"))["runId"]
    async with client_for(services, "10.1.2.3") as remote:
        for method, path, kwargs in routes(conv, run):
            resp = await remote.request(method, path, **kwargs)
            assert error_of(resp, 403)["code"] == "forbidden", (method, path)
        assert (await remote.get("/healthz")).status_code == 200
    async with client_for(services, "::1") as ipv6_local:
        assert (await ipv6_local.get("/api/agent/list")).status_code == 200
    assert len(await messages(local, conv)) == 2


async def test_with_keys_remote_clients_may_call(api_factory) -> None:
    services, _local = await api_factory(api_keys=KEYS)
    async with client_for(services, "203.0.113.9") as remote:
        assert (await remote.get("/api/agent/list", headers=ALICE)).status_code == 200
        error_of(await remote.get("/api/agent/list"), 401)
