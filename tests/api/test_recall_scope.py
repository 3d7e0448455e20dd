"""Recall past one conversation and past 200 characters (#42), from outside: a running
server (``reflex run --backend-only``) on each backend, two owners (keys), agents on the
stand-in model that call the ``recall`` tool as the runtime builds it, and an offline demo
agent with auto-recall over all of its owner's conversations.

- A 2,000-character question is answered by both recall routes and by the tool; 2,001 is
  a 422 (the routes) or a tool error (the tool) naming the limit, and the OpenAPI doc says it.
- The tool's ``scope: "all"`` finds a fact said in another conversation of the same owner
  with the same agent, named (title, id); never another agent's, never another owner's.
- An attacker holding the other owner's ids finds nothing of theirs in any scope.
- Auto-recall with ``"scope": "all"`` puts another conversation's message into the run's
  context; the context route names its conversation (title as it was, date), renders the
  same after a rename, and the demo model says where it recalled it from.
- A bad ``memory.autoRecall.scope`` makes the agent unavailable with a clear reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import BACKENDS, write_agent
from tests.fake_llm import Call, FakeLLM, Reply, Script
from tests.server import AppServer

ALICE, BOB = {"Authorization": "Bearer ka"}, {"Authorization": "Bearer kb"}
LIMIT = 2000
TOOL_ASK = "/recall "  # a user message the stand-in model answers by calling recall
OTHERS = "Earlier, in other conversations with this user:"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest,
    _databases,
    tmp_path_factory: pytest.TempPathFactory,
    fake: FakeLLM,
) -> Iterator[AppServer]:
    """One running backend per database, on an emptied database, with the agents below."""
    database = _databases(request.param)
    database.truncate()
    up = AppServer(
        tmp_path_factory.mktemp(f"recall-scope-{request.param}"),
        backend_only=True,
        database_url=database.url,
        env={
            "LUMINA_REDIS_URL": "",
            "LUMINA_API_KEYS": "alice:ka,bob:kb",
            "LUMINA_DEMO_DELAY_MS": "0",
        },
    )
    up.prepare()
    agents = up.data_dir / "agents"
    model = {"provider": "openai", "base_url": fake.base_url, "model": "fake-1"}
    write_agent(agents, "recaller", {**model, "name": "Recaller", "memory": {"recall": True}})
    write_agent(agents, "other", {**model, "name": "Other", "memory": {"recall": True}})
    all_scope = {"autoRecall": {"limit": 5, "tokens": 2000, "scope": "all"}}
    write_agent(agents, "rememberer", {"name": "Rememberer", "memory": all_scope})
    write_agent(agents, "modelled", {**model, "name": "Modelled", "memory": all_scope})
    bad = {"autoRecall": {"limit": 5, "scope": "everywhere"}}
    write_agent(agents, "badscope", {"name": "Bad", "memory": bad})
    up.start()
    try:
        yield up
    finally:
        up.stop()


@pytest.fixture
def api(server: AppServer, fake: FakeLLM) -> Iterator[httpx.Client]:
    """A client of the running server; the stand-in model calls ``recall`` with the JSON
    after TOOL_ASK in the user's message, then answers "done"."""
    fake.requests.clear()
    fake.script = Script(respond=_tool_caller())
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client
    fake.script = Script()


def _tool_caller():
    calls = iter(range(1_000_000))

    def respond(body: dict) -> Reply | None:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(chunks=["done"])
        text = str(last.get("content") or "")
        if last["role"] == "user" and text.startswith(TOOL_ASK):
            return Reply(calls=[Call(f"call_{next(calls)}", "recall", text[len(TOOL_ASK) :])])
        return None

    return respond


# -- helpers ------------------------------------------------------------------------------


def conversation(api: httpx.Client, agent: str, title: str, headers: dict, **extra) -> str:
    resp = api.post("/api/v1/conversations", json={"agentId": agent, "title": title, **extra},
                    headers=headers)  # fmt: skip
    assert resp.status_code == 201, resp.text
    return resp.json()["uuid"]


def say(api: httpx.Client, agent: str, text: str, conv: str | None, headers: dict) -> dict:
    body = {"task": text, **({"conversationId": conv} if conv else {})}
    resp = api.post(f"/api/v1/agents/{agent}/execute/sync", json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def tool_result(api: httpx.Client, agent: str, args: dict, conv: str | None, headers: dict):
    """What the ``recall`` tool answered (the stored TOOL row), and the conversation."""
    run = say(api, agent, TOOL_ASK + json.dumps(args), conv, headers)
    rows = messages(api, run["conversationId"], headers)
    tools = [m for m in rows if m["role"] == "TOOL"]
    assert tools, rows
    return tools[-1]["content"], run["conversationId"]


def messages(api: httpx.Client, conv: str, headers: dict) -> list[dict]:
    resp = api.get(f"/api/v1/conversations/{conv}/messages", params={"limit": 100},
                   headers=headers)  # fmt: skip
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def recall(api: httpx.Client, q: str, conv: str | None, headers: dict, **params) -> httpx.Response:
    path = f"/api/v1/conversations/{conv}/recall" if conv else "/api/v1/recall"
    return api.get(path, params={"q": q, **params}, headers=headers)


def context(api: httpx.Client, run_id: str, headers: dict) -> dict:
    resp = api.get(f"/api/v1/runs/{run_id}/context", headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()


def padded(question: str, size: int) -> str:
    """``question`` followed by plain words, exactly ``size`` characters."""
    text = question + " " + "and please tell me everything you remember about it " * 100
    assert len(text) >= size
    return text[:size]


# -- tests --------------------------------------------------------------------------------


def test_a_2000_character_question_on_both_routes_and_the_tool(api: httpx.Client) -> None:
    conv = conversation(api, "recaller", "Ops", ALICE)
    say(api, "recaller", "the staging database password rotates every ninety days", conv, ALICE)
    question = padded("How often does the staging database password rotate?", LIMIT)
    assert len(question) == LIMIT

    for where in (conv, None):
        resp = recall(api, question, where, ALICE, agentId="recaller")
        assert resp.status_code == 200, resp.text
        hits = resp.json()["items"]
        assert hits and hits[0]["conversationId"] == conv
        assert any("ninety days" in h["snippet"] for h in hits)
        too_long = recall(api, question + "x", where, ALICE)
        assert too_long.status_code == 422, too_long.text
        assert str(LIMIT) in too_long.json()["error"]["message"], too_long.text

    doc = api.get("/openapi.json").json()["paths"]
    for path in ("/api/v1/conversations/{conversation_id}/recall", "/api/v1/recall"):
        (q,) = [p for p in doc[path]["get"]["parameters"] if p["name"] == "q"]
        assert q["schema"]["maxLength"] == LIMIT, q

    found, _ = tool_result(api, "recaller", {"query": question}, conv, ALICE)
    assert "[#1 user " in found and "ninety days" in found, found
    refused, _ = tool_result(api, "recaller", {"query": question + "x"}, conv, ALICE)
    assert f"limited to {LIMIT} characters" in refused and "ninety" not in refused, refused


def test_the_tool_with_scope_all_finds_the_owners_other_conversations(api: httpx.Client) -> None:
    garden = conversation(api, "recaller", "Garden plans", ALICE)
    say(api, "recaller", "the greenhouse heater is set to twelve degrees", garden, ALICE)
    elsewhere = conversation(api, "other", "Other agent", ALICE)
    say(api, "other", "the greenhouse heater is set to thirty degrees", elsewhere, ALICE)
    say(api, "recaller", "the greenhouse heater is set to forty degrees", None, BOB)

    ask = {"query": "greenhouse heater degrees", "scope": "all"}
    found, current = tool_result(api, "recaller", ask, None, ALICE)
    assert "twelve degrees" in found, found
    assert 'In the conversation "Garden plans" (' in found and garden in found, found
    assert "thirty" not in found and "forty" not in found  # another agent; another owner
    assert TOOL_ASK not in found  # this turn's own question is left out
    assert current != garden

    alone, _ = tool_result(api, "recaller", {"query": "greenhouse heater"}, current, ALICE)
    assert "degrees" in alone and "twelve" not in alone, alone  # this conversation's only
    wrong, _ = tool_result(api, "recaller", {"query": "heater", "scope": "everything"},
                           current, ALICE)  # fmt: skip
    assert "scope" in wrong and "'all'" in wrong, wrong
    private = conversation(api, "recaller", "Off the record", ALICE, temporary=True)
    kept_apart, _ = tool_result(api, "recaller", ask, private, ALICE)
    assert "temporary conversation" in kept_apart and "twelve" not in kept_apart, kept_apart


def test_someone_elses_conversations_never_appear_in_any_scope(api: httpx.Client) -> None:
    secret = "the vault combination is 31-7-44 heliotrope"
    theirs = conversation(api, "recaller", "Vault", ALICE)
    alice_run = say(api, "recaller", secret, theirs, ALICE)
    say(api, "rememberer", secret, None, ALICE)

    # Bob holds Alice's conversation and run ids, and tries every door.
    assert recall(api, "vault combination", theirs, BOB).status_code == 404
    across = recall(api, "vault combination heliotrope", None, BOB, agentId="recaller")
    assert across.status_code == 200 and across.json()["items"] == []
    intrude = {"task": TOOL_ASK + '{"query": "vault"}', "conversationId": theirs}
    resp = api.post("/api/v1/agents/recaller/execute/sync", json=intrude, headers=BOB)
    assert resp.status_code == 404, resp.text
    assert api.get(f"/api/v1/runs/{alice_run['runId']}/context", headers=BOB).status_code == 404

    mine = conversation(api, "recaller", "Bob's", BOB)
    say(api, "recaller", "my bike lock combination is 1-2-3", mine, BOB)
    for scope in ("conversation", "all"):
        ask = {"query": "vault combination heliotrope", "scope": scope}
        found, _ = tool_result(api, "recaller", ask, mine, BOB)
        assert "31-7-44" not in found and "invalid" not in found, found
    run = say(api, "rememberer", "what is the vault combination? heliotrope?", None, BOB)
    sent = context(api, run["runId"], BOB)
    assert "31-7-44" not in json.dumps(sent) and "31-7-44" not in run["answer"]
    assert all(r["conversationId"] != theirs for r in sent["recalled"])


def test_auto_recall_scope_all_brings_in_another_conversation_named(api: httpx.Client) -> None:
    planning = conversation(api, "rememberer", "Project planning", ALICE)
    say(api, "rememberer", "the first sprint of the billing rewrite ends on March 29",
        planning, ALICE)  # fmt: skip
    say(api, "rememberer", "my first sprint of the billing rewrite ends on April 5", None, BOB)
    say(api, "recaller", "the billing rewrite sprint ends in June", None, ALICE)  # other agent

    current = conversation(api, "rememberer", "Standup", ALICE)
    say(api, "rememberer", "good morning, standup time", current, ALICE)
    long_question = padded("When does the first sprint of the billing rewrite end?", 5000)
    run = say(api, "rememberer", long_question, current, ALICE)  # never fails for its length
    sent = context(api, run["runId"], ALICE)

    (recalled,) = [m["content"] for m in sent["messages"] if m["role"] == "system"
                   and m["content"].startswith(OTHERS)]  # fmt: skip
    line = re.search(r'^\[#1 \d{4}-\d\d-\d\d \d\d:\d\d user, in "Project planning"\] (.*)$',
                     recalled, re.MULTILINE)  # fmt: skip
    assert line and line[1] == "the first sprint of the billing rewrite ends on March 29"
    assert "April 5" not in recalled and "June" not in recalled  # Bob's; another agent's
    assert "good morning" not in recalled  # the current conversation's own window
    origins = [r for r in sent["recalled"] if r["title"] is not None]
    # the fact, and the demo model's answer that repeated it
    assert {(r["conversationId"], r["title"]) for r in origins} == {(planning, "Project planning")}
    (fact,) = [r for r in origins if r["seq"] == 1]
    assert fact["createdAt"].startswith(line[0][4:14])  # the date it was said
    assert "From our other conversations I recall #1 in “Project planning”" in run["answer"]

    renamed = api.patch(f"/api/v1/conversations/{planning}", json={"title": "Renamed"},
                        headers=ALICE)  # fmt: skip
    assert renamed.status_code == 200, renamed.text
    assert context(api, run["runId"], ALICE) == sent  # recorded: rendered the same again

    private = conversation(api, "rememberer", "Off the record", ALICE, temporary=True)
    run = say(api, "rememberer", "When does the first sprint of the billing rewrite end?",
              private, ALICE)  # fmt: skip
    assert context(api, run["runId"], ALICE)["recalled"] == []  # a temporary one reads none


def test_the_recorded_context_is_what_the_model_received(api: httpx.Client, fake: FakeLLM) -> None:
    earlier = conversation(api, "modelled", "Kitchen", ALICE)
    say(api, "modelled", "the dishwasher filter is cleaned every second Sunday", earlier, ALICE)
    run = say(api, "modelled", "how often is the dishwasher filter cleaned?", None, ALICE)
    received = fake.requests[-1]["messages"]
    assert any(m["content"].startswith(OTHERS) and '"Kitchen"' in m["content"]
               for m in received if m["role"] == "system")  # fmt: skip
    sent = context(api, run["runId"], ALICE)["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        (m["role"], m["content"]) for m in received
    ]


def test_a_bad_auto_recall_scope_is_a_clear_error(api: httpx.Client) -> None:
    listed = api.get("/api/agent/list", headers=ALICE)
    assert listed.status_code == 200, listed.text
    (bad,) = [a for a in listed.json() if a["id"] == "badscope"]
    assert not bad["available"]
    assert '\'memory.autoRecall.scope\' must be "conversation" or "all"' in bad["error"]
    resp = api.post("/api/v1/agents/badscope/execute/sync", json={"task": "hi"}, headers=ALICE)
    assert resp.status_code == 409, resp.text
    assert "memory.autoRecall.scope" in resp.json()["error"]["message"]
