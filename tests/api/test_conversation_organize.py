"""Pinned and archived conversations (#45), on every backend: PATCH sets and clears them,
the list spans every agent and filters on them, a plain conversation's JSON is the seed's
shape, someone else's conversation is a 404 and bad values a 422."""

from __future__ import annotations

import pytest

from tests.api.helpers import ISO_Z, bearer, error_of, new_conversation, say

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
SEED_FIELDS = {
    "uuid", "agentId", "title", "status", "messageCount", "toolCallCount", "lastSeq",
    "createdAt", "updatedAt", "parentUuid", "forkedAtSeq",
}  # fmt: skip


@pytest.fixture
async def api_on(api_factory, database):
    _services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return client


async def edit(api, conv: str, status: int = 200, headers=ALICE, **body):
    resp = await api.patch(f"/api/v1/conversations/{conv}", json=body, headers=headers)
    assert resp.status_code == status, resp.text
    return resp.json()


async def listed(api, headers=ALICE, **params) -> list[str]:
    resp = await api.get("/api/v1/conversations", params=params, headers=headers)
    assert resp.status_code == 200, resp.text
    return [c["title"] for c in resp.json()["items"]]


async def test_pin_and_archive_are_stored_and_undone(api_on) -> None:
    conv = await new_conversation(api_on, title="Trip", headers=ALICE)
    assert set(conv) == SEED_FIELDS  # the seed's shape while neither
    pinned = await edit(api_on, conv["uuid"], pinned=True)
    assert pinned["pinned"] is True and "archivedAt" not in pinned
    assert pinned["updatedAt"] == conv["updatedAt"]  # its place by activity is kept
    archived = await edit(api_on, conv["uuid"], archived=True)
    assert archived["pinned"] is True and ISO_Z.match(archived["archivedAt"])
    got = (await api_on.get(f"/api/v1/conversations/{conv['uuid']}", headers=ALICE)).json()
    assert got == archived
    again = await edit(api_on, conv["uuid"], pinned=True)  # the same value twice is fine
    assert again == archived
    back = await edit(api_on, conv["uuid"], pinned=False, archived=False, title="Trip 2")
    assert set(back) == SEED_FIELDS and back["title"] == "Trip 2"


async def test_the_list_spans_agents_and_filters_pinned_and_archived(api_on) -> None:
    await new_conversation(api_on, title="demo old", headers=ALICE)
    tester = await new_conversation(api_on, agent="tester", title="tester chat", headers=ALICE)
    pinned = await new_conversation(api_on, title="demo pinned", headers=ALICE)
    archived = await new_conversation(api_on, title="demo archived", headers=ALICE)
    await new_conversation(api_on, title="bob's", headers=BOB)
    await edit(api_on, pinned["uuid"], pinned=True)
    await edit(api_on, archived["uuid"], archived=True)

    everything = ["demo archived", "demo pinned", "tester chat", "demo old"]
    assert await listed(api_on) == everything  # newest first, both agents, Bob's not
    assert await listed(api_on, archived="false") == ["demo pinned", "tester chat", "demo old"]
    assert await listed(api_on, archived="true") == ["demo archived"]
    assert await listed(api_on, pinned="true") == ["demo pinned"]
    assert await listed(api_on, pinned="false", archived="false") == ["tester chat", "demo old"]
    assert await listed(api_on, agentId="tester") == ["tester chat"]
    assert await listed(api_on, agentId="demo", archived="true") == ["demo archived"]
    assert await listed(api_on, archived="true", headers=BOB) == []
    # paging keeps the filter
    resp = await api_on.get(
        "/api/v1/conversations", params={"archived": "false", "limit": 2}, headers=ALICE
    )
    page = resp.json()
    assert [c["title"] for c in page["items"]] == ["demo pinned", "tester chat"]
    rest = await listed(api_on, archived="false", after=page["nextCursor"])
    assert rest == ["demo old"]
    # an archived conversation still answers and is still found
    await say(api_on, "a note about Lisbon", tester["uuid"], agent="tester", headers=ALICE)
    await edit(api_on, tester["uuid"], archived=True)
    assert await listed(api_on, q="Lisbon") == ["tester chat"]
    assert await listed(api_on, q="Lisbon", archived="true") == ["tester chat"]


async def test_someone_elses_conversation_is_not_found(api_on) -> None:
    conv = await new_conversation(api_on, title="Alice's", headers=ALICE)
    for body in ({"pinned": True}, {"archived": True}, {"title": "mine"}):
        resp = await api_on.patch(f"/api/v1/conversations/{conv['uuid']}", json=body, headers=BOB)
        assert error_of(resp, 404)["code"] == "not_found"
    got = (await api_on.get(f"/api/v1/conversations/{conv['uuid']}", headers=ALICE)).json()
    assert set(got) == SEED_FIELDS and got["title"] == "Alice's"


@pytest.mark.parametrize(
    "body",
    [{}, {"pinned": None}, {"archived": "yes"}, {"pinned": 1}, {"title": None}, {"hidden": True}],
)
async def test_bad_values_are_refused(api_on, body) -> None:
    conv = await new_conversation(api_on, title="kept", headers=ALICE)
    error = error_of(
        await api_on.patch(f"/api/v1/conversations/{conv['uuid']}", json=body, headers=ALICE),
        422,
    )
    assert error["code"] == "invalid_input"
    got = (await api_on.get(f"/api/v1/conversations/{conv['uuid']}", headers=ALICE)).json()
    assert got == conv


@pytest.mark.parametrize("params", [{"archived": "maybe"}, {"pinned": "2"}])
async def test_bad_list_filters_are_refused(api_on, params) -> None:
    resp = await api_on.get("/api/v1/conversations", params=params, headers=ALICE)
    assert error_of(resp, 422)["code"] == "invalid_input"
