"""Codes, numbers and joined words are found the same way on every backend (issue 24,
item 6): PostgreSQL's parser keeps ``-4417``, ``v2.3.1`` and ``foo.bar`` whole, SQLite and
InnoDB split them; every backend now finds words split at punctuation and ``_``."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from tests.api.helpers import say
from tests.api.test_search import ALICE, api_on, search  # noqa: F401 - the fixture

MESSAGES = {
    "ticket": "ticket ZEBRA-4417 is open",
    "release": "release v2.3.1 shipped",
    "rename": "rename snake_case_name please",
    "invoice": "invoice 1234 paid",
    "error": "error E-42 again",
    "crossing": "zebra crossing 4418",
    "notes": "version 2.3 notes",
    "host": "see foo.bar.baz later",
    "order": "order #1234-B today",
}

# query → the messages it finds (every word must match, the last as a prefix)
CODES = [
    ("zebra", {"ticket", "crossing"}),
    ("ZEBRA-4417", {"ticket"}),
    ("4417", {"ticket"}),
    ("zebra-4417 open", {"ticket"}),
    ("44", {"ticket", "crossing"}),
    ("zebra 4418", {"crossing"}),
    ("v2.3.1", {"release"}),
    ("v2", {"release"}),
    ("3.1", {"release"}),
    ("2.3", {"notes"}),
    ("snake_case_name", {"rename"}),
    ("snake_case", {"rename"}),
    ("snake", {"rename"}),  # (a part after "_" alone: not on InnoDB, see search.py)
    ("invoice 1234", {"invoice"}),
    ("1234", {"invoice", "order"}),
    ("#1234", {"invoice", "order"}),
    ("1234-B", {"order"}),
    ("error E-42", {"error"}),
    ("E-42", {"error"}),
    ("42", {"error"}),
    ("e 42", {"error"}),
    ("foo.bar", {"host"}),
    ("bar.baz", {"host"}),
    ("baz", {"host"}),
    ("4417-zebra", {"ticket"}),  # every word, in any order
    ("ZEBRA-4419", set()),
    ("v2.3.2", set()),
]


@pytest.fixture
async def stored(api_on):  # noqa: F811 - the fixture
    """Each message in its own conversation: {conversation id: message key}."""
    return {
        (await say(api_on, text, headers=ALICE))["conversationId"]: key
        for key, text in MESSAGES.items()
    }


async def test_codes_numbers_and_joined_words_are_found_on_every_backend(
    api_on,  # noqa: F811 - the fixture
    stored,
) -> None:
    wrong = {}
    for q, expected in CODES:
        hits = await search(api_on, q, limit=50)
        found = {stored[h["conversationId"]] for h in hits if h["role"] == "USER"}
        if found != expected:
            wrong[q] = (found, expected)
    assert not wrong, wrong

    ticket = next(c for c, key in stored.items() if key == "ticket")
    for q in ("ZEBRA-4417", "4417", "zebra"):
        (hit,) = [h for h in await search(api_on, q, ticket) if h["role"] == "USER"]
        assert hit["seq"] == 1 and "<mark>" in hit["snippet"]
    assert await search(api_on, "v2.3.1", ticket) == []


def test_postgresql_searches_through_its_index(_databases) -> None:
    """The query's document is the index's expression (migration 0012): the GIN index is
    what answers it, not a scan of every message."""
    from lumina_app.storage.sql.search import _PG_DOCUMENT

    database = _databases("postgresql")
    engine = sa.create_engine(database.url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            plan = conn.exec_driver_sql(
                f"EXPLAIN SELECT id FROM lumina_message WHERE {_PG_DOCUMENT.name} "
                "@@ to_tsquery('simple', '''4417''') AND status NOT IN ('streaming', 'superseded')"
            ).all()
    finally:
        engine.dispose()
    assert "ix_lumina_message_fts" in "\n".join(row[0] for row in plan)
