"""The stored-bytes quota per owner (#43, LUMINA_MAX_STORED_BYTES_PER_OWNER), on every
backend: bytes of UTF-8 text, not characters; new input past it is a 413 naming the limit
at every door, nothing is stored, another owner is untouched, and deleting makes room."""

from __future__ import annotations

import pytest

from tests.api.helpers import bearer, error_of

ALICE, BOB = bearer("ka"), bearer("kb")
LIMIT = 300
WIDE = "é" * 100  # 100 characters, 200 bytes


@pytest.fixture
async def api(api_factory, database):
    _services, client = await api_factory(
        database_url=database.url, api_keys="alice:ka,bob:kb", max_stored_bytes_per_owner=LIMIT
    )
    return client


async def add_item(api, conversation: str, text: str, headers=ALICE):
    return await api.post(
        f"/v1/conversations/{conversation}/items",
        json={"items": [{"type": "message", "role": "user", "content": text}]},
        headers=headers,
    )


async def test_stored_bytes_are_counted_and_refused_at_every_door(api) -> None:
    made = await api.post("/v1/conversations", json={}, headers=ALICE)
    assert made.status_code == 200, made.text
    conversation = made.json()["id"]
    assert (await add_item(api, conversation, WIDE)).status_code == 200  # 200 bytes
    assert (await add_item(api, conversation, WIDE)).status_code == 200  # 400: now past
    # counted in characters it would be 200 of 300 and let through
    refused = await add_item(api, conversation, "one more")
    assert refused.status_code == 413, refused.text
    assert "LUMINA_MAX_STORED_BYTES_PER_OWNER" in refused.text and "300" in refused.text
    body = error_of(
        await api.post("/api/v1/agents/demo/execute/sync", json={"task": "hi"}, headers=ALICE),
        413,
    )
    assert "LUMINA_MAX_STORED_BYTES_PER_OWNER" in body["message"]
    uuid = conversation.removeprefix("conv_")
    rows = await api.get(f"/api/v1/conversations/{uuid}/messages", headers=ALICE)
    assert [m["content"] for m in rows.json()["items"]] == [WIDE, WIDE]  # nothing stored

    theirs = await api.post("/api/v1/agents/demo/execute/sync", json={"task": "hi"}, headers=BOB)
    assert theirs.status_code == 200, theirs.text  # another owner is untouched

    gone = await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)
    assert gone.status_code in (200, 204), gone.text
    again = await api.post("/api/v1/agents/demo/execute/sync", json={"task": "hi"}, headers=ALICE)
    assert again.status_code == 200, again.text  # deleting made room
