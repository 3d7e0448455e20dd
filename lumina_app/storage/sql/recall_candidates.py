"""Recall's candidates across an owner's conversations: for each query word, the ids of its
newest :data:`CANDIDATE_WINDOW` matches in the full-text index, unranked.

Ranking happens afterwards, in Python, over the union (``recall/retriever.py``). A word in
most messages thus costs a read of its newest few index entries, not a ranking of every
match (search's ``RANK_WINDOW`` bounds it the same way, docs/PERFORMANCE.md says what that
gives up), and a rare word brings all its matches, whatever their age. Every word is
matched as a prefix (the retriever asks for what a word shares with its stem), split and
matched by search's own rules, so recall and search find the same rows for a word.

Every word's window is one arm of a single ``UNION ALL`` statement (each arm a subquery
with its own ORDER BY and LIMIT, so FTS5 still reads newest first and stops in each): a
question costs one statement, a second for the words read again as prefixes, not two a
word. On PostgreSQL the owner's scope is a per-row lookup of the matched row's
conversation, never a join the planner may turn into a hash of all the owner's
conversations, and each arm takes the path its word's share calls for (``_planned``); the
words read backwards by id share one read (one agent's frequent words: 36.7 → 24.8 ms at a
million messages), and a word it leaves short is read again alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import match as mysql_match
from sqlalchemy.ext.asyncio import AsyncConnection

from lumina_app.storage.sql import pg_share
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M
from lumina_app.storage.sql.recall_rows import RECALLED_ROLES
from lumina_app.storage.sql.search import (  # search's own splitting, matching and bounds
    _FTS,
    _PG_CONFIG,
    _PG_DOCUMENT,
    _UNSEARCHED,
    _fts_phrase,
    _parts,
    _pg_query,
    _scan,
    _Scope,
    _split,
)
from lumina_app.storage.sql.sqlite_inline import offloaded

CANDIDATE_WINDOW = 200  # newest matches taken per query word

# PostgreSQL: read the id index backwards for a word's newest matches only if that reads
# about this many rows at most (the window over the word's share); else the GIN index,
# among the newest ids expected to hold the window twice over when they are at most
# _PG_RECENT_IDS (the heap is then read for those matches only: a BitmapAnd), else all.
_PG_BACKWARD_ROWS, _PG_RECENT_IDS = 5_000, 200_000


@dataclass(frozen=True)
class _Arm:
    """One window read: a word part, exact or as a prefix; on PostgreSQL its path."""

    part: str
    prefix: bool
    recent: int | None = None  # None: backwards by id; 0: GIN, every match; n: GIN, newest n


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
    parts = [_parts(db.dialect, [word]) for word in words]  # "e-mail": both parts
    found: dict[str, list[int]] = {}  # part -> its window (exact, else as a prefix)
    with offloaded():  # a frequent word's window still reads index pages: off the loop
        async with db.connect() as conn:
            pending = [
                await _planned(conn, db.dialect, _Arm(p, False), window)
                for p in dict.fromkeys(p for ps in parts for p in ps)
            ]
            while pending:
                windows = await _windows(conn, db.dialect, pending, scope, window)
                again = []
                for arm, ids in zip(pending, windows, strict=True):
                    if len(ids) >= window or (arm.prefix and not arm.recent):
                        found[arm.part] = ids
                    elif arm.recent:  # short among the newest ids: older ones may hold more
                        again.append(replace(arm, recent=0))
                    else:  # every exact match, with room left: the word's other forms too
                        prefix = _Arm(arm.part, True)
                        again.append(await _planned(conn, db.dialect, prefix, window))
                pending = again
    out = []
    for word_parts in parts:
        ids: dict[int, None] = {}
        for part in word_parts:
            ids |= dict.fromkeys(found[part])
        out.append(list(ids))
    return out


async def _planned(conn: AsyncConnection, dialect: str, arm: _Arm, window: int) -> _Arm:
    """``arm`` with its PostgreSQL path, from the word's share in the statistics."""
    if dialect != "postgresql" or not _split(dialect, [arm.part])[0]:
        return arm
    share = await pg_share.share(conn, [arm.part], arm.prefix)
    if share is None or window / max(share, 1e-9) <= _PG_BACKWARD_ROWS:
        return arm
    recent = math.ceil(2 * window / max(share, 1e-9))
    return replace(arm, recent=recent if recent <= _PG_RECENT_IDS else 0)


async def _windows(
    conn: AsyncConnection, dialect: str, arms: Sequence[_Arm], scope: _Scope, window: int
) -> list[list[int]]:
    """Each arm's window, newest first. On PostgreSQL the arms read backwards by id share
    one such read (:func:`_shared_backward`); what it leaves short is read arm by arm."""
    windows: dict[int, list[int]] = {}
    backward = [i for i, arm in enumerate(arms) if _kind(dialect, arm) == "backward"]
    if len(backward) > 1:
        shared = await _shared_backward(conn, [arms[i] for i in backward], scope, window)
        windows = {i: ids for i, ids in zip(backward, shared, strict=True) if ids is not None}
    rest = [i for i in range(len(arms)) if i not in windows]
    if rest:
        read = await _arm_windows(conn, dialect, [arms[i] for i in rest], scope, window)
        windows |= dict(zip(rest, read, strict=True))
    return [windows[i] for i in range(len(arms))]


async def _shared_backward(
    conn: AsyncConnection, arms: Sequence[_Arm], scope: _Scope, window: int
) -> list[list[int] | None]:
    """PostgreSQL: the newest rows matching any of the arms' words, read backwards by id
    once (a frequent word reads ~window / share rows: four of them read their rows four
    times over, one agent's ten times as many each), each row marked with the words it
    matches. An arm's window is its first ``window`` marked rows: exactly what its own
    read finds, unless the shared read stopped first (None: read it alone)."""
    query = _shared_statement(len(arms), scope.agent_id is not None)
    params: dict[str, object] = {"owner": scope.owner, "limit": window * len(arms)}
    if scope.agent_id is not None:
        params["agent_id"] = scope.agent_id
    for i, arm in enumerate(arms):
        params[f"match_{i}"] = _match_text("postgresql", arm)
    rows = (await conn.execute(query, params)).all()
    complete = len(rows) < window * len(arms)  # every match of every word was read
    out: list[list[int] | None] = []
    for i in range(len(arms)):
        ids = [row[0] for row in rows if row[i + 1]][:window]
        out.append(ids if complete or len(ids) >= window else None)
    return out


@lru_cache(maxsize=64)
def _shared_statement(count: int, agent: bool) -> sa.Select:
    """``(id, matches word 0, matches word 1, …)`` of the newest rows matching any word."""
    queries = [
        sa.func.to_tsquery(_PG_CONFIG, sa.bindparam(f"match_{i}", type_=sa.String))
        for i in range(count)
    ]
    matched = [_PG_DOCUMENT.op("@@")(q).label(f"m{i}") for i, q in enumerate(queries)]
    either = queries[0]
    for q in queries[1:]:
        either = either.op("||")(q)  # a tsquery's OR
    said = M.c.role.in_(RECALLED_ROLES)
    query = sa.select(M.c.id, *matched).where(_PG_DOCUMENT.op("@@")(either), said)
    limit = sa.bindparam("limit", type_=sa.Integer)
    return _pg_scoped(query, agent).order_by(M.c.id.desc()).limit(limit)


async def _arm_windows(
    conn: AsyncConnection, dialect: str, arms: Sequence[_Arm], scope: _Scope, window: int
) -> list[list[int]]:
    """Each arm's window, newest first, all read by one statement."""
    kinds = tuple(_kind(dialect, arm) for arm in arms)
    agent = scope.agent_id is not None
    if any(k.startswith(_SCAN) for k in kinds):  # the word in a pattern: built per call
        query = _statement(dialect, kinds, agent, tuple(arm.part for arm in arms))
    else:  # built once per shape: building it costs more than SQLite takes to run it
        query = _cached_statement(dialect, kinds, agent)
    params: dict[str, object] = {"owner": scope.owner, "window": window}
    if agent:
        params["agent_id"] = scope.agent_id
    for i, arm in enumerate(arms):
        params[f"match_{i}"] = _match_text(dialect, arm)
        params[f"recent_{i}"] = arm.recent or 0
    by_arm: list[list[int]] = [[] for _ in arms]
    for arm_index, message_id in (await conn.execute(query, params)).all():
        by_arm[arm_index].append(message_id)
    return [sorted(ids, reverse=True) for ids in by_arm]


_SCAN = "scan"  # a word no index holds (InnoDB's short words, unspaced scripts)


def _kind(dialect: str, arm: _Arm) -> str:
    """The shape of the arm's statement: how its window is read."""
    if not _split(dialect, [arm.part])[0]:
        return _SCAN + ("-prefix" if arm.prefix else "")
    if dialect == "postgresql":
        return "backward" if arm.recent is None else "recent" if arm.recent else "gin"
    return dialect


def _match_text(dialect: str, arm: _Arm) -> str:
    """What the index is asked for (a bound parameter, never inlined)."""
    if dialect == "sqlite":
        return _fts_phrase([arm.part], arm.prefix)
    if dialect == "postgresql":
        return _pg_query([arm.part], arm.prefix)
    return "+" + arm.part + ("*" if arm.prefix else "")


@lru_cache(maxsize=512)
def _cached_statement(dialect: str, kinds: tuple[str, ...], agent: bool) -> sa.Select:
    return _statement(dialect, kinds, agent, ())


def _statement(
    dialect: str, kinds: tuple[str, ...], agent: bool, scanned: tuple[str, ...]
) -> sa.Select:
    """``(arm, id)`` rows: the arms' windows as subqueries (each keeps its ORDER BY and
    LIMIT: FTS5 reads newest first and stops in each) under one UNION ALL."""
    selects = []
    for i, kind in enumerate(kinds):
        word = scanned[i] if kind.startswith(_SCAN) else ""
        sub = _window(dialect, kind, i, agent, word).subquery(f"arm{i}")
        selects.append(sa.select(sub.c.arm, sub.c.id))
    return selects[0] if len(selects) == 1 else sa.union_all(*selects)


def _window(dialect: str, kind: str, i: int, agent: bool, word: str) -> sa.Select:
    """Arm ``i``'s newest matches within the scope (owner, agent: bound parameters)."""
    said = M.c.role.in_(RECALLED_ROLES)  # tool output and system notes are not recalled
    match = sa.bindparam(f"match_{i}", type_=sa.String)
    columns = (M.c.id.label("id"), sa.literal_column(str(i)).label("arm"))
    newest = M.c.id.desc()
    if kind.startswith(_SCAN):
        query = sa.select(*columns).where(_scan(word, kind.endswith("-prefix")), said)
    elif dialect == "sqlite":  # FTS5 reads its entries newest first and stops
        fts = sa.text(f"lumina_message_fts MATCH :match_{i}").bindparams(match)
        query = sa.select(*columns).select_from(_FTS.join(M, M.c.id == _FTS.c.rowid))
        query = query.where(fts, said)
        newest = _FTS.c.rowid.desc()
    elif dialect == "postgresql":
        tsquery = sa.func.to_tsquery(_PG_CONFIG, match)
        query = sa.select(*columns).where(_PG_DOCUMENT.op("@@")(tsquery), said)
        if kind != "backward":
            newest = (M.c.id + 0).desc()  # + 0: through the GIN index, then a sort
        if kind == "recent":
            newest_id = sa.select(sa.func.max(M.c.id)).scalar_subquery()
            recent = sa.bindparam(f"recent_{i}", type_=sa.Integer)
            query = query.where(M.c.id > newest_id - recent)
        return _pg_scoped(query, agent).order_by(newest).limit(_WINDOW)
    else:
        relevance = mysql_match(M.c.content, against=match).in_boolean_mode()
        query = sa.select(*columns).where(relevance, said)
    return _scoped(query, agent).order_by(newest).limit(_WINDOW)


_WINDOW = sa.bindparam("window", type_=sa.Integer)


def _owned(agent: bool) -> list[sa.ColumnElement[bool]]:
    found = [C.c.owner == sa.bindparam("owner", type_=sa.String)]
    if agent:
        found.append(C.c.agent_id == sa.bindparam("agent_id", type_=sa.String))
    return found


def _scoped(query: sa.Select, agent: bool) -> sa.Select:
    """``query`` (over lumina_message) joined to its conversation, within the scope."""
    query = query.join(C, C.c.id == M.c.conversation_id)
    return query.where(M.c.status.not_in(_UNSEARCHED), *_owned(agent))


def _pg_scoped(query: sa.Select, agent: bool) -> sa.Select:
    """``query`` within the scope, the conversation looked up per matched row (a scalar
    subquery is never turned into a join: no hash of every conversation per word)."""
    owned = sa.select(sa.literal_column("1")).where(C.c.id == M.c.conversation_id, *_owned(agent))
    return query.where(
        M.c.status.not_in(_UNSEARCHED), owned.correlate(M).scalar_subquery().is_not(None)
    )
