"""Full-text search over message text, on each backend's own index (migration 0007):
SQLite FTS5, PostgreSQL ``tsvector`` + GIN, MariaDB/MySQL ``FULLTEXT``.

Any query text is safe: it is reduced to its words (runs of letters and digits), and every
word must match (the last one as a prefix: it may still be being typed), so operators and
punctuation in what a user types never reach the engine's query syntax. Only final
messages are indexed; a growing answer is found once it ends.

Every backend splits text into the same words, so a code is found the same way everywhere
(``ZEBRA-4417`` by ``zebra``, ``4417`` or ``ZEBRA-4417``; ``v2.3.1`` by ``v2.3``):
punctuation separates words. SQLite's unicode61 and InnoDB do that themselves;
PostgreSQL's parser would keep ``-4417`` (a signed number), ``v2.3.1`` (a file name) or
``foo.bar`` (a host) whole, so its document is the text with ASCII punctuation turned to
spaces (migration 0012). A word InnoDB does not index (short, a stopword) is matched as a
whole word by a pattern, not as any substring. One difference is left: ``_`` joins a word
on InnoDB only, so ``snake_case_name`` is found by itself or ``snake_case`` everywhere, but
by ``case`` alone only on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.mysql import match as mysql_match
from sqlalchemy.ext.asyncio import AsyncConnection

from lumina_app.domain import MessageStatus, MsgRole
from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.search import UNSPACED, FileTextMatch, MessageHit
from lumina_app.storage.sql import fts_rank, pg_share
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import conversations as C
from lumina_app.storage.sql.models import messages as M

# What PostgreSQL indexes of a message: the stored to_tsvector('simple', ...) of its text
# with ASCII punctuation but ``%`` turned to spaces (migration 0012's document, stored and
# indexed by 0014), read, not parsed again, to rank.
_PG_DOCUMENT = sa.literal_column("lumina_message.search_vector")
_PG_CONFIG = sa.literal_column("'simple'")
# Messages a search never returns: not final yet, or replaced by a regenerated answer.
_UNSEARCHED = (MessageStatus.STREAMING.value, "superseded")


_FTS = sa.table("lumina_message_fts", sa.column("rowid"))
_FTS_MATCH = sa.text("lumina_message_fts MATCH :fts_query")
_PART = re.compile(r"[^\W_]+")


def _parts(dialect: str, words: Sequence[str]) -> list[str]:
    """The words as the index splits them: runs of letters and digits, except on InnoDB,
    for which ``_`` is part of a word (so ``snake_case_name`` is one word there)."""
    if dialect not in ("postgresql", "sqlite"):
        return list(words)
    found: list[str] = []
    for word in words:
        found += [p for p in _PART.findall(word) if p not in found]
    return found


def _fts_phrase(words: Sequence[str], prefix: bool) -> str:
    """FTS5: every word as a quoted string (no operator can come through), all required,
    the last one as a prefix if it is what is still being typed (fts_rank.prefix_phrase)."""
    quoted = ['"' + w.replace('"', '""') + '"' for w in (words[:-1] if prefix else words)]
    if prefix:
        quoted.append(fts_rank.prefix_phrase(words[-1]))
    return " AND ".join(quoted)


def _pg_query(words: Sequence[str], prefix: bool) -> str:
    """A to_tsquery of quoted words (``\\w`` only: no quote or operator inside), all
    required, the last one as a prefix if it is what is still being typed."""
    return " & ".join(f"'{w}'" for w in words) + (":*" if prefix else "")


def _split(dialect: str, words: Sequence[str]) -> tuple[list[str], list[str]]:
    """(words the index can find, words matched by a scan of the text instead).

    No index here splits Chinese, Japanese or Thai text into words (a run of such
    characters is one token), so a word in such a script is looked for inside the text.
    InnoDB's FULLTEXT also leaves out words shorter than innodb_ft_min_token_size (3) and
    its default stopwords, and a required word it left out makes a whole query match
    nothing ("+what +plan" finds no row).
    """
    indexed, scanned = [], []
    for word in words:
        unindexed = UNSPACED.search(word) or (
            dialect not in ("postgresql", "sqlite") and not _innodb_indexes(word)
        )
        (scanned if unindexed else indexed).append(word)
    return indexed, scanned


def _match(dialect: str, words: Sequence[str]) -> tuple[sa.ColumnElement, sa.ColumnElement]:
    """(filter on lumina_message rows, relevance: higher is better) for ``words``; on
    SQLite the filter is an id subquery (see :func:`search_messages` for its ranking)."""
    words = _parts(dialect, words)
    if not words:  # only joiners, such as "_": no word to look for
        return sa.false(), sa.literal(0.0)
    indexed, scanned = _split(dialect, words)
    likes = [_scan(w, w == words[-1]) for w in scanned]
    if not indexed:  # a scan, within the caller's scope (owner, conversation, agent)
        return sa.and_(*likes), sa.literal(0.0)
    prefix = indexed[-1] == words[-1]
    if dialect == "postgresql":
        query = sa.func.to_tsquery(_PG_CONFIG, _pg_query(indexed, prefix))
        return sa.and_(_PG_DOCUMENT.op("@@")(query), *likes), sa.func.ts_rank(_PG_DOCUMENT, query)
    if dialect == "sqlite":
        rows = sa.text(
            "lumina_message.id IN (SELECT rowid FROM lumina_message_fts "
            "WHERE lumina_message_fts MATCH :fts_query)"
        ).bindparams(fts_query=_fts_phrase(indexed, prefix))
        return sa.and_(rows, *likes), sa.literal(0.0)
    boolean = " ".join("+" + w for w in indexed) + ("*" if prefix else "")
    relevance = mysql_match(M.c.content, against=boolean).in_boolean_mode()
    return sa.and_(relevance, *likes), relevance


_INNODB_MIN_TOKEN = 3
_INNODB_STOPWORDS = frozenset(
    {
        "a", "about", "an", "are", "as", "at", "be", "by", "com", "de", "en", "for", "from",
        "how", "i", "in", "is", "it", "la", "of", "on", "or", "that", "the", "this", "to",
        "was", "what", "when", "where", "who", "will", "with", "und", "www",
    }
)  # fmt: skip


def _innodb_indexes(word: str) -> bool:
    return len(word) >= _INNODB_MIN_TOKEN and word not in _INNODB_STOPWORDS


def _scan(word: str, prefix: bool) -> sa.ColumnElement:
    """A word the index cannot find, looked for in the text: inside it for a script written
    without spaces; elsewhere (InnoDB's short words and stopwords) as a whole word, or the
    start of one if it is the last (a pattern of letters and digits only: ``_parts``)."""
    if UNSPACED.search(word):
        return M.c.content.like(f"%{_like_escaped(word)}%", escape="\\")
    end = "" if prefix else "([^[:alnum:]]|$)"
    return M.c.content.op("REGEXP")(f"(^|[^[:alnum:]]){word}{end}")


def _like_escaped(word: str) -> str:
    return word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def matching_conversations(dialect: str, words: Sequence[str]) -> sa.Select:
    """Ids of conversations with a message matching every word (for list filters)."""
    where, _score = _match(dialect, words)
    return sa.select(M.c.conversation_id).where(where, M.c.status.not_in(_UNSEARCHED)).distinct()


# A query matching more of the caller's messages than this ranks only the newest this many
# of them (docs/PERFORMANCE.md says what that gives up for a frequent word).
RANK_WINDOW = 500


async def search_messages(
    db: SQLDatabase,
    words: Sequence[str],
    *,
    owner: str,
    conversation_pk: ConversationPk | None = None,
    agent_id: str | None = None,
    limit: int = 20,
    files: Callable[[sa.Connection], list[FileTextMatch]] = lambda _conn: [],
) -> tuple[list[MessageHit], list[FileTextMatch]]:
    """The caller's messages matching every word: most relevant first (recency breaks
    ties, and orders them on SQLite). Only the newest :data:`RANK_WINDOW` matches are
    ranked on SQLite and PostgreSQL, so a frequent word costs what a rare one does. And
    ``files``, a read of the messages whose files' text holds them (``file_search``): on
    SQLite after the messages, in the same hand-off to a worker thread (on two threads side
    by side they took turns at the GIL); elsewhere side by side, on its own connection (one
    after the other, their round trips added up: 8.9 → 11.4 ms over HTTP on PostgreSQL)."""
    parts = _parts(db.dialect, words)
    scope = _Scope(owner, conversation_pk, agent_id)
    indexed, scanned = _split(db.dialect, parts)
    if db.dialect == "sqlite":  # its statements, all on one worker thread
        if indexed:
            ranked = partial(_sqlite_ranked, parts, indexed, scanned, scope, limit)
        else:  # no word the index holds (Chinese, Thai): the scan's statement
            ranked = partial(_scanned, parts, scope, limit)
        return await db.read(lambda conn: (ranked(conn), files(conn)))

    async def messages() -> list[MessageHit]:
        if not parts:  # only joiners, such as "_": no word to look for
            return []
        async with db.connect() as conn:
            if db.dialect == "postgresql":
                rows = await _pg_ranked(conn, parts, scope, limit)
            else:
                rows = (await conn.execute(_ranked(db.dialect, parts, scope, limit))).all()
        return [_hit(r, r.score) for r in rows]

    hits, in_files = await asyncio.gather(messages(), db.read(files))
    return hits, in_files


def _scanned(
    parts: Sequence[str], scope: _Scope, limit: int, conn: sa.Connection
) -> list[MessageHit]:
    if not parts:  # only joiners, such as "_": no word to look for
        return []
    return [_hit(r, r.score) for r in conn.execute(_ranked("sqlite", parts, scope, limit))]


def _hit(r: sa.Row, score: float | None) -> MessageHit:
    return MessageHit(
        conversation_uuid=r.uuid,
        conversation_title=r.title,
        message_id=r.id,
        seq=r.seq,
        role=MsgRole(r.role),
        content=r.content,
        score=float(score or 0.0),
        created_at=r.created_at,
    )


_COLUMNS = (C.c.uuid, C.c.title, M.c.id, M.c.seq, M.c.role, M.c.content, M.c.created_at)


@dataclass(frozen=True)
class _Scope:
    owner: str
    conversation_pk: ConversationPk | None
    agent_id: str | None

    @property
    def shape(self) -> tuple[bool, bool]:
        """(in one conversation, of one agent): what :func:`_scoped` needs to know."""
        return self.conversation_pk is not None, self.agent_id is not None

    def params(self, **more: Any) -> dict[str, Any]:
        """The scope's values for a statement :func:`_scoped` built, and ``more``."""
        values = {"scope_owner": self.owner, "scope_conversation": self.conversation_pk}
        return values | {"scope_agent": self.agent_id} | more

    def where(self, query: sa.Select) -> sa.Select:
        """``query`` (over lumina_message) joined to its conversation, within the scope."""
        return _scoped(query, *self.shape, values=self.params())


def _scoped(
    query: sa.Select, conversation: bool, agent: bool, values: dict[str, Any] | None = None
) -> sa.Select:
    """``query`` (over lumina_message) joined to its conversation, within a scope of this
    shape; with no ``values``, they are left to bind (:meth:`_Scope.params`), so that a
    statement run on every search is built once (:func:`_page`), not at each (building
    one took about as long as running it)."""

    def bound(name: str) -> sa.BindParameter:
        return sa.bindparam(name) if values is None else sa.bindparam(name, values[name])

    query = query.join(C, C.c.id == M.c.conversation_id).where(
        M.c.status.not_in(_UNSEARCHED), C.c.owner == bound("scope_owner")
    )
    if conversation:
        query = query.where(M.c.conversation_id == bound("scope_conversation"))
    if agent:
        query = query.where(C.c.agent_id == bound("scope_agent"))
    return query


def _ranked(dialect: str, words: Sequence[str], scope: _Scope, limit: int) -> sa.Select:
    """Every match ranked (MariaDB/MySQL; SQLite for a word no index finds, or when the
    words are rare enough that bm25() counts them cheaply)."""
    indexed, scanned = _split(dialect, words)
    if dialect == "sqlite" and indexed:  # from the FTS table, so bm25() ranks (lower: better)
        rank = -sa.func.bm25(sa.literal_column("lumina_message_fts"))
        query = (
            sa.select(*_COLUMNS, rank.label("score"))
            .select_from(_FTS.join(M, M.c.id == _FTS.c.rowid))
            .where(_fts_match(words, indexed), *_likes(words, scanned))
        )
    else:
        where, score = _match(dialect, words)
        query = sa.select(*_COLUMNS, score.label("score")).where(where)
    return scope.where(query).order_by(sa.desc("score"), M.c.id.desc()).limit(limit)


# Read the id index backwards for the newest matches only if that reads at most this many
# rows (RANK_WINDOW over the matched share); else the GIN index and a sort (pg_share.py),
# within the newest ids expected to hold the window (twice over) if they are at most
# _PG_RECENT_IDS: the heap is then read for those matches only (a BitmapAnd).
_PG_BACKWARD_ROWS, _PG_RECENT_IDS = 50_000, 200_000


async def _pg_ranked(
    conn: AsyncConnection, words: Sequence[str], scope: _Scope, limit: int
) -> Sequence[sa.Row]:
    """The newest RANK_WINDOW matches, ranked by ``ts_rank`` over their stored vectors.

    Across conversations, a query the statistics say is rarer than RANK_WINDOW in
    _PG_BACKWARD_ROWS goes through the GIN index (the planner would read the id index
    backwards for some of those); a frequent one is left to the planner, which reads the
    id index backwards. In one conversation, the planner starts from its rows."""
    size = max(RANK_WINDOW, limit)
    indexed, scanned = _split("postgresql", words)
    prefix = bool(indexed) and indexed[-1] == words[-1]

    async def ranked(way: str, recent: int = 0) -> Sequence[sa.Row]:
        likes = tuple((w, w == words[-1]) for w in scanned)
        query = _pg_window(*scope.shape, way, bool(indexed), likes)
        values = {"pg_query": _pg_query(indexed, prefix), "recent": recent}
        return (await conn.execute(query, scope.params(**values, size=size, limit=limit))).all()

    if scope.conversation_pk is None and indexed:
        matched = await pg_share.share(conn, indexed, prefix)
        if matched is not None and size / max(matched, 1e-9) > _PG_BACKWARD_ROWS:
            recent = round(2 * size / max(matched, 1e-9))
            if recent <= _PG_RECENT_IDS:
                rows = await ranked("recent", recent)
                if rows and rows[0].window_rows >= size:  # else older ids hold some
                    return rows
            return await ranked("gin")
    return await ranked("planner")


@lru_cache(maxsize=64)
def _pg_window(
    conversation: bool, agent: bool, way: str, indexed: bool, likes: tuple[tuple[str, bool], ...]
) -> sa.Select:
    """The ranking statement for a scope of this shape, built once (built at each search,
    it took 0.6-1.3 ms of CPU more; PostgreSQL runs it in ~3 ms), its values bound at each
    search: the words (``:pg_query``), the scope's, ``:size``, ``:limit``, ``:recent``.
    ``way``: "planner", the planner's; "gin", through the GIN index; "recent", through it
    among the ``:recent`` newest ids. ``likes``: the words no index holds (and whether
    each is a prefix)."""
    tsquery = sa.func.to_tsquery(_PG_CONFIG, sa.bindparam("pg_query", type_=sa.String))
    where = [_PG_DOCUMENT.op("@@")(tsquery)] if indexed else []
    where += [_scan(word, prefix) for word, prefix in likes]
    score = sa.func.ts_rank(_PG_DOCUMENT, tsquery) if indexed else sa.literal(0.0)
    candidates = _scoped(sa.select(M.c.id.label("id")).where(*where), conversation, agent)
    if way == "recent":
        newest_id = sa.select(sa.func.max(M.c.id)).scalar_subquery()
        candidates = candidates.where(M.c.id > newest_id - sa.bindparam("recent", type_=sa.Integer))
    newest = M.c.id.desc() if way == "planner" else (M.c.id + 0).desc()  # + 0: not the id index
    window = (
        candidates.order_by(newest).limit(sa.bindparam("size", type_=sa.Integer)).cte("candidates")
    )
    counted = sa.select(sa.func.count()).select_from(window).scalar_subquery()
    query = sa.select(*_COLUMNS, score.label("score"), counted.label("window_rows"))
    query = query.select_from(window).join(M, M.c.id == window.c.id)
    query = query.join(C, C.c.id == M.c.conversation_id)
    return query.order_by(sa.desc("score"), M.c.id.desc()).limit(
        sa.bindparam("limit", type_=sa.Integer)
    )


def _sqlite_ranked(
    words: Sequence[str],
    indexed: Sequence[str],
    scanned: Sequence[str],
    scope: _Scope,
    limit: int,
    conn: sa.Connection,
) -> list[MessageHit]:
    """The scope's newest matches, at most RANK_WINDOW, read from FTS5 newest first (in one
    conversation: from its rows, :func:`_in_conversation`); ranked by bm25() as before if
    they are all and bm25() would count few rows, else by :mod:`fts_rank`'s bm25 over those
    candidates only (the same scores while every word is in at most fts_rank.COUNTED rows)."""
    size = max(RANK_WINDOW, limit)
    prefix = indexed[-1] == words[-1]
    fts_words = [
        fts_rank.Word(" ".join(fts_rank.words_of(w)) or w, prefix and i == len(indexed) - 1)
        for i, w in enumerate(indexed)
    ]
    weights = fts_rank.weights(conn, fts_words)
    split: dict[int, str] = {}  # rows already split into their words (fts_rank.spaced)
    if scope.conversation_pk is not None:
        found = _in_conversation(
            conn, words, indexed, scanned, scope, size, (fts_words, weights), split
        )
    else:
        candidates = _scanning(_newest_matches(*scope.shape, between=False), words, scanned)
        found = conn.execute(
            candidates, scope.params(fts_query=_phrase(words, indexed), n=size + 1)
        ).all()
    if not found:
        return []
    if len(found) <= size and max(weights.counts) <= size:  # bm25() counts few rows
        return [_hit(r, r.score) for r in conn.execute(_ranked("sqlite", words, scope, limit))]
    window = found[:size]  # (id, text) rows, unpacked: read by name, they took 0.3 ms more
    fresh = [(i, text) for i, text in window if i not in split]  # read from the index
    split.update(zip([i for i, _ in fresh], fts_rank.spaced([t for _, t in fresh]), strict=True))
    ids = [i for i, _ in window]
    scores = fts_rank.scores([split[i] for i in ids], fts_words, weights)
    scored = sorted(zip(scores, ids, strict=True), reverse=True)[:limit]
    rows = {r.id: r for r in conn.execute(_BY_ID, {"ids": [i for _, i in scored]})}
    return [_hit(rows[i], s) for s, i in scored]


_BY_ID = (
    sa.select(*_COLUMNS)
    .join(C, C.c.id == M.c.conversation_id)
    .where(M.c.id.in_(sa.bindparam("ids", expanding=True)))
)


@cache
def _newest_matches(conversation: bool, agent: bool, *, between: bool) -> sa.Select:
    """The scope's messages FTS5 matches (``:fts_query``), newest first, at most ``:n``;
    only between the ids ``:lowest`` and ``:highest`` if ``between``. Id and text."""
    query = (
        sa.select(M.c.id, M.c.content)
        .select_from(_FTS.join(M, M.c.id == _FTS.c.rowid))
        .where(_FTS_MATCH)
    )
    if between:
        query = query.where(_FTS.c.rowid.between(sa.bindparam("lowest"), sa.bindparam("highest")))
    query = _scoped(query, conversation, agent)
    return query.order_by(_FTS.c.rowid.desc()).limit(sa.bindparam("n"))


@cache
def _page(agent: bool) -> sa.Select:
    """One conversation's messages with a lower ``seq`` than ``:before``, newest first, at
    most ``:n``: id, text and seq."""
    query = sa.select(M.c.id, M.c.content, M.c.seq).where(M.c.seq < sa.bindparam("before"))
    return _scoped(query, True, agent).order_by(M.c.seq.desc()).limit(sa.bindparam("n"))


_IDS = sa.select(sa.func.count(), sa.func.min(M.c.id), sa.func.max(M.c.id)).where(
    M.c.conversation_id == sa.bindparam("scope_conversation")
)


# A conversation's rows are read in pages of this many, newest first, when it is searched
# from its rows; microseconds per FTS5 index entry read, per match joined to its row, and
# per row split into words here (SQLite 3.40, a million messages: bench/scale.py). An
# index entry costs that for each list the word reads (a one-character prefix reads 37).
_PAGE = 2_000
_NEWEST_SEQ = 2**62  # above any message's seq: the first page starts at the newest
_US_ENTRY, _US_JOINED, _US_SPLIT = 0.3, 3.0, 5.0


def _in_conversation(
    conn: sa.Connection,
    words: Sequence[str],
    indexed: Sequence[str],
    scanned: Sequence[str],
    scope: _Scope,
    size: int,
    weighed: tuple[Sequence[fts_rank.Word], fts_rank.Weights],
    split: dict[int, str],
) -> Sequence[tuple[int, str]]:
    """A conversation's newest matches (id, text; at most ``size`` + 1), by whichever reads
    fewer rows: FTS5 between the conversation's lowest and highest ids (the index entries of
    its rarest word there, other conversations' among them when they were written at the
    same time), or the conversation's own rows, newest first, each matched here as FTS5
    matches it (its words as the index splits and folds them, kept in ``split``). A word in
    most messages, in one of many conversations written side by side, no longer reads the
    whole index's entries."""
    fts_words, weights = weighed
    rows, lowest, highest = conn.execute(_IDS, scope.params()).one()
    if not rows:
        return []
    # Expected costs, if the rarest word's rows are spread evenly: FTS5 reads its index
    # entries between those ids and joins the conversation's matches; the other way splits
    # the conversation's rows until it has the window.
    share = min(weights.counts) / max(weights.rows, 1)
    entries = share * (highest - lowest + 1) * max(word.lists for word in fts_words)
    taken = min(size + 1, rows * share)
    to_split = rows if share <= 0 else min(rows, (size + 1) / share)
    if entries * _US_ENTRY + taken * _US_JOINED <= to_split * _US_SPLIT:
        candidates = _scanning(_newest_matches(*scope.shape, between=True), words, scanned)
        params = {"fts_query": _phrase(words, indexed), "lowest": lowest, "highest": highest}
        return conn.execute(candidates, scope.params(**params, n=size + 1)).all()
    found: list[tuple[int, str]] = []
    before = _NEWEST_SEQ  # pages by seq: the conversation's index, newest first
    limit = min(_PAGE, int(to_split * 1.1) + 16)  # first what the window likely needs
    page = _scanning(_page(scope.agent_id is not None), words, scanned)
    while True:
        page_rows = conn.execute(page, scope.params(before=before, n=limit)).all()
        ids, contents, seqs = zip(*page_rows, strict=True) if page_rows else ((), (), ())
        texts = fts_rank.spaced(contents)
        held = range(len(texts))
        for word in fts_words:  # the rows holding every word, one word at a time
            held = [i for i in held if word.found_in(texts[i])]
        for i in held[: size + 1 - len(found)]:
            found.append((ids[i], contents[i]))
            split[ids[i]] = texts[i]
        if len(found) > size or len(page_rows) < limit:  # the window, or no older rows
            return found
        before, limit = seqs[-1], _PAGE


def _fts_match(words: Sequence[str], indexed: Sequence[str]) -> sa.TextClause:
    return _FTS_MATCH.bindparams(fts_query=_phrase(words, indexed))


def _phrase(words: Sequence[str], indexed: Sequence[str]) -> str:
    """The FTS5 query for the indexed words (the last as a prefix if it is the last word)."""
    return _fts_phrase(indexed, indexed[-1] == words[-1])


def _likes(words: Sequence[str], scanned: Sequence[str]) -> list[sa.ColumnElement]:
    return [_scan(w, w == words[-1]) for w in scanned]


def _scanning(query: sa.Select, words: Sequence[str], scanned: Sequence[str]) -> sa.Select:
    """``query`` also requiring the words no index holds; itself if there are none (a
    statement built once stays so)."""
    return query.where(*_likes(words, scanned)) if scanned else query
