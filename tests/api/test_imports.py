"""Imports of ChatGPT, Claude, Open WebUI and LibreChat exports and of memory blocks
(issue #47) through ``/api/v1/imports``, on every database: each import is the export's
active branch, in order, with its dates; importing again adds nothing; bad input is a
clean 4xx with nothing stored; another owner sees none of it."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from tests.api.helpers import bearer
from tests.waits import wait_until

FIXTURES = Path(__file__).parents[1] / "fixtures" / "imports"
KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")

# (source, fixture, [(title, [(role, text, timestamp)])]): the active branches, as shown.
EXPECTED = {
    "chatgpt": (
        "chatgpt_conversations.json",
        [
            (
                "Capitals <b>quiz</b>",
                [
                    ("USER", "What is the capital of France?", "2025-01-01T10:00:10"),
                    ("ASSISTANT", "Paris.", "2025-01-01T10:00:20"),
                    ("USER", "And of Italy?", "2025-01-01T10:01:40"),
                    ("ASSISTANT", "Rome.", "2025-01-01T10:02:00"),
                ],
            ),
            (
                "<script>alert(1)</script> Plot",
                [
                    ("USER", "[image_asset_pointer]\nPlot y = x^2 for me", "2025-02-01T08:53:21"),
                    ("ASSISTANT", "Here is the parabola y = x².", "2025-02-01T08:53:24"),
                ],
            ),
        ],
    ),
    "claude": (
        "claude_conversations.json",
        [
            (
                "Sourdough starter",
                [
                    (
                        "USER",
                        "How often should I feed my sourdough starter?",
                        "2025-02-03T08:00:10",
                    ),
                    (
                        "ASSISTANT",
                        "Once a day at room temperature.\nWeekly if refrigerated.",
                        "2025-02-03T08:00:20",
                    ),
                    (
                        "USER",
                        "Thanks, here is my schedule\n[file: schedule.txt]",
                        "2025-02-03T08:04:00",
                    ),
                ],
            )
        ],
    ),
    "openwebui": (
        "openwebui_export.json",
        [
            (
                "Vim tips",
                [
                    ("USER", "How do I delete a line in vim?", "2025-02-19T21:20:01"),
                    ("ASSISTANT", "Press dd in normal mode.", "2025-02-19T21:20:05"),
                    ("USER", "And undo?", "2025-02-19T21:20:10"),
                    ("ASSISTANT", "Press u.", "2025-02-19T21:20:12"),
                ],
            ),
            (
                "Flat chat",
                [
                    ("USER", "Name a prime.", "2025-02-19T21:21:41"),
                    ("ASSISTANT", "7", "2025-02-19T21:21:42"),
                ],
            ),
        ],
    ),
    "librechat": (
        "librechat_export.json",
        [
            (
                "Packing list",
                [
                    ("USER", "What should I pack for Iceland in March?", "2025-03-01T10:00:00"),
                    (
                        "ASSISTANT",
                        "A warm layered jacket and waterproof boots.",
                        "2025-03-01T10:01:00",
                    ),
                    ("USER", "And for the Blue Lagoon?", "2025-03-01T10:02:00"),
                    ("ASSISTANT", "A swimsuit and a towel.", "2025-03-01T10:02:10"),
                ],
            )
        ],
    ),
}


@pytest.fixture
async def opened(api_factory, database):
    return await api_factory(database_url=database.url, api_keys=KEYS, import_max_bytes=64 * 1024)


@pytest.fixture
def api(opened):
    return opened[1]


def _fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


async def post_import(api, source, data, headers=ALICE, name="export.json", **form):
    form = {"source": source, "agentId": "demo", **form}
    files = {"file": (name, data, "application/octet-stream")}
    return await api.post("/api/v1/imports", data=form, files=files, headers=headers)


async def finished(api, import_id: str, headers=ALICE) -> dict:
    async def done():
        resp = await api.get(f"/api/v1/imports/{import_id}", headers=headers)
        assert resp.status_code == 200, resp.text
        return resp.json() if resp.json()["status"] != "running" else None

    return await wait_until(done, "the import to finish", within=20)


async def imported(api, source, data, **kw) -> dict:
    resp = await post_import(api, source, data, **kw)
    assert resp.status_code == 202, resp.text
    return await finished(api, resp.json()["importId"])


async def conversations(api, headers=ALICE) -> list[dict]:
    resp = await api.get("/api/v1/conversations", params={"limit": 100}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


async def transcript(api, uuid: str, headers=ALICE) -> list[tuple[str, str, str]]:
    resp = await api.get(f"/api/v1/conversations/{uuid}/messages", headers=headers)
    assert resp.status_code == 200, resp.text
    return [(m["role"], m["content"], m["createdAt"][:19]) for m in resp.json()["items"]]


@pytest.mark.parametrize("source", sorted(EXPECTED))
async def test_each_export_imports_its_active_branch_with_dates(api, source) -> None:
    name, expected = EXPECTED[source]
    result = await imported(api, source, _fixture(name))
    assert result["status"] == "done" and result["errors"] == []
    assert result["conversationsAdded"] == len(expected)
    assert result["messagesAdded"] == sum(len(msgs) for _t, msgs in expected)
    stored = {c["title"]: c for c in await conversations(api)}
    assert set(stored) == {title for title, _m in expected}
    for title, msgs in expected:
        assert await transcript(api, stored[title]["uuid"]) == msgs
        assert stored[title]["createdAt"][:19] <= msgs[0][2]
    again = await imported(api, source, _fixture(name))
    assert again["conversationsAdded"] == 0 and again["messagesAdded"] == 0
    assert len(await conversations(api)) == len(expected)


async def test_chatgpt_edit_takes_current_node_and_counts_branches(api) -> None:
    result = await imported(api, "chatgpt", _fixture("chatgpt_conversations.json"))
    assert result["branchesSkipped"] == 2  # Spain (the edit's old branch) and Milan (regenerated)
    assert result["leftOut"] == 3  # a hidden system node, a tool call and its output
    texts = [t for c in await conversations(api) for _r, t, _d in await transcript(api, c["uuid"])]
    assert "Rome." in texts and not {"Madrid.", "Milan.", "And of Spain?"} & set(texts)


async def test_the_export_zip_is_read_and_preview_stores_nothing(api) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("chat.html", "<html></html>")
        zipped.writestr("conversations.json", _fixture("chatgpt_conversations.json"))
    files = {"file": ("export.zip", buffer.getvalue(), "application/zip")}
    preview = await api.post(
        "/api/v1/imports/preview", data={"source": "chatgpt"}, files=files, headers=ALICE
    )
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert (body["conversations"], body["messages"], body["branchesSkipped"]) == (2, 6, 2)
    assert body["first"].startswith("2025-01-01T10:00") and body["last"].startswith("2025-02-01")
    dry = await post_import(api, "chatgpt", buffer.getvalue(), name="x.zip")
    assert dry.status_code == 202
    await finished(api, dry.json()["importId"])
    assert len(await conversations(api)) == 2


async def test_dry_run_answers_the_preview_without_storing(api) -> None:
    resp = await api.post(
        "/api/v1/imports",
        params={"dryRun": "true"},
        data={"source": "librechat", "agentId": "demo"},
        files={"file": ("l.json", _fixture("librechat_export.json"))},
        headers=ALICE,
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["messages"] == 4 and resp.json()["branchesSkipped"] == 1
    assert await conversations(api) == []


def _zip(members: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


BAD = {
    "wrong format": ("claude", _fixture("chatgpt_conversations.json"), 422, "chat_messages"),
    "not json": ("chatgpt", b"hello there", 422, "not valid JSON"),
    "truncated": ("chatgpt", _fixture("chatgpt_conversations.json")[:700], 422, "truncated"),
    "too large": ("chatgpt", b"[" + b" " * (70 * 1024) + b"]", 413, "LUMINA_IMPORT_MAX_BYTES"),
    "far too large": ("chatgpt", b"[" + b" " * (300 * 1024) + b"]", 413, "over the"),
    "zip bomb": ("chatgpt", _zip({"conversations.json": b"[" + b" " * 60_000 + b"]"}), 422, "bomb"),
    "path in zip": (
        "chatgpt",
        _zip({"../../etc/conversations.json": _fixture("chatgpt_conversations.json")}),
        422,
        "outside",
    ),
    "truncated zip": ("chatgpt", _zip({"conversations.json": b"[]" * 500})[:-30], 422, "zip"),
    "bad time": (
        "librechat",
        json.dumps(
            {
                "conversationId": "x",
                "messages": [
                    {"messageId": "a", "parentMessageId": None, "text": "hi", "createdAt": "soon"}
                ],
            }
        ).encode(),
        422,
        "not a time",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
async def test_bad_input_is_a_clean_4xx_and_stores_nothing(api, case) -> None:
    source, data, status, reason = BAD[case]
    resp = await post_import(api, source, data)
    assert resp.status_code == status, resp.text
    assert reason in resp.json()["error"]["message"]
    assert await conversations(api) == []


async def test_another_owner_sees_no_import(api) -> None:
    result = await imported(api, "openwebui", _fixture("openwebui_export.json"))
    assert (await api.get(f"/api/v1/imports/{result['importId']}", headers=BOB)).status_code == 404
    assert await conversations(api, headers=BOB) == []
    uuid = result["conversationIds"][0]
    resp = await api.get(f"/api/v1/conversations/{uuid}/messages", headers=BOB)
    assert resp.status_code == 404
    # Bob importing the same file gets his own copies; Alice's are untouched.
    started = await post_import(api, "openwebui", _fixture("openwebui_export.json"), headers=BOB)
    bobs = await finished(api, started.json()["importId"], headers=BOB)
    assert bobs["conversationsAdded"] == 2 and not set(bobs["conversationIds"]) & set(
        result["conversationIds"]
    )


async def test_imported_messages_are_recalled(api) -> None:
    result = await imported(api, "librechat", _fixture("librechat_export.json"))
    resp = await api.get(
        "/api/v1/recall", params={"q": "what to bring to the Blue Lagoon"}, headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    hits = [(h["conversationId"], h["seq"]) for h in resp.json()["items"][:3]]
    assert {(result["conversationIds"][0], 3), (result["conversationIds"][0], 4)} & set(hits)


async def test_a_memory_block_becomes_memories_with_provenance(api) -> None:
    resp = await api.post(
        "/api/v1/imports",
        data={"source": "memories", "agentId": "demo", "memoriesFrom": "claude",
              "text": _fixture("chatgpt_memories.txt").decode()},
        headers=ALICE,
    )  # fmt: skip
    assert resp.status_code == 202, resp.text
    result = await finished(api, resp.json()["importId"])
    assert result["memoriesAdded"] == 4
    listed = await api.get("/api/v1/memories", headers=ALICE)
    items = listed.json()["items"]
    assert sorted(m["text"] for m in items) == sorted(
        ["Prefers metric units", "Lives in Lyon, France", "Is learning the cello",
         "Works as a data engineer"]
    )  # fmt: skip
    assert all(m.get("origin") == "imported from Claude" for m in items), items
    again = await api.post(
        "/api/v1/imports",
        data={"source": "memories", "agentId": "demo", "text": "- Prefers metric units"},
        headers=ALICE,
    )
    assert (await finished(api, again.json()["importId"]))["memoriesAdded"] == 0
    assert (await api.get("/api/v1/memories", headers=BOB)).json()["items"] == []


def _claude_chat(said: str, answer: str) -> bytes:
    return json.dumps([{
        "uuid": "c1a7de00-0000-4000-8000-0000000000aa", "name": "About me",
        "created_at": "2025-04-01T08:00:00Z", "updated_at": "2025-04-01T08:01:00Z",
        "chat_messages": [
            {"uuid": "q1", "text": said, "sender": "human", "created_at": "2025-04-01T08:00:00Z"},
            {"uuid": "a1", "text": answer, "sender": "assistant",
             "created_at": "2025-04-01T08:00:30Z"},
        ],
    }]).encode()  # fmt: skip


@pytest.mark.parametrize("learn", [True, False])
async def test_learning_memories_from_an_import_only_when_ticked(api, learn) -> None:
    """ "Learn memories from these" runs the extractor over each imported question and its
    answer (the demo extractor keeps "my name is …"); unticked, nothing is learnt."""
    data = _claude_chat("Hello, my name is Ada and I work on graph databases.", "Hi Ada!")
    form = {"extractMemories": "true"} if learn else {}
    result = await imported(api, "claude", data, **form)
    assert result["conversationsAdded"] == 1
    listed = (await api.get("/api/v1/memories", headers=ALICE)).json()["items"]
    if learn:
        assert result["memoriesAdded"] >= 1 and any("Ada" in m["text"] for m in listed), listed
    else:
        assert result["memoriesAdded"] == 0 and listed == []
