"""Forks, on every backend: a new conversation with another's messages up to a seq, its
own memory from there on, the original untouched; summaries that fit come along; bad
fork points, other owners and retries handled; forks survive export and import."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lumina_app.composition import current
from lumina_app.domain import ImportOutcome, MessageStatus
from lumina_app.storage.sql.models import messages as M
from tests.api.helpers import UUID, bearer, error_of, messages, new_conversation, say

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
SAME = ("seq", "turnId", "role", "content", "status", "createdAt")


@pytest.fixture
async def api_on(api_factory, database):
    _services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return client


async def three_turns(api) -> str:
    conv = (await new_conversation(api, title="Trip", headers=ALICE))["uuid"]
    for text in ("first: Lisbon", "second: Porto", "third: Faro"):
        await say(api, text, conv, headers=ALICE)
    return conv


async def fork(api, conv: str, status: int = 201, headers=ALICE, **body):
    resp = await api.post(f"/api/v1/conversations/{conv}/fork", json=body, headers=headers)
    assert resp.status_code == status, resp.text
    return resp.json()


async def test_a_fork_copies_the_messages_up_to_its_point(api_on) -> None:
    conv = await three_turns(api_on)
    original = await messages(api_on, conv, headers=ALICE)
    forked = await fork(api_on, conv, atSeq=4)
    assert UUID.match(forked["uuid"]) and forked["uuid"] != conv
    assert forked["parentUuid"] == conv and forked["forkedAtSeq"] == 4
    assert forked["title"] == "Trip (fork)" and forked["agentId"] == "demo"
    assert (forked["messageCount"], forked["lastSeq"], forked["status"]) == (4, 4, "idle")
    copied = await messages(api_on, forked["uuid"], headers=ALICE)
    assert [{k: m[k] for k in SAME} for m in copied] == [
        {k: m[k] for k in SAME} for m in original[:4]
    ]
    got = await api_on.get(f"/api/v1/conversations/{forked['uuid']}", headers=ALICE)
    assert got.json() == forked
    listed = (await api_on.get("/api/v1/conversations", headers=ALICE)).json()["items"]
    assert listed[0]["uuid"] == forked["uuid"] and listed[0]["parentUuid"] == conv
    source = (await api_on.get(f"/api/v1/conversations/{conv}", headers=ALICE)).json()
    assert source["parentUuid"] is None and source["forkedAtSeq"] is None


async def test_a_fork_goes_on_with_its_own_memory(api_on) -> None:
    conv = await three_turns(api_on)
    forked = (await fork(api_on, conv, atSeq=2, title="Only Lisbon"))["uuid"]
    run = await say(api_on, "fourth: Sintra", forked, headers=ALICE)
    context = (await api_on.get(f"/api/v1/runs/{run['runId']}/context", headers=ALICE)).json()
    sent = [m["content"] for m in context["messages"] if m["role"] != "system"]
    assert sent[0] == "first: Lisbon" and sent[-1] == "fourth: Sintra"
    assert not any("Porto" in text or "Faro" in text for text in sent)
    assert context["scenario"] == "resume"
    in_fork = await messages(api_on, forked, headers=ALICE)
    assert [m["seq"] for m in in_fork] == [1, 2, 3, 4]
    in_original = await messages(api_on, conv, headers=ALICE)
    assert len(in_original) == 6 and "Sintra" not in str(in_original)
    # the original goes on untouched by the fork's window
    run = await say(api_on, "fifth: Braga", conv, headers=ALICE)
    context = (await api_on.get(f"/api/v1/runs/{run['runId']}/context", headers=ALICE)).json()
    assert "Sintra" not in str(context["messages"]) and "Faro" in str(context["messages"])


async def test_fork_defaults_to_everything(api_on) -> None:
    conv = await three_turns(api_on)
    resp = await api_on.post(f"/api/v1/conversations/{conv}/fork", headers=ALICE)
    assert resp.status_code == 201, resp.text
    assert (resp.json()["forkedAtSeq"], resp.json()["messageCount"]) == (6, 6)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"atSeq": 0}, "atSeq"),
        ({"atSeq": 7}, "atSeq must be a seq of this conversation (1-6)"),
        ({"atSeq": 2**31}, "atSeq"),
        ({"atSeq": "two"}, "atSeq"),
        ({"atSeq": 2.5}, "atSeq"),
        ({"atSeq": 2, "extra": 1}, "extra"),
        ({"title": "x" * 256}, "title"),
        ({"title": "a\x00b"}, "title"),
    ],
)
async def test_bad_fork_points_are_422(api_on, body, problem) -> None:
    conv = await three_turns(api_on)
    error = error_of(
        await api_on.post(f"/api/v1/conversations/{conv}/fork", json=body, headers=ALICE), 422
    )
    assert problem in str(error)
    listed = (await api_on.get("/api/v1/conversations", headers=ALICE)).json()["items"]
    assert [c["uuid"] for c in listed] == [conv]


async def test_an_empty_conversation_forks_into_an_empty_copy(api_on) -> None:
    conv = (await new_conversation(api_on, headers=ALICE))["uuid"]
    resp = await api_on.post(f"/api/v1/conversations/{conv}/fork", json={"atSeq": 1}, headers=ALICE)
    assert "atSeq must be a seq of this conversation (it has no messages yet)" in resp.text
    forked = await fork(api_on, conv)
    assert (forked["parentUuid"], forked["forkedAtSeq"], forked["messageCount"]) == (conv, 0, 0)
    await say(api_on, "hello", forked["uuid"], headers=ALICE)
    assert len(await messages(api_on, forked["uuid"], headers=ALICE)) == 2
    assert await messages(api_on, conv, headers=ALICE) == []


async def test_someone_elses_conversation_cannot_be_forked(api_on) -> None:
    conv = await three_turns(api_on)
    resp = await api_on.post(f"/api/v1/conversations/{conv}/fork", headers=BOB)
    assert error_of(resp, 404)["code"] == "not_found"
    resp = await api_on.post(f"/api/v1/conversations/{conv}/fork")
    assert error_of(resp, 401)["code"] == "unauthorized"
    assert (await api_on.get("/api/v1/conversations", headers=BOB)).json()["items"] == []


async def test_a_retry_with_the_same_key_makes_one_fork(api_on) -> None:
    conv = await three_turns(api_on)
    headers = {**ALICE, "Idempotency-Key": "fork-1"}
    first = await api_on.post(
        f"/api/v1/conversations/{conv}/fork", json={"atSeq": 2}, headers=headers
    )
    again = await api_on.post(
        f"/api/v1/conversations/{conv}/fork", json={"atSeq": 2}, headers=headers
    )
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json()
    other = await api_on.post(
        f"/api/v1/conversations/{conv}/fork", json={"atSeq": 3}, headers=headers
    )
    assert "Idempotency-Key" in error_of(other, 422)["message"]
    listed = (await api_on.get("/api/v1/conversations", headers=ALICE)).json()["items"]
    assert len(listed) == 2


async def test_summaries_that_fit_come_along(api_on) -> None:
    conv = await three_turns(api_on)
    memory, lookup = current().memory, current().reads.lookup
    source = await lookup.get_conversation(conv)
    await memory.write_summary(source, covered_to_seq=2, text="Lisbon first.", model="t")
    await memory.write_summary(source, covered_to_seq=4, text="Lisbon, Porto.", model="t")
    forked = (await fork(api_on, conv, atSeq=3))["uuid"]
    copied = await current().reads.archive.summaries_of(await lookup.get_conversation(forked))
    assert [(s.covered_to_seq, s.text) for s in copied] == [(2, "Lisbon first.")]
    view = await memory.load_view(await lookup.get_conversation(forked))
    assert view.summary.text == "Lisbon first." and [m.seq for m in view.messages] == [1, 2, 3]


async def test_a_fork_outlives_its_parent(api_on) -> None:
    conv = await three_turns(api_on)
    forked = (await fork(api_on, conv, atSeq=2))["uuid"]
    assert (await api_on.delete(f"/api/v1/conversations/{conv}", headers=ALICE)).status_code == 204
    got = (await api_on.get(f"/api/v1/conversations/{forked}", headers=ALICE)).json()
    assert got["parentUuid"] == conv and got["messageCount"] == 2
    assert (await messages(api_on, forked, headers=ALICE))[0]["content"] == "first: Lisbon"


async def test_an_answer_still_streaming_is_copied_interrupted(api_on) -> None:
    conv = await three_turns(api_on)
    db = current().memory.cold.db
    async with db.begin() as conn:  # the last answer as a crashed run left it
        await conn.execute(
            sa.update(M).where(M.c.seq == 6).values(status=MessageStatus.STREAMING.value)
        )
    forked = (await fork(api_on, conv))["uuid"]
    copied = await messages(api_on, forked, headers=ALICE)
    assert copied[-1]["status"] == "interrupted" and copied[-1]["content"]


async def test_forking_at_a_replaced_answer_makes_it_live_there(api_on) -> None:
    conv = await three_turns(api_on)
    db = current().memory.cold.db
    async with db.begin() as conn:  # answer 6 replaced by a regenerated one at seq 7
        row = (await conn.execute(sa.select(M).where(M.c.seq == 6))).one()
        await conn.execute(
            sa.update(M).where(M.c.id == row.id).values(status=MessageStatus.SUPERSEDED.value)
        )
        await conn.execute(
            sa.insert(M).values(
                conversation_id=row.conversation_id, seq=7, turn_id=row.turn_id,
                role="ASSISTANT", content="a better answer", status="complete",
                created_at=row.created_at, updated_at=row.updated_at,
                meta={"runId": "run-regenerated"},
            )
        )  # fmt: skip
        await conn.execute(
            sa.text("UPDATE lumina_conversation SET last_seq = 7, message_count = 7")
        )
    at_old = (await fork(api_on, conv, atSeq=6))["uuid"]
    assert [m["status"] for m in await messages(api_on, at_old, headers=ALICE)][-1] == "complete"
    at_new = (await fork(api_on, conv, atSeq=7))["uuid"]
    statuses = [m["status"] for m in await messages(api_on, at_new, headers=ALICE)]
    assert statuses[-2:] == ["superseded", "complete"]
    run = await say(api_on, "and then?", at_new, headers=ALICE)
    context = (await api_on.get(f"/api/v1/runs/{run['runId']}/context", headers=ALICE)).json()
    sent = [m["content"] for m in context["messages"]]
    assert "a better answer" in sent and not any("third: Faro" in s and "**" in s for s in sent)
    assert sum("offline demo model" in s for s in sent) == 2  # answers 2 and 4, not 6


async def test_forks_survive_export_and_import(api_on, tmp_path) -> None:
    conv = await three_turns(api_on)
    forked = (await fork(api_on, conv, atSeq=4))["uuid"]
    exported = await api_on.get(
        f"/api/v1/conversations/{forked}/export", params={"format": "archive"}, headers=ALICE
    )
    assert exported.status_code == 200, exported.text
    doc = await api_on.get(
        f"/api/v1/conversations/{forked}/export", params={"format": "json"}, headers=ALICE
    )
    assert doc.json()["meta"]["forkedFrom"] == {"conversationId": conv, "atSeq": 4}
    assert (
        await api_on.delete(f"/api/v1/conversations/{forked}", headers=ALICE)
    ).status_code == 204
    archive = tmp_path / "fork.zip"
    archive.write_bytes(exported.content)
    report = await current().archive.import_path(archive, owner="alice")
    assert report.count(ImportOutcome.CREATED) == 1, report
    got = (await api_on.get(f"/api/v1/conversations/{forked}", headers=ALICE)).json()
    assert (got["parentUuid"], got["forkedAtSeq"], got["messageCount"]) == (conv, 4, 4)
