"""Auto-recall: before a run, the earlier messages most relevant to the new input that are
not in the window go into one system message, under the agent's token budget
(``"memory": {"autoRecall": {"limit": 5, "tokens": 1000}}``). The run's context recipe
keeps their ids, so the recorded context renders the same message again."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Protocol

from lumina_app.agents.memory_config import AutoRecallConfig
from lumina_app.domain import ConversationInfo, MsgRole
from lumina_app.domain.tokens import estimate_text
from lumina_app.recall.retriever import Recalled, Retriever

PREFIX = "Earlier in this conversation:"
MESSAGE_CHARS = 1000  # one recalled message at most, before the budget


class Said(Protocol):
    seq: int
    role: MsgRole
    content: str
    created_at: datetime | None


async def recall_earlier(
    retriever: Retriever,
    conversation: ConversationInfo,
    query: str,
    config: AutoRecallConfig,
    *,
    in_window: Collection[int],
) -> list[Recalled]:
    """The best earlier messages for ``query`` outside the window, fitting ``config.tokens``."""
    if conversation.last_seq == 0 or not query.strip() or min(in_window, default=2) <= 1:
        return []  # nothing said yet, or the window still holds all of it
    found = await retriever.in_conversation(
        conversation.id, query, limit=config.limit, exclude_seqs=in_window
    )
    kept, used = [], estimate_text(PREFIX)
    for hit in found:
        cost = estimate_text(_line(hit)) + 1
        if used + cost > config.tokens:
            break
        kept.append(hit)
        used += cost
    return kept


def recalled_message(msgs: Sequence[Said]) -> str:
    """The system message's text: one ``[#seq time role] text`` line per message, in order."""
    if not msgs:
        return ""
    return "\n".join([PREFIX, *(_line(m) for m in sorted(msgs, key=lambda m: m.seq))])


def _line(msg: Said) -> str:
    text = " ".join(msg.content.split())
    if len(text) > MESSAGE_CHARS:
        text = text[:MESSAGE_CHARS] + "…"
    when = msg.created_at.strftime("%Y-%m-%d %H:%M") if msg.created_at else ""
    return f"[#{msg.seq} {when} {msg.role.chat_role}] {text}"
