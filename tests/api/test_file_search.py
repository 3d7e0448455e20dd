"""Files found again (#48; docs/FILES.md): a phrase found only in the text of a file a
message carries finds that message through search and recall, in one conversation and
across the owner's, and the hit names the file; another owner finds nothing; deleting the
file or the conversation makes it unfindable. On SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import pytest

from tests.api.test_files import ALICE, BOB, KEYS, uploaded
from tests.pdf_bytes import text_pdf

SPEC = (
    "Quarterly plan.\n\n"
    + "Filler words about meetings and schedules. " * 150
    + "\nThe heliotrope ledger reconciles every wombat invoice before Friday.\n"
    + "More filler about nothing in particular. " * 150
)


@pytest.fixture
async def api(api_factory, database):
    return (await api_factory(database_url=database.url, api_keys=KEYS))[1]


async def send(api, task: str, files: list[str], headers=ALICE, uuid: str | None = None) -> str:
    body = {"task": task, "files": files, **({"conversationId": uuid} if uuid else {})}
    resp = await api.post("/api/v1/agents/demo/execute/sync", json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["conversationId"]


async def items(api, path: str, q: str, headers=ALICE) -> list[dict]:
    resp = await api.get(path, params={"q": q}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


async def file_hits(api, path: str, q: str, headers=ALICE) -> list[dict]:
    """The hits found by a file's text. (The demo model's answer quotes the question it
    was sent, the file's text with it, so a short file's words are in the answer too.)"""
    return [h for h in await items(api, path, q, headers) if h.get("file")]


async def test_search_finds_a_message_by_its_files_text(api) -> None:
    spec = await uploaded(api, "spec.md", SPEC.encode())
    uuid = await send(api, "Here is the plan for next quarter", [spec["id"]])
    other = await send(api, "Unrelated chatter about lunch", [])
    for path in ("/api/v1/search", f"/api/v1/conversations/{uuid}/search"):
        hits = await items(api, path, "heliotrope ledger")
        assert [(h["conversationId"], h["seq"], h["role"]) for h in hits] == [(uuid, 1, "USER")]
        assert hits[0]["file"] == {"id": spec["id"], "name": "spec.md"}
        assert "<mark>heliotrope</mark> <mark>ledger</mark>" in hits[0]["snippet"]
        assert "wombat" in hits[0]["snippet"]  # from the file's text, not the message's
        assert await items(api, path, "heliotrope zeppelin") == []  # every word needed
    assert await items(api, f"/api/v1/conversations/{other}/search", "heliotrope") == []
    # an ordinary hit keeps its shape: no "file" key
    plain = await items(api, "/api/v1/search", "lunch")
    assert plain and all("file" not in h for h in plain)
    # another owner finds nothing, and cannot search the conversation
    assert await items(api, "/api/v1/search", "heliotrope ledger", headers=BOB) == []
    resp = await api.get(
        f"/api/v1/conversations/{uuid}/search", params={"q": "heliotrope"}, headers=BOB
    )
    assert resp.status_code == 404


async def test_a_pdfs_text_is_searched(api) -> None:
    pdf = await uploaded(api, "report.pdf", text_pdf("Cover", "The marmalade budget for 2027"))
    uuid = await send(api, "see attached", [pdf["id"]])
    hits = await file_hits(api, "/api/v1/search", "marmalade budget")
    assert [(h["conversationId"], h["file"]["name"]) for h in hits] == [(uuid, "report.pdf")]


async def test_a_word_inside_another_is_not_a_match(api) -> None:
    note = await uploaded(api, "n.txt", b"concatenate the strings\n")
    await send(api, "a note", [note["id"]])
    assert await items(api, "/api/v1/search", "cat") == []
    assert len(await file_hits(api, "/api/v1/search", "concat")) == 1  # the last: a prefix


async def test_recall_finds_a_message_by_a_passage_of_its_file(api) -> None:
    spec = await uploaded(api, "spec.md", SPEC.encode())
    uuid = await send(api, "Here is the plan for next quarter", [spec["id"]])
    await send(api, "We talked about invoices in general today", [])
    question = "what did the spec say about the heliotrope ledger and wombat invoices?"
    for path in ("/api/v1/recall", f"/api/v1/conversations/{uuid}/recall"):
        hits = await items(api, path, question)
        found = [h for h in hits if h.get("file")]
        assert [(h["conversationId"], h["seq"]) for h in found] == [(uuid, 1)], hits
        assert found[0]["file"] == {"id": spec["id"], "name": "spec.md"}
        assert "<mark>heliotrope</mark>" in found[0]["snippet"]
        assert len(found[0]["snippet"]) < 400  # a passage's snippet, not the whole file
    plain = await items(api, "/api/v1/recall", "talked in general today")
    assert plain and all("file" not in h for h in plain)  # an ordinary hit keeps its shape
    assert await items(api, "/api/v1/recall", question, headers=BOB) == []


async def test_deleting_the_file_or_the_conversation_makes_it_unfindable(api) -> None:
    one = await uploaded(api, "one.txt", b"The tangerine protocol, first draft\n")
    two = await uploaded(api, "two.txt", b"The saffron protocol, second draft\n")
    first = await send(api, "draft one", [one["id"]])
    second = await send(api, "draft two", [two["id"]])
    assert len(await file_hits(api, "/api/v1/search", "tangerine protocol")) == 1
    assert len(await items(api, "/api/v1/recall", "saffron protocol")) >= 1
    assert (await api.delete(f"/api/v1/files/{one['id']}", headers=ALICE)).status_code == 204
    assert await file_hits(api, "/api/v1/search", "tangerine") == []
    gone = await file_hits(api, f"/api/v1/conversations/{first}/recall", "tangerine protocol")
    assert gone == []
    resp = await api.delete(f"/api/v1/conversations/{second}", headers=ALICE)
    assert resp.status_code in (200, 204), resp.text
    assert await items(api, "/api/v1/search", "saffron") == []
    recalled = await items(api, "/api/v1/recall", "saffron protocol")
    assert [h for h in recalled if h.get("file")] == []
