"""Finding things said earlier: in one conversation, or across all of a caller's, through
the full-text index, and in the text of the files messages carry (such a hit names the
file; docs/FILES.md). Hits carry a snippet with the matches marked (``<mark>``), the rest
of the text HTML-escaped, so a client can show it as markup safely."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from lumina_app.domain import ConversationInfo, InvalidInput, Principal
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.domain.search import UNSPACED, FileTextMatch, MessageHit, terms
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.search_reads import SearchReads

MAX_QUERY_CHARS = 200
SNIPPET_CHARS = 160


@dataclass(frozen=True, slots=True)
class FileRef:
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class SearchHit:
    conversation_uuid: str
    title: str
    seq: int
    role: str
    snippet: str
    score: float
    created_at: datetime
    file: FileRef | None = None  # found in the text of this file the message carries


class SearchService:
    def __init__(self, lookup: ConversationLookup, reads: SearchReads) -> None:
        self.lookup = lookup
        self.reads = reads

    async def in_conversation(
        self, principal: Principal, conversation_uuid: str, query: str, *, limit: int = 20
    ) -> list[SearchHit]:
        conversation = await self.lookup.find_visible(
            principal, parse_conversation_uuid(conversation_uuid)
        )
        words = _words(query)
        if not words:
            return []
        return await self._found(words, limit, owner=principal.owner, conversation=conversation)

    async def everywhere(
        self, principal: Principal, query: str, *, agent_id: str | None = None, limit: int = 20
    ) -> list[SearchHit]:
        words = _words(query)
        if not words:
            return []
        return await self._found(words, limit, owner=principal.owner, agent_id=agent_id)

    async def _found(
        self,
        words: list[str],
        limit: int,
        *,
        owner: str,
        conversation: ConversationInfo | None = None,
        agent_id: str | None = None,
    ) -> list[SearchHit]:
        """The messages' hits, then those found in files' text only: one read (on SQLite
        one worker thread; searched side by side, on two, they took turns at the GIL, and
        a rare word took 8.8 ms over HTTP against 5.3 ms one after the other)."""
        hits, in_files = await self.reads.search(
            words, owner=owner, conversation=conversation, agent_id=agent_id, limit=limit
        )
        return await _with_files([_hit(h, words) for h in hits], in_files, words, limit)


def _words(query: str) -> list[str]:
    """The words searched for; none (text of punctuation only) finds nothing, as a
    search box would show it, rather than being an error."""
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"search text is limited to {MAX_QUERY_CHARS} characters")
    return terms(query)


def _hit(hit: MessageHit, words: Sequence[str]) -> SearchHit:
    return SearchHit(
        conversation_uuid=hit.conversation_uuid,
        title=hit.conversation_title,
        seq=hit.seq,
        role=hit.role.value,
        snippet=snippet(hit.content, words),
        score=round(hit.score, 6),
        created_at=hit.created_at,
    )


async def _with_files(
    hits: list[SearchHit], matches: Sequence[FileTextMatch], words: Sequence[str], limit: int
) -> list[SearchHit]:
    """The message hits, then the messages found by a file's text only: after them, but
    keeping at least a quarter of the places when both would pass ``limit``."""
    if not matches:
        return hits
    extra = await asyncio.to_thread(
        file_hits, matches, words, {(h.conversation_uuid, h.seq) for h in hits}
    )
    kept = min(len(extra), max(limit - len(hits), max(1, limit // 4)))
    return hits[: limit - kept] + extra[:kept]


def file_hits(
    matches: Sequence[FileTextMatch], words: Sequence[str], seen: set[tuple[str, int]]
) -> list[SearchHit]:
    """One hit per message not in ``seen`` whose file's text has every word as a word (the
    last as a prefix: the query matched substrings), its snippet from that text."""
    patterns = [
        re.compile(_marked(w, i == len(words) - 1), re.IGNORECASE) for i, w in enumerate(words)
    ]
    out = []
    for m in matches:
        key = (m.conversation_uuid, m.seq)
        if key in seen or not all(p.search(m.text) for p in patterns):
            continue
        seen.add(key)
        out.append(
            SearchHit(
                conversation_uuid=m.conversation_uuid,
                title=m.conversation_title,
                seq=m.seq,
                role=m.role.value,
                snippet=snippet(m.text, words),
                score=0.0,
                created_at=m.created_at,
                file=FileRef(m.file_id, m.file_name),
            )
        )
    return out


def snippet(text: str, words: Sequence[str], width: int = SNIPPET_CHARS) -> str:
    """About ``width`` characters of ``text`` around its first match, HTML-escaped, every
    match of a word (the last as a prefix) wrapped in ``<mark>``."""
    if not words:
        return html.escape(text[:width])
    pattern = re.compile("|".join(_marked(w, i == len(words) - 1) for i, w in enumerate(words)),
                         re.IGNORECASE)  # fmt: skip
    first = pattern.search(text)
    start = max(0, (first.start() if first else 0) - width // 3)
    if start:
        space = text.find(" ", start, start + 20)
        start = space + 1 if space != -1 else start
    piece = text[start : start + width]
    out, last = [], 0
    for found in pattern.finditer(piece):
        out += [html.escape(piece[last : found.start()]), "<mark>"]
        out += [html.escape(found.group()), "</mark>"]
        last = found.end()
    out.append(html.escape(piece[last:]))
    prefix = "…" if start else ""
    suffix = "…" if start + width < len(text) else ""
    return prefix + "".join(out).replace("\n", " ") + suffix


def _marked(word: str, last: bool) -> str:
    """The pattern of one word: whole (the last as a prefix); inside the text for words of
    scripts written without spaces, as the search found them."""
    if UNSPACED.search(word):
        return re.escape(word)
    return r"\b" + re.escape(word) + (r"\w*" if last else r"\b")
