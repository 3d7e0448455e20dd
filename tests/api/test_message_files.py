"""Files on sends (#48, part 2; docs/FILES.md): a send names the caller's uploads by id on
both execute families; they are checked before anything is stored (another owner's or an
unknown id 404, too many or too large 413, the same id twice or not a list 422), stored
with the question (``files`` on the messages API) and linked to it; a retry with the same
Idempotency-Key is the same send. On SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import httpx
import pytest
import sqlalchemy as sa

from tests.api.helpers import assert_sse_response, bearer, error_of, parse_sse
from tests.api.test_files import png, uploaded

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")


@pytest.fixture
async def opened(api_factory, database):
    return await api_factory(database_url=database.url, api_keys=KEYS)


@pytest.fixture
def api(opened):
    return opened[1]


def links(url: str) -> list[tuple[int, int]]:
    """(seq, position) of every link row."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT seq, position FROM lumina_message_file")).all()
    engine.dispose()
    return sorted((r[0], r[1]) for r in rows)


async def conversations(api: httpx.AsyncClient, headers=ALICE) -> list[dict]:
    resp = await api.get("/api/v1/conversations", headers=headers)
    assert resp.status_code == 200
    return resp.json()["items"]


async def messages_of(api: httpx.AsyncClient, uuid: str, headers=ALICE) -> list[dict]:
    resp = await api.get(f"/api/v1/conversations/{uuid}/messages", headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def shown(file: dict) -> dict:
    """How a message shows an uploaded file."""
    return {k: file[k] for k in ("id", "name", "type", "size")}


async def test_files_ride_on_execute_sync_and_show_on_the_question(api, database) -> None:
    note = await uploaded(api, "note.txt", b"the build log says hello\n")
    image = await uploaded(api, "pixel.png", png())
    body = {"task": "What do these say?", "files": [note["id"], image["id"]]}
    resp = await api.post("/api/v1/agents/demo/execute/sync", json=body, headers=ALICE)
    assert resp.status_code == 200, resp.text
    uuid = resp.json()["conversationId"]
    question, answer = await messages_of(api, uuid)
    assert question["files"] == [shown(note), shown(image)]
    assert question["meta"]["files"] == question["files"]
    assert "files" not in answer  # the seed's shape on a message without files
    assert links(database.url) == [(1, 0), (1, 1)]
    # a next turn without files keeps the seed's shape too
    again = {"task": "thanks", "conversationId": uuid}
    next_turn = await api.post("/api/v1/agents/demo/execute/sync", json=again, headers=ALICE)
    assert next_turn.status_code == 200
    rows = await messages_of(api, uuid)
    assert [("files" in m) for m in rows] == [True, False, False, False]


async def test_files_alone_are_a_message(api) -> None:
    image = await uploaded(api, "only.png", png())
    resp = await api.post(
        "/api/v1/agents/demo/execute/sync", json={"files": [image["id"]]}, headers=ALICE
    )
    assert resp.status_code == 200, resp.text
    question = (await messages_of(api, resp.json()["conversationId"]))[0]
    assert question["content"] == "" and question["files"] == [shown(image)]
    title = (await conversations(api))[0]["title"]
    assert title == "only.png"  # no words to name it after: the file's name


async def test_files_ride_on_family_b_chat_execute_and_execute_stream(api, database) -> None:
    first = await uploaded(api, "a.txt", b"first\n")
    second = await uploaded(api, "b.txt", b"second\n")
    third = await uploaded(api, "c.txt", b"third\n")
    chat = await api.post(
        "/api/agent/demo/chat", json={"message": "one", "files": [first["id"]]}, headers=ALICE
    )
    events = assert_sse_response(chat)
    uuid = next(e.json for e in events if e.event == "session")["conversationId"]
    stream = await api.post(
        "/api/v1/agents/demo/execute/stream",
        json={"task": "two", "conversationId": uuid, "files": [second["id"]]},
        headers=ALICE,
    )
    assert any("done" in e.json for e in parse_sse(stream.content))
    started = await api.post(
        "/api/v1/agents/demo/execute",
        json={"task": "three", "conversationId": uuid, "files": [third["id"]]},
        headers=ALICE,
    )
    assert started.status_code == 202, started.text
    await api.get(f"/api/v1/runs/{started.json()['runId']}/stream", headers=ALICE)
    questions = [m for m in await messages_of(api, uuid) if m["role"] == "USER"]
    assert [q["files"] for q in questions] == [[shown(first)], [shown(second)], [shown(third)]]
    detail = await api.get(f"/api/agent/demo/conversations/{uuid}", headers=ALICE)
    entries = detail.json()["messages"]
    assert [e.get("files") for e in entries][:2] == [[shown(first)], None]  # as on v1
    assert links(database.url) == [(1, 0), (3, 0), (5, 0)]


@pytest.mark.parametrize(
    ("route", "field"),
    [("/api/v1/agents/demo/execute/sync", "task"), ("/api/agent/demo/chat", "message")],
)
async def test_a_retry_with_the_same_key_is_the_same_send(api, database, route, field) -> None:
    image = await uploaded(api, "pixel.png", png())
    other = await uploaded(api, "other.png", png(3, 1))
    body = {field: "once", "files": [image["id"]]}
    headers = {**ALICE, "Idempotency-Key": "send-1"}
    first = await api.post(route, json=body, headers=headers)
    again = await api.post(route, json=body, headers=headers)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert len(await conversations(api)) == 1 and links(database.url) == [(1, 0)]
    changed = await api.post(route, json={**body, "files": [other["id"]]}, headers=headers)
    error_of(changed, 422)  # the same key with other files is another request


async def nothing_stored(api, database) -> None:
    assert await conversations(api) == []
    assert links(database.url) == []


async def test_another_owners_file_is_a_404_and_nothing_is_stored(api, database) -> None:
    bobs = await uploaded(api, "bob.png", png(), headers=BOB)
    mine = await uploaded(api, "mine.png", png())
    for files in ([bobs["id"]], [mine["id"], bobs["id"]], ["file-" + "0" * 24], ["nope"]):
        for route, field in (
            ("/api/v1/agents/demo/execute/sync", "task"),
            ("/api/v1/agents/demo/execute", "task"),
            ("/api/v1/agents/demo/execute/stream", "task"),
            ("/api/agent/demo/chat", "message"),
        ):
            resp = await api.post(route, json={field: "hi", "files": files}, headers=ALICE)
            assert error_of(resp, 404)["code"] == "not_found"
    await nothing_stored(api, database)
    # into a stored conversation: nothing added to it either
    uuid = await api.post("/api/v1/agents/demo/execute/sync", json={"task": "hi"}, headers=ALICE)
    uuid = uuid.json()["conversationId"]
    body = {"task": "more", "conversationId": uuid, "files": [bobs["id"]]}
    error_of(await api.post("/api/v1/agents/demo/execute/sync", json=body, headers=ALICE), 404)
    assert len(await messages_of(api, uuid)) == 2


async def test_too_many_files_duplicates_and_non_lists_are_refused(api, database) -> None:
    ids = [(await uploaded(api, f"f{n}.txt", f"file {n}\n".encode()))["id"] for n in range(11)]
    route = "/api/v1/agents/demo/execute/sync"
    too_many = await api.post(route, json={"task": "hi", "files": ids}, headers=ALICE)
    assert "LUMINA_MAX_FILES_PER_MESSAGE" in error_of(too_many, 413)["message"]
    twice = await api.post(route, json={"task": "hi", "files": [ids[0], ids[0]]}, headers=ALICE)
    assert "more than once" in error_of(twice, 422)["message"]
    for bad in (ids[0], {"id": ids[0]}, [1, 2], None):
        error_of(await api.post(route, json={"task": "hi", "files": bad}, headers=ALICE), 422)
        chat = {"message": "hi", "files": bad}
        error_of(await api.post("/api/agent/demo/chat", json=chat, headers=ALICE), 422)
    empty = await api.post(route, json={"task": "  ", "files": []}, headers=ALICE)
    error_of(empty, 422)  # no words and no files: nothing to send
    await nothing_stored(api, database)


async def test_the_files_of_one_message_have_a_byte_limit(api_factory, database) -> None:
    _services, api = await api_factory(
        database_url=database.url, api_keys=KEYS, max_message_file_bytes=1024
    )
    ids = [(await uploaded(api, f"{n}.txt", b"x" * 600))["id"] for n in range(2)]
    one = await api.post(
        "/api/v1/agents/demo/execute/sync", json={"task": "hi", "files": ids[:1]}, headers=ALICE
    )
    assert one.status_code == 200
    both = await api.post(
        "/api/v1/agents/demo/execute/sync", json={"task": "hi", "files": ids}, headers=ALICE
    )
    assert "LUMINA_MAX_MESSAGE_FILE_BYTES" in error_of(both, 413)["message"]
    assert len(await conversations(api)) == 1


def file_rows(url: str) -> dict[str, int]:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        found = {
            t: conn.execute(sa.text(f"SELECT COUNT(*) FROM {t}")).scalar()
            for t in ("lumina_file", "lumina_file_blob", "lumina_file_chunk", "lumina_message_file")
        }
    engine.dispose()
    return found


async def send(api, task: str, files: list[str], conversation: str | None = None) -> str:
    body = {"task": task, "files": files, "conversationId": conversation}
    resp = await api.post("/api/v1/agents/demo/execute/sync", json=body, headers=ALICE)
    assert resp.status_code == 200, resp.text
    return resp.json()["conversationId"]


async def exists(api, file: dict) -> bool:
    resp = await api.get(f"/api/v1/files/{file['id']}", headers=ALICE)
    assert resp.status_code in (200, 404), resp.text
    return resp.status_code == 200


async def test_deleting_a_conversation_deletes_the_files_only_it_used(api, database) -> None:
    only = await uploaded(api, "only-here.txt", b"said once\n")
    shared = await uploaded(api, "shared.png", png())
    kept = await uploaded(api, "never-sent.txt", b"uploaded, never sent\n")
    twin = await uploaded(api, "twin.txt", b"said once\n")  # the same bytes as ``only``
    first = await send(api, "look", [only["id"], shared["id"]])
    await send(api, "and again", [shared["id"]], first)  # twice in one conversation
    second = await send(api, "this too", [shared["id"]])
    await send(api, "the twin", [twin["id"]])
    assert (await api.delete(f"/api/v1/conversations/{first}", headers=ALICE)).status_code == 204
    assert not await exists(api, only)
    assert await exists(api, shared) and await exists(api, kept) and await exists(api, twin)
    # ``only``'s bytes stay: ``twin`` has them (one blob per owner and content)
    assert file_rows(database.url) == {
        "lumina_file": 3,
        "lumina_file_blob": 3,
        "lumina_file_chunk": 3,
        "lumina_message_file": 2,
    }
    gone = await api.delete(f"/api/agent/demo/conversations/{second}", headers=ALICE)
    assert gone.status_code == 204  # family B's delete: the same rule
    assert not await exists(api, shared) and await exists(api, kept)
    assert file_rows(database.url)["lumina_file"] == 2


async def test_a_fork_keeps_the_files_its_questions_carry(api, database) -> None:
    image = await uploaded(api, "pixel.png", png())
    source = await send(api, "see", [image["id"]])
    resp = await api.post(f"/api/v1/conversations/{source}/fork", json={"atSeq": 2}, headers=ALICE)
    assert resp.status_code == 201, resp.text
    fork = resp.json()["uuid"]
    assert (await messages_of(api, fork))[0]["files"] == [shown(image)]
    assert (await api.delete(f"/api/v1/conversations/{source}", headers=ALICE)).status_code == 204
    assert await exists(api, image)  # the fork's question still carries it
    assert (await api.delete(f"/api/v1/conversations/{fork}", headers=ALICE)).status_code == 204
    assert not await exists(api, image)


async def test_an_edited_question_keeps_its_files(api, database) -> None:
    image = await uploaded(api, "pixel.png", png())
    uuid = await send(api, "what is this?", [image["id"]])
    resp = await api.post(
        f"/api/v1/conversations/{uuid}/messages/1/edit",
        json={"message": "what colour is this?", "stream": False},
        headers=ALICE,
    )
    assert resp.status_code == 200, resp.text
    rows = await messages_of(api, uuid)
    question = next(m for m in rows if m["role"] == "USER")
    assert question["content"] == "what colour is this?" and question["seq"] == 3
    assert question["files"] == [shown(image)]
    assert links(database.url) == [(1, 0), (3, 0)]  # the parked question keeps its own
    regenerated = await api.post(
        f"/api/v1/conversations/{uuid}/regenerate", json={"stream": False}, headers=ALICE
    )
    assert regenerated.status_code == 200, regenerated.text
    assert links(database.url) == [(1, 0), (3, 0)]
    assert (await api.delete(f"/api/v1/conversations/{uuid}", headers=ALICE)).status_code == 204
    assert not await exists(api, image)
    assert file_rows(database.url) == dict.fromkeys(file_rows(database.url), 0)


async def test_deleting_the_question_deletes_the_files_only_it_used(api, database) -> None:
    only = await uploaded(api, "only.txt", b"once\n")
    shared = await uploaded(api, "shared.txt", b"twice\n")
    uuid = await send(api, "first", [only["id"], shared["id"]])
    await send(api, "second", [shared["id"]], uuid)
    question = (await messages_of(api, uuid))[0]
    item = f"/v1/conversations/conv_{uuid}/items/msg_{question['id']}"
    assert (await api.delete(item, headers=ALICE)).status_code == 200
    assert not await exists(api, only) and await exists(api, shared)
    assert links(database.url) == [(3, 0)]
