"""Accounts with data in every place it can live: conversations with runs (and their
events), memories, vectors, a key, a session, an idempotency record, an uploaded file, the
archive mirror's files and Redis windows. On each SQL backend (``database``), Redis under
the test's prefix."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

import httpx
import pytest

from lumina_app.domain import OPERATOR, Role
from tests.api import conftest as api_fixtures
from tests.api.helpers import client_for, say

PASSWORD = "correct horse battery"
api_factory = api_fixtures.api_factory  # the API tests' fixture, shared


@dataclass
class Holdings:
    """What one account made: the strings that must all go (or all stay) with it."""

    username: str
    conversations: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # questions and memories, unique words
    key_prefix: str = ""
    memory: str = ""  # the one memory's text

    @property
    def needles(self) -> list[str]:
        return [self.username, *self.conversations, *self.runs, *self.texts, self.key_prefix]


@pytest.fixture
async def site(api_factory, database):
    """(services, admin client) with accounts root (admin); mirror on."""
    services, client = await api_factory(database_url=database.url, archive_mirror=True)
    await services.users.create(OPERATOR, "root", role=Role.ADMIN, password=PASSWORD)
    return services, client


async def login(client: httpx.AsyncClient, name: str, password: str = PASSWORD) -> None:
    resp = await client.post("/api/v1/auth/login", json={"username": name, "password": password})
    assert resp.status_code == 200, resp.text


async def account_with_everything(services, name: str, *, conversations: int = 3) -> Holdings:
    """A member ``name`` signed in on a client of its own, with conversations of two turns
    each (runs, events, hot windows, mirror folders), a memory, a key, an idempotent send,
    an uploaded file."""
    await services.users.create(OPERATOR, name, role=Role.MEMBER, password=PASSWORD)
    held = Holdings(name)
    async with client_for(services, "127.0.0.1") as client:
        await login(client, name)
        for i in range(conversations):
            first = f"{name}-q{i}-{secrets.token_hex(4)}"
            done = await say(client, f"remember {first}", agent="demo")
            held.conversations.append(done["conversationId"])
            held.runs.append(done["runId"])
            second = f"{name}-again{i}-{secrets.token_hex(4)}"
            again = await say(
                client,
                f"and {second}",
                conversation=done["conversationId"],
                agent="demo",
                headers={"Idempotency-Key": f"{name}-{i}"},
            )
            held.runs.append(again["runId"])
            held.texts += [first, second]
        memory = f"{name}-likes-{secrets.token_hex(4)}"
        resp = await client.post("/api/v1/memories", json={"agentId": "demo", "text": memory})
        assert resp.status_code in (200, 201), resp.text
        held.texts.append(memory)
        held.memory = memory
        resp = await client.post("/api/v1/keys", json={"name": f"{name}-laptop"})
        assert resp.status_code == 201, resp.text
        held.key_prefix = resp.json()["prefix"]
        held.texts.append(f"{name}-laptop")
        shared = f"{name}-file-{secrets.token_hex(4)}"
        upload = {"file": (f"{shared}.txt", f"notes: {shared}-body\n".encode(), "text/plain")}
        # a signed-in browser's multipart upload names itself (the cross-site rule)
        resp = await client.post(
            "/api/v1/files", files=upload, headers={"X-Requested-With": "fetch"}
        )
        assert resp.status_code == 201, resp.text
        held.texts += [f"{shared}.txt", f"{shared}-body"]
    if services.embeddings is not None:
        await services.embeddings.embed_pending()
    assert services.mirror is not None and await services.mirror.drain()
    return held
