"""Editing a question in place, on every backend (with real Redis): the edit is a new
branch of the same conversation, the old one kept (``superseded`` with ``meta.parked``);
``branch`` / ``branches`` on the edited question; switching branches switches everything
after it, and the next turn's context follows the active branch; nested edits come back as
they were; busy, empty, foreign and unknown refused; the branches through the archive."""

from __future__ import annotations

import json
import shutil

import pytest

from lumina_app.composition import current
from lumina_app.domain import ImportOutcome, MessageStatus, MsgRole
from tests.api.helpers import (
    assert_sse_response,
    error_of,
    messages,
    new_conversation,
    say,
    wait_for_text,
    wait_run,
)
from tests.api.test_regenerate import ALICE, BOB, KEYS, sent_to_model
from tests.conftest import ROOT


@pytest.fixture
async def api_on(api_factory, database):
    _services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return client


async def edit(api, conv: str, seq: int, text: str, status: int = 200, headers=ALICE):
    resp = await api.post(
        f"/api/v1/conversations/{conv}/messages/{seq}/edit",
        json={"message": text, "stream": False},
        headers=headers,
    )
    assert resp.status_code == status, resp.text
    return resp.json()


async def switch(api, conv: str, seq: int, branch: int, status: int = 200, headers=ALICE):
    resp = await api.post(
        f"/api/v1/conversations/{conv}/messages/{seq}/branch",
        json={"branch": branch},
        headers=headers,
    )
    assert resp.status_code == status, resp.text
    return resp.json()


def shown(rows: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"].lower(), m["content"]) for m in rows if m["status"] != "superseded"]


async def two_turns(api) -> str:
    conv = (await new_conversation(api, title="Trip", headers=ALICE))["uuid"]
    for text in ("A: Lisbon", "B: Porto"):
        await say(api, text, conv, headers=ALICE)
    return conv


async def test_edit_twice_switch_and_the_context_follows(api_on) -> None:
    conv = await two_turns(api_on)
    before = await messages(api_on, conv, headers=ALICE)
    assert all("branch" not in m for m in before)  # no edit: the shape of every row as ever
    answer_a, answer_b = before[1]["content"], before[3]["content"]

    first = await edit(api_on, conv, 3, "B2: Faro")
    assert (first["conversationId"], first["status"]) == (conv, "complete")
    assert await sent_to_model(api_on, first["runId"]) == ["A: Lisbon", answer_a, "B2: Faro"]
    rows = await messages(api_on, conv, headers=ALICE)
    assert [m["seq"] for m in rows] == [1, 2, 5, 6]  # the active branch only
    assert rows[2]["content"] == "B2: Faro" and rows[3]["id"] == first["messageId"]
    assert (rows[2]["branch"], rows[2]["branches"]) == (2, 2)
    assert rows[2]["meta"]["branchOf"] == 3 and "branch" not in rows[0]

    second = await edit(api_on, conv, 5, "B3: Braga")  # an edit of the edit: same group
    assert await sent_to_model(api_on, second["runId"]) == ["A: Lisbon", answer_a, "B3: Braga"]
    rows = await messages(api_on, conv, headers=ALICE)
    assert [(m["seq"], m.get("branch"), m.get("branches")) for m in rows] == [
        (1, None, None),
        (2, None, None),
        (7, 3, 3),
        (8, None, None),
    ]
    answer_b3 = rows[3]["content"]
    # a turn on branch 3, then a nested edit of it
    await say(api_on, "C: on three", conv, headers=ALICE)
    nested = await edit(api_on, conv, 9, "C2: nested")
    assert await sent_to_model(api_on, nested["runId"]) == [
        "A: Lisbon",
        answer_a,
        "B3: Braga",
        answer_b3,
        "C2: nested",
    ]
    branch3 = shown(await messages(api_on, conv, headers=ALICE))

    # back to branch 1: B and its answer again, everything after B switches
    assert await switch(api_on, conv, 7, 1) == {"conversationId": conv, "seq": 7, "branch": 1}
    rows = await messages(api_on, conv, headers=ALICE)
    assert shown(rows) == [
        ("user", "A: Lisbon"),
        ("assistant", answer_a),
        ("user", "B: Porto"),
        ("assistant", answer_b),
    ]
    assert (rows[2]["seq"], rows[2]["branch"], rows[2]["branches"]) == (3, 1, 3)
    assert rows[3]["status"] == "complete" and "parked" not in rows[3]["meta"]
    run = await say(api_on, "D: after B", conv, headers=ALICE)
    assert await sent_to_model(api_on, run["runId"]) == [
        "A: Lisbon",
        answer_a,
        "B: Porto",
        answer_b,
        "D: after B",
    ]
    branch1 = shown(await messages(api_on, conv, headers=ALICE))
    assert len(branch1) == 6

    # and to branch 3: its nested edit as it was left, the turn on branch 1 kept aside
    await switch(api_on, conv, 3, 3)
    assert shown(await messages(api_on, conv, headers=ALICE)) == branch3
    run = await say(api_on, "E: after C2", conv, headers=ALICE)
    sent = await sent_to_model(api_on, run["runId"])
    assert "C2: nested" in sent and "B3: Braga" in sent
    assert not {"B: Porto", "B2: Faro", "D: after B", "C: on three"} & set(sent)
    await switch(api_on, conv, 7, 1)
    assert shown(await messages(api_on, conv, headers=ALICE)) == branch1

    # every branch's rows, the hidden ones tagged; the window holds none of them
    everything = (
        await api_on.get(
            f"/api/v1/conversations/{conv}/messages",
            params={"limit": 100, "branches": "all"},
            headers=ALICE,
        )
    ).json()["items"]
    parked = [m for m in everything if "parked" in m["meta"]]
    assert {m["content"] for m in parked} >= {"B2: Faro", "B3: Braga", "C2: nested"}
    assert all(m["status"] == "superseded" for m in parked)
    memory, lookup = current().memory, current().reads.lookup
    conversation = await lookup.get_conversation(conv)
    window = await memory.load(conversation)
    assert [m.content for m in window if m.role is MsgRole.USER] == [
        "A: Lisbon",
        "B: Porto",
        "D: after B",
    ]
    assert MessageStatus.SUPERSEDED not in {m.status for m in window}
    rebuilt = await memory.rebuild(conversation)
    assert [m.id for m in rebuilt] == [m.id for m in window]


async def test_the_stream_and_a_regenerate_on_a_branch(api_on) -> None:
    conv = await two_turns(api_on)
    resp = await api_on.post(
        f"/api/v1/conversations/{conv}/messages/3/edit", json={"message": "B2"}, headers=ALICE
    )
    events = assert_sse_response(resp)
    assert events[0].json["conversationId"] == conv and events[0].json["scenario"] == "resume"
    rows = await messages(api_on, conv, headers=ALICE)
    assert events[-1].json == {"done": True, "messageId": rows[-1]["id"]}
    # a regenerate answers the branch's question; its old answer is never revived
    regen = await api_on.post(
        f"/api/v1/conversations/{conv}/regenerate", json={"stream": False}, headers=ALICE
    )
    assert regen.status_code == 200, regen.text
    await switch(api_on, conv, 5, 1)
    await switch(api_on, conv, 3, 2)
    rows = await messages(api_on, conv, headers=ALICE)
    assert [(m["content"] == "B2", m["status"]) for m in rows[2:]] == [
        (True, "complete"),
        (False, "superseded"),
        (False, "complete"),
    ]
    assert rows[-1]["id"] == regen.json()["messageId"]


async def test_an_edit_recalls_nothing_of_the_branch_it_leaves(
    api_factory, database, data_dir
) -> None:
    """The shipped assistant recalls earlier messages of the conversation: never those of
    the branch the edit leaves (they are still active while its context is built)."""
    shutil.copytree(ROOT / "data/agents/assistant", data_dir / "agents/assistant")
    _services, api = await api_factory(database_url=database.url, api_keys=KEYS)
    conv = (await new_conversation(api, agent="assistant", headers=ALICE))["uuid"]
    await say(api, "my locker code is 4711", conv, agent="assistant", headers=ALICE)
    result = await edit(api, conv, 1, "what is my locker code?")
    context = (await api.get(f"/api/v1/runs/{result['runId']}/context", headers=ALICE)).json()
    assert "4711" not in json.dumps(context["messages"])
    assert "recall" not in result["answer"]


async def test_pages_end_where_the_branch_does(api_on) -> None:
    """The seqs of the active branch have gaps after an edit: a page says there is more
    only when there is."""
    conv = await two_turns(api_on)
    await edit(api_on, conv, 1, "A2: Faro")  # rows 1-4 parked, 5-6 shown
    await edit(api_on, conv, 5, "A3: Braga")
    await switch(api_on, conv, 7, 2)  # 5-6 shown again, 7-8 parked: at both ends
    url = f"/api/v1/conversations/{conv}/messages"
    for params in ({}, {"after": 0, "before": 9}, {"after": 5}):
        page = (await api_on.get(url, params=params, headers=ALICE)).json()
        assert page["nextAfter"] is None, params  # forward: nothing after the last row
        assert [m["seq"] for m in page["items"]] == ([6] if params.get("after") else [5, 6])
    page = (await api_on.get(url, params={"before": 9}, headers=ALICE)).json()
    assert ([m["seq"] for m in page["items"]], page["nextBefore"]) == ([5, 6], None)
    page = (await api_on.get(url, params={"limit": 1}, headers=ALICE)).json()
    assert ([m["seq"] for m in page["items"]], page["nextAfter"]) == ([5], 5)


async def test_refusals(api_on, fake_llm) -> None:
    conv = await two_turns(api_on)
    url = f"/api/v1/conversations/{conv}/messages"
    assert error_of(await api_on.post(f"{url}/3/edit", json={"message": "x"}, headers=BOB), 404)
    missing = "00000000-0000-4000-8000-000000000000"
    resp = await api_on.post(
        f"/api/v1/conversations/{missing}/messages/1/edit", json={"message": "x"}, headers=ALICE
    )
    error_of(resp, 404)
    error_of(await api_on.post(f"{url}/2/edit", json={"message": "x"}, headers=ALICE), 404)
    error_of(await api_on.post(f"{url}/99/edit", json={"message": "x"}, headers=ALICE), 404)
    error_of(await api_on.post(f"{url}/3/edit", json={"message": "  "}, headers=ALICE), 422)
    error_of(await api_on.post(f"{url}/3/edit", json={}, headers=ALICE), 422)
    error_of(await api_on.post(f"{url}/3/edit", json={"message": 3}, headers=ALICE), 422)
    error_of(await api_on.post(f"{url}/0/edit", json={"message": "x"}, headers=ALICE), 422)
    error_of(await api_on.post(f"{url}/3/branch", json={"branch": 2}, headers=ALICE), 422)
    error_of(await api_on.post(f"{url}/3/branch", json={"branch": 0}, headers=ALICE), 422)
    error_of(await api_on.post(f"{url}/3/branch", json={"branch": 1}, headers=BOB), 404)
    resp = await api_on.get(url, params={"branches": "some"}, headers=ALICE)
    error_of(resp, 422)
    await edit(api_on, conv, 3, "B2")
    # a question of a hidden branch is not on the page to be edited or switched from
    error_of(await api_on.post(f"{url}/3/edit", json={"message": "x"}, headers=ALICE), 404)
    error_of(await api_on.post(f"{url}/3/branch", json={"branch": 1}, headers=ALICE), 404)

    # while a run is active: 409 for an edit and a switch, nothing changed
    tester = (await new_conversation(api_on, agent="tester", headers=ALICE))["uuid"]
    await say(api_on, "first", tester, agent="tester", headers=ALICE)
    fake_llm.script.delay = 0.4  # ~2 s of answer: the two refusals land while it runs
    started = await api_on.post(
        "/api/v1/agents/tester/execute",
        json={"task": "slow", "conversationId": tester},
        headers=ALICE,
    )
    run_id = started.json()["runId"]
    await wait_for_text(api_on, tester, headers=ALICE)
    turl = f"/api/v1/conversations/{tester}/messages"
    error = error_of(await api_on.post(f"{turl}/1/edit", json={"message": "x"}, headers=ALICE), 409)
    assert run_id in str(error)
    error_of(await api_on.post(f"{turl}/1/branch", json={"branch": 1}, headers=ALICE), 409)
    await wait_run(api_on, run_id, headers=ALICE)
    assert len(await messages(api_on, tester, headers=ALICE)) == 4


async def test_branches_survive_export_and_import(api_on, tmp_path) -> None:
    conv = await two_turns(api_on)
    await edit(api_on, conv, 3, "B2: Faro")
    await switch(api_on, conv, 5, 1)
    everything = {"limit": 100, "branches": "all"}
    url = f"/api/v1/conversations/{conv}/messages"

    def rows_of(resp) -> list[tuple]:
        return [
            (m["seq"], m["content"], m["status"], m.get("branch"), m["meta"].get("parked"))
            for m in resp.json()["items"]
        ]

    before = rows_of(await api_on.get(url, params=everything, headers=ALICE))
    export = f"/api/v1/conversations/{conv}/export"
    md = (await api_on.get(export, params={"format": "md"}, headers=ALICE)).text
    assert "B: Porto" in md and "branch 1 / 2" in md and "B2: Faro" not in md
    document = (await api_on.get(export, params={"format": "json"}, headers=ALICE)).json()
    assert [e["content"] for e in document["history"]][2] == "B: Porto"
    assert document["branches"]["parked"][0]["content"] == "B2: Faro"
    exported = await api_on.get(
        f"/api/v1/conversations/{conv}/export", params={"format": "archive"}, headers=ALICE
    )
    assert exported.status_code == 200, exported.text
    assert (await api_on.delete(f"/api/v1/conversations/{conv}", headers=ALICE)).status_code == 204
    archive = tmp_path / "branches.zip"
    archive.write_bytes(exported.content)
    report = await current().archive.import_path(archive, owner="alice")
    assert report.count(ImportOutcome.CREATED) == 1, report
    after = rows_of(await api_on.get(url, params=everything, headers=ALICE))
    assert after == before
    await switch(api_on, conv, 3, 2)
    assert [m["content"] for m in await messages(api_on, conv, headers=ALICE)][2] == "B2: Faro"
