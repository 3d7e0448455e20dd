"""Auto-recall: before a run, the earlier messages most relevant to the new input that are
not in the window go into one system message, under the agent's token budget
(``"memory": {"autoRecall": {"limit": 5, "tokens": 1000, "scope": "conversation"}}``).
With ``"scope": "all"`` they may also come from the owner's other conversations with the
same agent, each line naming its conversation. The run's context recipe keeps their ids
(and, for another conversation's, where it was said), so the recorded context renders the
same message again."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from lumina_app.agents.definitions.memory_config import AutoRecallConfig
from lumina_app.domain import ConversationInfo, MsgRole
from lumina_app.domain.ids import ConversationPk
from lumina_app.domain.search import MAX_RECALL_CHARS
from lumina_app.domain.tokens import estimate_text
from lumina_app.recall import text
from lumina_app.recall.retriever import Recalled, Retriever

PREFIX = "Earlier in this conversation:"
OTHERS_PREFIX = "Earlier, in other conversations with this user:"
MESSAGE_CHARS = 1000  # one recalled message at most, before the budget
TITLE_CHARS = 80
# Across conversations the ranking covers its candidates whole whatever the limit, and the
# current conversation's hits (dropped: they come from its own index) may fill the top.
ACROSS_DEPTH = 50


class Said(Protocol):
    seq: int
    role: MsgRole
    content: str
    created_at: datetime | None


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """A message recalled from another of the owner's conversations with the agent."""

    message: Said
    message_id: int
    conversation_pk: ConversationPk
    conversation_uuid: str
    title: str  # as it was when the run was given the message
    score: float = 0.0


@dataclass(slots=True)
class Recollection:
    """What auto-recall found: this conversation's messages, and other conversations'."""

    here: list[Recalled] = field(default_factory=list)
    elsewhere: list[Elsewhere] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.here or self.elsewhere)

    def message(self) -> str:
        return recalled_message(self.here, self.elsewhere)

    def recipe(self) -> dict:
        """What the run's recorded context keeps: the ids (and, for another conversation's
        message, where it was said, as it was titled then), and why (the fused relevance)."""
        out: dict = {}
        if self.here:
            out["recalled"] = [m.message_id for m in self.here]
            out["recalledWhy"] = [{"seq": m.seq, "score": m.score} for m in self.here]
        if self.elsewhere:
            out["recalledElsewhere"] = [
                {
                    "id": e.message_id,
                    "conversationPk": e.conversation_pk,
                    "conversationId": e.conversation_uuid,
                    "title": e.title,
                    "seq": e.message.seq,
                    "score": e.score,
                }
                for e in self.elsewhere
            ]
        return out


async def recall_earlier(
    retriever: Retriever,
    conversation: ConversationInfo,
    query: str,
    config: AutoRecallConfig,
    *,
    in_window: Collection[int],
    owner: str = "",
    agent_id: str = "",
    before_seq: int | None = None,
) -> Recollection:
    """The best earlier messages for ``query`` outside the window (and, with scope
    ``all``, in ``owner``'s other conversations with ``agent_id``; never for a temporary
    conversation), fitting ``config.tokens``. A long message is searched by its first
    MAX_RECALL_CHARS. ``before_seq``: only this conversation's rows before it (an edited
    question's context never holds the branch it leaves)."""
    query = query[:MAX_RECALL_CHARS]
    if not text.words(query):
        return Recollection()
    candidates: list[tuple[Recalled, Elsewhere | None]] = []
    if conversation.last_seq > 0 and min(in_window, default=2) > 1:  # something left the window
        found = await retriever.in_conversation(
            conversation.id,
            query,
            limit=config.limit,
            before_seq=before_seq,
            exclude_seqs=in_window,
        )
        candidates += [(hit, None) for hit in found]
    if config.scope == "all" and owner and not conversation.temporary:  # it reads no memory
        across = await retriever.across(owner, query, agent_id=agent_id, limit=ACROSS_DEPTH)
        others = [
            (hit, Elsewhere(hit, hit.message_id, hit.conversation_pk, uuid, title, hit.score))
            for uuid, title, hit in across
            if uuid != conversation.uuid
        ]
        candidates += others[: config.limit]
    candidates.sort(key=lambda c: -c[0].score)  # stable: this conversation's first on a tie
    kept, used = Recollection(), estimate_text(PREFIX)
    for hit, elsewhere in candidates[: config.limit]:
        cost = estimate_text(_line(hit, elsewhere)) + 1
        if elsewhere is not None and not kept.elsewhere:
            cost += estimate_text(OTHERS_PREFIX)
        if used + cost > config.tokens:
            break
        if elsewhere is None:
            kept.here.append(hit)
        else:
            kept.elsewhere.append(elsewhere)
        used += cost
    kept.elsewhere.sort(key=lambda e: (e.message.created_at, e.conversation_uuid, e.message.seq))
    return kept


def recalled_message(msgs: Sequence[Said], elsewhere: Sequence[Elsewhere] = ()) -> str:
    """The system message's text: one ``[#seq time role] text`` line per message of this
    conversation, in order; then, under their own heading, the other conversations' in the
    order given, each line naming its conversation (``…, in "Title"]``)."""
    lines = []
    if msgs:
        lines += [PREFIX, *(_line(m) for m in sorted(msgs, key=lambda m: m.seq))]
    if elsewhere:
        lines += [OTHERS_PREFIX, *(_line(e.message, e) for e in elsewhere)]
    return "\n".join(lines)


def quoted_title(title: str) -> str:
    """A conversation's title on one line, in double quotes (none inside)."""
    flat = " ".join(title.split()).replace('"', "'")[:TITLE_CHARS]
    return f'"{flat}"' if flat else '"(untitled)"'


def _line(msg: Said, elsewhere: Elsewhere | None = None) -> str:
    text_ = " ".join(msg.content.split())
    if len(text_) > MESSAGE_CHARS:
        text_ = text_[:MESSAGE_CHARS] + "…"
    when = msg.created_at.strftime("%Y-%m-%d %H:%M") if msg.created_at else ""
    where = f", in {quoted_title(elsewhere.title)}" if elsewhere else ""
    return f"[#{msg.seq} {when} {msg.role.chat_role}{where}] {text_}"


_LINE = re.compile(r'^\[#(\d+) [^\]\n]*?(?:, in "([^"\n]*)")?\] ', re.MULTILINE)


def recalled_in(system_text: str) -> list[tuple[int, str | None]]:
    """What a recalled message (:func:`recalled_message`) holds: each line's seq and, for
    another conversation's, its title (None: this conversation's); [] for other text."""
    if not system_text.startswith((PREFIX, OTHERS_PREFIX)):
        return []
    return [(int(m[1]), m[2]) for m in _LINE.finditer(system_text)]
