"""Recall's candidates across an owner's conversations: for each query word, the ids of its
newest :data:`CANDIDATE_WINDOW` matches in the full-text index, unranked.

Ranking happens afterwards, in Python, over the union (``recall/retriever.py``). A word in
most messages thus costs a read of its newest few index entries, not a ranking of every
match (search's ``RANK_WINDOW`` bounds it the same way, docs/PERFORMANCE.md says what that
gives up), and a rare word brings all its matches, whatever their age. Every word is
matched as a prefix (the retriever asks for what a word shares with its stem), split and
matched by search's own rules, so recall and search find the same rows for a word.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import match as mysql_match
from sqlalchemy.ext.asyncio import AsyncConnection

from lumina_app.storage.sql import pg_share
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.recall_rows import RECALLED_ROLES
from lumina_app.storage.sql.search import (  # search's own splitting, matching and bounds
    _FTS,
    _PG_BACKWARD_ROWS,
    _PG_CONFIG,
    _PG_DOCUMENT,
    _fts_phrase,
    _parts,
    _pg_query,
    _scan,
    _Scope,
    _split,
)
from lumina_app.storage.sql.sqlite_inline import offloaded

CANDIDATE_WINDOW = 200  # newest matches taken per query word


async def newest_matches(
    db: SQLDatabase,
    words: Sequence[str],
    *,
    owner: str,
    agent_id: str | None = None,
    window: int = CANDIDATE_WINDOW,
) -> list[list[int]]:
    """For each word, the ids of its newest ``window`` searchable matches among the owner's
    messages (one agent's if given), newest first: a list shorter than ``window`` holds
    every match. The word is matched as itself first; only if that leaves room, as a
    prefix too ("group" finds "groups"): a prefix merges the index entries of every word
    it starts, which for a frequent one costs what its whole history does."""
    scope = _Scope(owner, None, agent_id)
    found: list[list[int]] = []
    with offloaded():  # a frequent word's window still reads index pages: off the loop
        async with db.connect() as conn:
            for word in words:
                ids: dict[int, None] = {}
                for part in _parts(db.dialect, [word]):  # "e-mail": both parts
                    part_ids = await _window(conn, db.dialect, part, scope, window, False)
                    if len(part_ids) < window:
                        part_ids = await _window(conn, db.dialect, part, scope, window, True)
                    ids |= dict.fromkeys(part_ids)
                found.append(list(ids))
    return found


async def _window(
    conn: AsyncConnection, dialect: str, word: str, scope: _Scope, window: int, prefix: bool
) -> Sequence[int]:
    indexed = bool(_split(dialect, [word])[0])
    said = M.c.role.in_(RECALLED_ROLES)  # tool output and system notes are not recalled
    newest = M.c.id.desc()
    if not indexed:  # a word no index holds (InnoDB's short words, unspaced scripts)
        query = sa.select(M.c.id).where(_scan(word, prefix), said)
    elif dialect == "sqlite":  # FTS5 reads its entries newest first and stops
        match = sa.text("lumina_message_fts MATCH :fts_query").bindparams(
            fts_query=_fts_phrase([word], prefix)
        )
        query = (
            sa.select(M.c.id).select_from(_FTS.join(M, M.c.id == _FTS.c.rowid)).where(match, said)
        )
        newest = _FTS.c.rowid.desc()
    elif dialect == "postgresql":
        tsquery = sa.func.to_tsquery(_PG_CONFIG, _pg_query([word], prefix))
        query = sa.select(M.c.id).where(_PG_DOCUMENT.op("@@")(tsquery), said)
        share = await pg_share.share(conn, [word], prefix)
        if share is not None and window / max(share, 1e-9) > _PG_BACKWARD_ROWS:
            newest = (M.c.id + 0).desc()  # + 0: through the GIN index, then a sort
    else:
        against = "+" + word + ("*" if prefix else "")
        query = sa.select(M.c.id).where(
            mysql_match(M.c.content, against=against).in_boolean_mode(), said
        )
    return (await conn.execute(scope.where(query).order_by(newest).limit(window))).scalars().all()
