"""Family A conversations and messages: create, list (cursor pages), get, rename, delete."""

from __future__ import annotations

import pytest

from tests.api.helpers import (
    ISO_Z,
    MISSING_UUID,
    UUID,
    error_of,
    messages,
    new_conversation,
    parse_sse,
    say,
    start_run,
    wait_for_text,
)


async def test_create_returns_the_conversation(api) -> None:
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo", "title": "Plans 📅"})
    assert resp.status_code == 201
    conv = resp.json()
    assert UUID.match(conv["uuid"])
    assert conv["agentId"] == "demo"
    assert conv["title"] == "Plans 📅"
    assert conv["status"] == "idle"
    assert (conv["messageCount"], conv["toolCallCount"], conv["lastSeq"]) == (0, 0, 0)
    assert ISO_Z.match(conv["createdAt"]) and conv["createdAt"] == conv["updatedAt"]
    got = await api.get(f"/api/v1/conversations/{conv['uuid']}")
    assert got.status_code == 200 and got.json() == conv


async def test_create_without_title_is_untitled(api) -> None:
    conv = await new_conversation(api, title=None)
    assert conv["title"] == ""


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"agentId": ""},
        {"agentId": "demo", "title": "x" * 256},
        {"agentId": "demo", "title": "a\x00b"},
        {"agentId": "demo", "unknown": 1},
        {"agentId": 5},
    ],
)
async def test_create_rejects_invalid_bodies(api, body) -> None:
    error = error_of(await api.post("/api/v1/conversations", json=body), 422)
    assert error["code"] == "invalid_input"


@pytest.mark.parametrize("agent", ["nobody", "../demo", "demo\x00"])
async def test_create_for_an_unknown_agent_is_404(api, agent) -> None:
    resp = await api.post("/api/v1/conversations", json={"agentId": agent})
    assert error_of(resp, 404)["code"] == "not_found"


async def test_list_is_newest_first_in_cursor_pages(api) -> None:
    made = [(await new_conversation(api, title=f"c{i}"))["uuid"] for i in range(5)]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 2, **({"after": cursor} if cursor else {})}
        page = (await api.get("/api/v1/conversations", params=params)).json()
        assert len(page["items"]) <= 2
        seen += [c["uuid"] for c in page["items"]]
        pages += 1
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert pages == 3
    assert seen == list(reversed(made))


async def test_list_default_limit_is_20_and_100_is_allowed(api) -> None:
    for i in range(21):
        await new_conversation(api, title=f"c{i}")
    page = (await api.get("/api/v1/conversations")).json()
    assert len(page["items"]) == 20 and page["nextCursor"]
    rest = (await api.get("/api/v1/conversations", params={"after": page["nextCursor"]})).json()
    assert [c["title"] for c in rest["items"]] == ["c0"] and rest["nextCursor"] is None
    everything = (await api.get("/api/v1/conversations", params={"limit": 100})).json()
    assert len(everything["items"]) == 21 and everything["nextCursor"] is None


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"limit": "x"}])
async def test_list_limit_out_of_range_is_422(api, params) -> None:
    error_of(await api.get("/api/v1/conversations", params=params), 422)


@pytest.mark.parametrize("cursor", ["!!!", "YWJj", "bm90IGEgZGF0ZXwx"])
async def test_list_with_a_malformed_cursor_is_422(api, cursor) -> None:
    error_of(await api.get("/api/v1/conversations", params={"after": cursor}), 422)


async def test_list_filters_by_agent_and_puts_recent_activity_first(api) -> None:
    older = await new_conversation(api, agent="demo", title="older")
    await new_conversation(api, agent="demo", title="newer")
    await new_conversation(api, agent="tester", title="other agent")
    await say(api, "bump", older["uuid"])
    page = (await api.get("/api/v1/conversations", params={"agentId": "demo"})).json()
    assert [c["title"] for c in page["items"]] == ["older", "newer"]
    assert page["items"][0]["messageCount"] == 2


async def test_list_searches_titles_and_messages(api) -> None:
    await new_conversation(api, title="Holiday in Kyoto")
    chat = await new_conversation(api, title="misc")
    await say(api, "what about 东京?", chat["uuid"])
    await new_conversation(api, title="unrelated")
    found = (await api.get("/api/v1/conversations", params={"q": "kyoto"})).json()["items"]
    assert [c["title"] for c in found] == ["Holiday in Kyoto"]
    found = (await api.get("/api/v1/conversations", params={"q": "东京"})).json()["items"]
    assert [c["uuid"] for c in found] == [chat["uuid"]]


async def test_rename(api) -> None:
    conv = await new_conversation(api, title="before")
    resp = await api.patch(f"/api/v1/conversations/{conv['uuid']}", json={"title": "après ✨"})
    assert resp.status_code == 200
    assert resp.json()["title"] == "après ✨"
    assert resp.json()["updatedAt"] >= conv["updatedAt"]
    got = (await api.get(f"/api/v1/conversations/{conv['uuid']}")).json()
    assert got["title"] == "après ✨"


@pytest.mark.parametrize("body", [{}, {"title": ""}, {"title": "x" * 256}, {"title": 3}])
async def test_rename_rejects_invalid_titles(api, body) -> None:
    conv = await new_conversation(api, title="kept")
    error_of(await api.patch(f"/api/v1/conversations/{conv['uuid']}", json=body), 422)
    assert (await api.get(f"/api/v1/conversations/{conv['uuid']}")).json()["title"] == "kept"


async def test_delete_removes_the_conversation_its_messages_and_runs(api) -> None:
    conv = await new_conversation(api)
    turn = await say(api, "hello", conv["uuid"])
    resp = await api.delete(f"/api/v1/conversations/{conv['uuid']}")
    assert resp.status_code == 204 and resp.content == b""
    error_of(await api.get(f"/api/v1/conversations/{conv['uuid']}"), 404)
    error_of(await api.get(f"/api/v1/conversations/{conv['uuid']}/messages"), 404)
    error_of(await api.get(f"/api/v1/runs/{turn['runId']}"), 404)
    error_of(await api.get(f"/api/v1/runs/{turn['runId']}/stream"), 404)
    assert (await api.get("/api/v1/conversations")).json()["items"] == []
    error_of(await api.delete(f"/api/v1/conversations/{conv['uuid']}"), 404)


@pytest.mark.parametrize("conversation", [MISSING_UUID, "abc", "1", "%00", "x" * 300])
@pytest.mark.parametrize(
    "method, suffix, body",
    [
        ("GET", "", None),
        ("PATCH", "", {"title": "x"}),
        ("DELETE", "", None),
        ("GET", "/messages", None),
    ],
)
async def test_unknown_or_malformed_ids_are_404(api, conversation, method, suffix, body) -> None:
    resp = await api.request(method, f"/api/v1/conversations/{conversation}{suffix}", json=body)
    assert error_of(resp, 404)["code"] == "not_found"


async def test_messages_are_ordered_by_seq_with_their_fields(api) -> None:
    conv = await new_conversation(api)
    first = await say(api, "one", conv["uuid"])
    await say(api, "two 😀", conv["uuid"])
    items = await messages(api, conv["uuid"])
    assert [m["seq"] for m in items] == [1, 2, 3, 4]
    assert [m["role"] for m in items] == ["USER", "ASSISTANT"] * 2
    assert [items[0]["content"], items[2]["content"]] == ["one", "two 😀"]
    assert items[1]["content"] == first["answer"] and items[1]["id"] == first["messageId"]
    assert items[0]["turnId"] == items[1]["turnId"] != items[2]["turnId"]
    assert items[0]["turnId"].startswith("msg-")
    for m in items:
        assert {"id", "seq", "turnId", "role", "content", "status", "createdAt"} <= set(m)
        assert m["status"] == "complete" and ISO_Z.match(m["createdAt"])
    assert len({m["id"] for m in items}) == 4


async def test_messages_page_forward_with_after_and_back_with_before(api) -> None:
    conv = await new_conversation(api)
    for i in range(3):
        await say(api, f"q{i}", conv["uuid"])
    url = f"/api/v1/conversations/{conv['uuid']}/messages"

    async def page(**params) -> tuple[list[int], int | None, int | None]:
        body = (await api.get(url, params=params)).json()
        return [m["seq"] for m in body["items"]], body["nextAfter"], body["nextBefore"]

    assert await page(limit=4) == ([1, 2, 3, 4], 4, None)
    assert await page(limit=4, after=4) == ([5, 6], None, None)
    assert await page(after=6) == ([], None, None)
    # scrolling up from the end, as a chat window does
    assert await page(limit=2, before=7) == ([5, 6], None, 5)
    assert await page(limit=2, before=5) == ([3, 4], None, 3)
    assert await page(limit=2, before=3) == ([1, 2], None, None)
    # both: a range, paged forward inside it
    assert await page(after=1, before=6, limit=2) == ([2, 3], 3, None)
    assert await page(after=3, before=6, limit=2) == ([4, 5], None, None)
    assert await page(after=4, before=5) == ([], None, None)


@pytest.mark.parametrize(
    "params", [{"limit": 0}, {"limit": 101}, {"after": -1}, {"before": 0}, {"after": "x"}]
)
async def test_messages_bad_paging_is_422(api, params) -> None:
    conv = await new_conversation(api)
    error_of(await api.get(f"/api/v1/conversations/{conv['uuid']}/messages", params=params), 422)


async def test_delete_during_a_run_interrupts_it_and_leaves_nothing(api_factory, fake_llm) -> None:
    services, api = await api_factory()
    fake_llm.script.chunks = [f"w{i} " for i in range(100)]
    fake_llm.script.delay = 0.03
    accepted = await start_run(api)
    conv = accepted["conversationId"]
    await wait_for_text(api, conv)
    assert (await api.delete(f"/api/v1/conversations/{conv}")).status_code == 204
    replay = await api.get(f"/api/v1/runs/{accepted['runId']}/stream")  # until its end
    assert replay.status_code in (200, 404)
    if replay.status_code == 200:
        assert parse_sse(replay.content)[-1].json["status"] == "interrupted"
    error_of(await api.get(f"/api/v1/runs/{accepted['runId']}"), 404)
    error_of(await api.get(f"/api/v1/conversations/{conv}"), 404)
    assert (await api.get("/api/v1/conversations")).json()["items"] == []
    assert await services.memory.hot.read(conv) is None
