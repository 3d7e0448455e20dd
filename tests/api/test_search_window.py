"""Search ranks only the newest RANK_WINDOW matches (issue #31): past the window an older,
better match is not returned, inside it the order is the full ranking's; SQLite's own
bm25 for the window gives FTS5's bm25() scores."""

from __future__ import annotations

import random
import re

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from lumina_app.storage.sql import fts_rank, search
from tests.api.helpers import bearer, say

ALICE = bearer("ka")


@pytest.fixture
async def api_on(api_factory, database):
    _services, client = await api_factory(database_url=database.url, api_keys="alice:ka")
    return client


async def _hits(api, q: str, limit: int = 20) -> list[tuple[str, int, float, str]]:
    """(conversation, seq, score, created at) of every hit, best first."""
    resp = await api.get("/api/v1/search", params={"q": q, "limit": limit}, headers=ALICE)
    assert resp.status_code == 200, resp.text
    return [
        (h["conversationId"], h["seq"], h["score"], h["createdAt"]) for h in resp.json()["items"]
    ]


async def test_a_frequent_word_ranks_the_newest_matches_only(api_on, database, monkeypatch):
    if database.backend == "mariadb":
        pytest.skip("MariaDB/MySQL rank every match (FULLTEXT), as before")
    best = (await say(api_on, "zinc zinc zinc zinc", headers=ALICE))["conversationId"]
    for i in range(4):
        await say(api_on, f"zinc plate number {i} in a long sentence of other words", headers=ALICE)

    everything = await _hits(api_on, "zinc")
    assert everything[0][0] == best  # all ranked: the oldest, best match leads
    newest = sorted(everything, key=lambda h: (h[3], h[1]), reverse=True)[:3]

    monkeypatch.setattr(search, "RANK_WINDOW", 3)
    window = await _hits(api_on, "zinc", limit=2)
    assert best not in [h[0] for h in window]  # past the window: not returned
    # The best two of the newest three, in the full ranking's order, with its scores.
    expected = [h for h in everything if h in newest][:2]
    assert [h[:2] for h in window] == [h[:2] for h in expected]
    assert [h[2] for h in window] == pytest.approx([h[2] for h in expected])


async def test_a_frequent_words_count_is_read_once_a_minute(api_factory, database, monkeypatch):
    """Past fts_rank.COUNTED a word's count is extrapolated; that count is read once per
    KEPT_S (per database and word), not by every search: the same hits and scores follow,
    and a rare word's exact count is read every time."""
    if database.backend != "sqlite":
        pytest.skip("FTS5's word counts: SQLite's")
    monkeypatch.setattr(fts_rank, "COUNTED", 2)
    monkeypatch.setattr(fts_rank, "_kept", {})  # none kept from other tests, none left
    services, api = await api_factory(database_url=database.url)
    mine = (await say(api, "zinc plate 0"))["conversationId"]
    for i in (1, 2):
        await say(api, f"zinc plate {i}", mine)
    counted: list[str] = []

    def on_statement(_conn, _cursor, sql: str, params, *_rest) -> None:
        if "ORDER BY rowid DESC LIMIT" in sql:  # fts_rank's count of one word
            counted.append(str(params))

    for engine in services.db.engines:
        sa.event.listen(engine, "before_cursor_execute", on_statement)

    async def hits(q: str) -> list[tuple[int, float]]:
        resp = await api.get(f"/api/v1/conversations/{mine}/search", params={"q": q})
        assert resp.status_code == 200, resp.text
        return [(h["seq"], h["score"]) for h in resp.json()["items"]]

    first = await hits("zinc plate")
    assert [seq for seq, _ in first] and len(counted) == 2  # both words, past the cap
    assert await hits("zinc plate") == first and len(counted) == 2  # kept: not read again
    assert await hits("elephant") == await hits("elephant") == []
    assert len(counted) == 4  # in no row: within the cap, read each time
    monkeypatch.setattr(fts_rank, "KEPT_S", 0.0)
    assert await hits("zinc plate") == first and len(counted) == 6  # expired: read again


@pytest.mark.unit
async def test_bm25_for_the_window_is_fts5s(tmp_path) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'fts.db'}")
    texts = [
        "Deploy the key, then rotate the keys",
        "Café crème: déjà vu for the deployment",
        "snake_case_name and ZEBRA-4417 v2.3.1",
        "zebra -- 4417, zebra 44170 and zebra 4417",
        "key key key key deploy",
        "nothing to see here",
    ]
    async with engine.begin() as conn:  # committed: FTS5 writes its totals then
        await conn.exec_driver_sql(
            "CREATE VIRTUAL TABLE lumina_message_fts USING fts5(content, "
            "tokenize='unicode61 remove_diacritics 2', prefix='2 3')"
        )
        for text in texts:
            await conn.execute(
                sa.text("INSERT INTO lumina_message_fts(content) VALUES (:t)"), {"t": text}
            )
    async with engine.connect() as conn:
        for phrase, words in [
            ('"deploy" "key"*', [fts_rank.Word("deploy", False), fts_rank.Word("key", True)]),
            ('"cafe" "deja"', [fts_rank.Word("cafe", False), fts_rank.Word("deja", False)]),
            ('"case"', [fts_rank.Word("case", False)]),
            ('"4417"', [fts_rank.Word("4417", False)]),
            ('"key"', [fts_rank.Word("key", False)]),  # four times in a row, not "keys"
            ('"zebra 4417"', [fts_rank.Word("zebra 4417", False)]),  # a word of two parts
            ('"zebra 4417"*', [fts_rank.Word("zebra 4417", True)]),  # "zebra 44170" too
            (fts_rank.prefix_phrase("k"), [fts_rank.Word("k", True)]),  # one character
        ]:
            weights = await conn.run_sync(fts_rank.weights, words)
            assert weights.exact and weights.rows == len(texts)
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT content, -bm25(lumina_message_fts) FROM lumina_message_fts "
                        "WHERE lumina_message_fts MATCH :q"
                    ),
                    {"q": phrase},
                )
            ).all()
            assert rows, phrase
            for content, expected in rows:
                [score] = fts_rank.scores(fts_rank.spaced([content]), words, weights)
                assert score == pytest.approx(expected), (
                    phrase,
                    content,
                )
    await engine.dispose()


@pytest.mark.unit
def test_texts_split_together_split_as_each_alone() -> None:
    """fts_rank.spaced folds and splits ASCII texts all at once; a text holding the NUL it
    joins them with, or a non-ASCII one, sends the lot one by one: the same words either
    way, each text between spaces and its words at least two apart, so that every word
    (of one part or several, whole or as a prefix) is counted as often."""
    rng = random.Random(44)
    alphabet = "ab Z9-_.,\t\n'" + "\0é"
    words = [fts_rank.Word(t, p) for t in ("a", "b", "ab", "a b", "z9 a") for p in (False, True)]
    for _ in range(300):
        texts = [
            "".join(rng.choices(alphabet, k=rng.randint(0, 12))) for _ in range(rng.randint(0, 6))
        ]
        alone = [" " + "  ".join(fts_rank.words_of(t)) + " " for t in texts]
        together = fts_rank.spaced(texts)
        assert [row.split() for row in together] == [row.split() for row in alone], texts
        for row in together:
            assert row.startswith(" ") and row.endswith(" ") and not re.search(r"\S \S", row)
        for word in words:
            counts = [word.count(row) for row in together]
            assert counts == [word.count(row) for row in alone], (texts, word)
            assert [word.found_in(row) for row in together] == [c > 0 for c in counts]
    assert fts_rank.spaced(["A-b", "", "c\0d"]) == [" a  b ", "  ", " c  d "]
    assert fts_rank.spaced(["A--b", "", "c d"]) == [" a    b ", "  ", " c  d "]
