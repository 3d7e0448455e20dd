"""A file's text as recall candidates of the message that carries it (docs/FILES.md): so
"the spec I sent in March" is recalled by a phrase of the spec. The files whose text holds
a word of the question (``storage/sql/file_search.py``, a small query of its own) are cut
into passages of a few hundred words; those passages that hold one are ranked by BM25 (the
one of ``recall/lexical.py``), and each message keeps its best passage."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.search import FileTextMatch
from lumina_app.recall import text
from lumina_app.recall.lexical import Bm25
from lumina_app.recall.retriever import prefixes
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.file_search import matching_file_texts

PASSAGE_WORDS = 200  # words in a passage (the last one of a text may be shorter)
MAX_FILES = 20  # the newest messages' files holding a word of the question, at most
MAX_PASSAGES = 1000  # passages holding a word ranked per question, at most
_TOKEN = re.compile(r"\S+")


@dataclass(frozen=True, slots=True)
class Passage:
    """The best passage of a file a message carries, and its BM25 score among them."""

    match: FileTextMatch
    text: str
    score: float


class FilePassages:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def ranked(
        self,
        query: str,
        *,
        owner: str,
        conversation_pk: ConversationPk | None = None,
        agent_id: str | None = None,
        limit: int = 10,
    ) -> list[Passage]:
        """The owner's (one conversation's, one agent's) messages by their files' passages
        most relevant to ``query``, best first, one per message."""
        wanted = prefixes(query)
        if not wanted:
            return []
        matches = await matching_file_texts(
            self.db,
            wanted,
            owner=owner,
            every=False,
            conversation_pk=conversation_pk,
            agent_id=agent_id,
            limit=MAX_FILES,
        )
        if not matches:
            return []
        # stemming a long text is CPU work that grows with it: off the event loop
        return await asyncio.to_thread(rank_passages, matches, query, wanted, limit)


def passages(body: str, size: int = PASSAGE_WORDS) -> list[str]:
    """``body`` in pieces of ``size`` words, each as written (line breaks kept)."""
    starts = [m.start() for m in _TOKEN.finditer(body)][::size]
    return [body[a:b].strip() for a, b in zip(starts, [*starts[1:], len(body)], strict=True)]


def rank_passages(
    matches: Sequence[FileTextMatch], query: str, wanted: Sequence[str], limit: int
) -> list[Passage]:
    lowered = [w.lower() for w in wanted]
    found: list[tuple[FileTextMatch, str]] = []
    for match in matches:
        found += [(match, p) for p in passages(match.text) if any(w in p.lower() for w in lowered)]
        if len(found) >= MAX_PASSAGES:
            break
    found = found[:MAX_PASSAGES]
    terms = text.query_terms(query)
    scores = Bm25([text.terms(piece) for _, piece in found], terms).scores(terms)
    best: dict[tuple[int, int], Passage] = {}
    for (match, piece), score in zip(found, scores.tolist(), strict=True):
        key = (match.conversation_pk, match.seq)
        if score > 0 and (key not in best or score > best[key].score):
            best[key] = Passage(match, piece, round(float(score), 6))
    return sorted(best.values(), key=lambda p: (-p.score, -p.match.message_id))[:limit]
