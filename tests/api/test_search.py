"""Full-text search on every backend's own index: owner-scoped hits with marked snippets,
any query text safe, only final messages, nothing left behind by a delete."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from lumina_app.domain import LOCAL
from tests.api.helpers import bearer, error_of, new_conversation, say

KEYS = "alice:ka,bob:kb"
ALICE, BOB = bearer("ka"), bearer("kb")
HOSTILE = [
    '"unbalanced',
    "NEAR(a b)",
    "a AND OR NOT b",
    "col:umn",
    "x* -y +z ~w",
    "a & b | !c <-> d",
    "'); DROP TABLE lumina_message; --",
    "\\",
    "%_%",
    "日本語 テキスト",
    "👋🏽",
    "a" * 199,
]


@pytest.fixture
async def api_on(api_factory, database):
    """The in-process API on each backend, with two keys."""
    _services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return client


async def search(api, q: str, conversation: str | None = None, **params) -> list[dict]:
    path = f"/api/v1/conversations/{conversation}/search" if conversation else "/api/v1/search"
    resp = await api.get(path, params={"q": q, **params}, headers=params.pop("headers", ALICE))
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


async def test_hits_are_the_callers_own_with_the_match_marked(api_on) -> None:
    mine = (await say(api_on, "the launch codes are in the blue folder", headers=ALICE))[
        "conversationId"
    ]
    await say(api_on, "lunch at noon", mine, headers=ALICE)
    theirs = await say(api_on, "bob's launch plans", headers=BOB)

    hits = await search(api_on, "launch")
    conversations = {h["conversationId"] for h in hits}
    assert conversations == {mine}  # bob's launch is not alice's business
    question = next(h for h in hits if h["role"] == "USER")
    assert question["seq"] == 1 and "<mark>launch</mark>" in question["snippet"]
    assert set(question) == {
        "conversationId", "title", "seq", "role", "snippet", "score", "createdAt",
    }  # fmt: skip
    bobs = await search(api_on, "launch", headers=BOB)
    assert {h["conversationId"] for h in bobs} == {theirs["conversationId"]}

    within = await search(api_on, "noon", mine)
    assert [h["seq"] for h in within if h["role"] == "USER"] == [3]
    error_of(await api_on.get(f"/api/v1/conversations/{mine}/search?q=x", headers=BOB), 404)


async def test_every_word_must_match_and_the_last_is_a_prefix(api_on) -> None:
    conv = (await say(api_on, "quarterly budget review", headers=ALICE))["conversationId"]
    await say(api_on, "holiday budget", conv, headers=ALICE)
    users = [h for h in await search(api_on, "budget quart") if h["role"] == "USER"]
    assert [h["seq"] for h in users] == [1]
    assert "<mark>quarterly</mark>" in users[0]["snippet"]
    assert await search(api_on, "budget elephant") == []


async def test_short_words_and_stopwords_are_found_on_every_backend(api_on) -> None:
    """MariaDB's index leaves out words under 3 letters and its stopwords, and a required
    word it left out would make the whole query match nothing."""
    await say(api_on, "What about the AI plan with the UN?", headers=ALICE)
    await say(api_on, "a plan without acronyms", headers=ALICE)
    for q, found in (("ai", 1), ("what plan", 1), ("plan with", 2), ("UN", 1), ("the ai pl", 1)):
        users = [h for h in await search(api_on, q) if h["role"] == "USER"]
        assert len(users) == found, (q, users)
    assert await search(api_on, "ai elephant") == []
    assert [h for h in await search(api_on, "x_y") if h["role"] == "USER"] == []


async def test_words_of_scripts_without_spaces_are_found_inside_the_text(api_on) -> None:
    """No index here splits Chinese or Japanese text into words: such a word is looked
    for inside the text, alone or beside indexed words."""
    said = await say(api_on, "这是一个测试消息, about the budget", headers=ALICE)
    await say(api_on, "明日は東京に行きます", headers=ALICE)
    for q, expected in (
        ("测试", "这是一个<mark>测试</mark>消息"),
        ("测试 budget", "<mark>budget</mark>"),
        ("東京", "明日は<mark>東京</mark>に行きます"),
    ):
        users = [h for h in await search(api_on, q) if h["role"] == "USER"]
        assert len(users) == 1 and expected in users[0]["snippet"], (q, users)
    assert await search(api_on, "测试 elephant") == []
    assert await search(api_on, "大阪") == []
    conv = said["conversationId"]  # inside one conversation, the same scan
    within = [h for h in await search(api_on, "测试", conv) if h["role"] == "USER"]
    assert [h["seq"] for h in within] == [1], within
    assert await search(api_on, "東京", conv) == []  # said in another conversation
    assert await search(api_on, "_") == await search(api_on, "_", conv) == []  # no word


async def test_snippets_escape_html(api_on) -> None:
    await say(api_on, "<script>alert('x')</script> findme & <b>bold</b>", headers=ALICE)
    (hit,) = [h for h in await search(api_on, "findme") if h["role"] == "USER"]
    assert "<script>" not in hit["snippet"] and "&lt;script&gt;" in hit["snippet"]
    assert "<mark>findme</mark> &amp; &lt;b&gt;" in hit["snippet"]


@pytest.mark.parametrize("q", HOSTILE)
async def test_any_query_text_is_safe(api_on, q: str) -> None:
    await say(api_on, "ordinary words here", headers=ALICE)
    resp = await api_on.get("/api/v1/search", params={"q": q}, headers=ALICE)
    assert resp.status_code in (200, 422), resp.text
    listed = await api_on.get("/api/v1/conversations", params={"q": q[:200]}, headers=ALICE)
    assert listed.status_code == 200, listed.text


async def test_a_query_without_words_finds_nothing_and_too_long_is_422(api_on) -> None:
    await say(api_on, "!!! and words", headers=ALICE)
    for q in ("!!!", "  ", "[::]"):
        resp = await api_on.get("/api/v1/search", params={"q": q}, headers=ALICE)
        assert resp.status_code == 200 and resp.json()["items"] == [], resp.text
    resp = await api_on.get("/api/v1/search", params={"q": "a" * 201}, headers=ALICE)
    assert "at most 200 characters" in error_of(resp, 422)["message"]


async def test_the_conversation_list_filter_finds_words_in_messages(api_on) -> None:
    found = (await say(api_on, "the zebra crossing", headers=ALICE))["conversationId"]
    await new_conversation(api_on, title="Zebra notes", headers=ALICE)
    await say(api_on, "something else", headers=ALICE)
    listed = await api_on.get("/api/v1/conversations", params={"q": "zebra"}, headers=ALICE)
    titles = {c["title"] for c in listed.json()["items"]}
    uuids = {c["uuid"] for c in listed.json()["items"]}
    assert found in uuids and "Zebra notes" in titles and len(uuids) == 2


async def test_an_answer_is_found_once_final_and_forgotten_with_its_conversation(
    api_factory, database
) -> None:
    services, api = await api_factory(database_url=database.url)
    conv = await services.memory.create_conversation(agent_id="demo")
    from tests.turns import store_turn

    await store_turn(services.memory, conv, "what is a quokka", "a small marsupial")
    # A growing answer (not final yet) is not indexed.
    run = await services.runs.start_run(LOCAL, agent_id="demo", message="tell me about wombats")
    await run.done.wait()
    hits = await services.search.everywhere(LOCAL, "marsupial")
    assert [h.seq for h in hits] == [2]
    assert await services.search.everywhere(LOCAL, "wombats")  # its question, once stored

    await services.conversations.delete(LOCAL, conv.uuid)
    assert await services.search.everywhere(LOCAL, "quokka") == []
    if database.backend == "sqlite":  # the external-content index holds no stale entries
        engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
        with engine.connect() as connection:
            stale = connection.exec_driver_sql(
                "SELECT count(*) FROM lumina_message_fts WHERE lumina_message_fts MATCH 'quokka'"
            ).scalar()
        engine.dispose()
        assert stale == 0
    assert api is not None


async def test_streaming_rows_are_not_indexed_until_final(api_factory, database) -> None:
    services, _api = await api_factory(database_url=database.url)
    memory = services.memory
    conv = await memory.create_conversation(agent_id="demo")
    from lumina_app.domain import Msg, RunRecord, RunStatus, Scenario

    record = RunRecord(
        run_id="run-00000000000000aa",
        conversation_pk=conv.id,
        agent_id="demo",
        owner="",
        scenario=Scenario.NEW,
        provider="demo",
        model="demo",
    )
    user, answer = await memory.begin_turn(
        conv, Msg.user("hello", turn_id="t1"), Msg.assistant("", turn_id="t1"), record
    )
    await memory.flush_answer(answer.id, "partial platypus facts")
    assert await services.search.everywhere(LOCAL, "platypus") == []
    answer.content = "complete platypus facts"
    from lumina_app.domain import ConversationStatus, MessageStatus

    answer.status, record.status = MessageStatus.COMPLETE, RunStatus.COMPLETE
    await memory.finish_answer(
        conv, answer, conversation_status=ConversationStatus.COMPLETED, run=record
    )
    hits = await services.search.everywhere(LOCAL, "platypus")
    assert [(h.seq, "complete" in h.snippet) for h in hits] == [(2, True)]
    assert user.seq == 1
