"""The BOLA matrix again, in users mode: alice and bob are accounts whose keys they made
themselves. Bob's key gets a plain 404 for everything of alice's — her conversations, runs,
keys, sessions — and for the admin routes; nothing of hers changes."""

from __future__ import annotations

import pytest

from lumina_app.domain import OPERATOR, Principal, Role, Via
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
from tests.api.test_auth import foreign_routes, routes

PASSWORD = "correct horse battery"


async def user_key(services, name: str, role: Role = Role.MEMBER) -> str:
    user = (await services.users.create(OPERATOR, name, role=role, password=PASSWORD)).user
    me = Principal(owner=name, via=Via.SESSION, name=name, user_id=user.id, role=role.value)
    return (await services.accounts.create_key(me, f"{name}'s key")).key


@pytest.fixture
async def two_users(api_factory, database):
    services, api = await api_factory(database_url=database.url)
    keys = {name: bearer(await user_key(services, name)) for name in ("alice", "bob")}
    return services, api, keys["alice"], keys["bob"]


async def test_bobs_key_gets_404_for_everything_of_alices(two_users, fake_llm) -> None:
    services, api, alice, bob = two_users
    conv = (await new_conversation(api, agent="tester", title="private", headers=alice))["uuid"]
    done = (await say(api, "secret", conv, agent="tester", headers=alice))["runId"]
    key_id = (await api.get("/api/v1/keys", headers=alice)).json()[0]["id"]
    async with client_for(services, "127.0.0.1") as browser:  # alice signed in somewhere
        await browser.post("/api/v1/auth/login", json={"username": "alice", "password": PASSWORD})
        session_id = (await browser.get("/api/v1/account/sessions")).json()[0]["id"]

    async def bob_sees_nothing(run: str) -> None:
        account_routes = [
            (m, p, kw)
            for m, p, kw in routes(conv, run, session=str(session_id), key=str(key_id))
            if p in (f"/api/v1/keys/{key_id}", f"/api/v1/account/sessions/{session_id}")
            or p.startswith("/api/v1/admin")
        ]
        assert len(account_routes) == 10  # her key, her session, the eight admin routes
        for method, path, kwargs in foreign_routes(conv, run) + account_routes:
            resp = await api.request(method, path, headers=bob, **kwargs)
            assert error_of(resp, 404)["code"] == "not_found", (method, path, kwargs)

    await bob_sees_nothing(done)
    fake_llm.script.chunks = [f"w{i} " for i in range(100)]
    fake_llm.script.delay = 0.05
    live = await start_run(api, conversation=conv, headers=alice)
    await wait_for_text(api, conv, headers=alice)
    await bob_sees_nothing(live["runId"])
    stopped = await api.post(f"/api/v1/runs/{live['runId']}/stop", headers=alice)
    assert stopped.json()["status"] == "stopped"

    assert (await api.get(f"/api/v1/conversations/{conv}", headers=alice)).json()["title"] == (
        "private"
    )
    assert len(await messages(api, conv, headers=alice)) == 4
    assert [k["id"] for k in (await api.get("/api/v1/keys", headers=alice)).json()] == [key_id]
    assert (await api.get("/api/v1/me", headers=alice)).json()["username"] == "alice"


async def test_the_lists_are_scoped_to_each_account(two_users) -> None:
    _services, api, alice, bob = two_users
    mine = await new_conversation(api, title="alice's", headers=alice)
    theirs = await new_conversation(api, title="bob's", headers=bob)
    for who, conv in ((alice, mine), (bob, theirs)):
        listed = (await api.get("/api/v1/conversations", headers=who)).json()["items"]
        assert [c["uuid"] for c in listed] == [conv["uuid"]]
        assert len((await api.get("/api/v1/keys", headers=who)).json()) == 1


async def test_every_route_refuses_a_revoked_key(two_users) -> None:
    _services, api, alice, _bob = two_users
    conv = (await new_conversation(api, headers=alice))["uuid"]
    key_id = (await api.get("/api/v1/keys", headers=alice)).json()[0]["id"]
    assert (await api.delete(f"/api/v1/keys/{key_id}", headers=alice)).status_code == 204
    for method, path, kwargs in routes(conv, "run-0000000000000000"):
        resp = await api.request(method, path, headers=alice, **kwargs)
        assert error_of(resp, 401)["code"] == "unauthorized", (method, path)
