"""Warm sessions keyed ``agentId:conversationId``: the history a run can reuse without a read."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from lumina_app.domain import Msg, Summary


@dataclass(slots=True)
class Session:
    agent_id: str
    conversation_uuid: str
    history: list[Msg]
    last_seq: int
    summary: Summary | None = None
    last_used: float = field(default_factory=time.monotonic)


def _covers(summary: Summary | None) -> int:
    return summary.covered_to_seq if summary else 0


def _chars(session: Session) -> int:
    """The text a session holds: its messages' and its summary's characters."""
    held = sum(len(m.content) for m in session.history)
    return held + (len(session.summary.text) if session.summary else 0)


class SessionPool:
    """Bounded LRU with idle expiry; a missing session is simply recreated on demand.

    Bounded by the text its sessions hold as well as by their count: a count alone let
    1,000 sessions of up to 120 messages each hold gigabytes when messages are long (a
    256 KB question, a long answer). A session alone over ``max_chars`` is not kept (its
    next run reads the hot window, as after an eviction)."""

    def __init__(
        self,
        *,
        max_size: int,
        idle_seconds: float,
        max_chars: int = 50_000_000,
        clock=time.monotonic,
    ) -> None:
        self.max_size = max_size
        self.max_chars = max_chars
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._held: dict[str, int] = {}  # characters per session, summed in ``chars``
        self.chars = 0
        # Told of every explicit drop (regenerate, delete, an answer not stored): an acp
        # agent's live process holds that context too.
        self.on_drop: list[Callable[[str, str], None]] = []

    @staticmethod
    def key(agent_id: str, conversation_uuid: str) -> str:
        return f"{agent_id}:{conversation_uuid}"

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, agent_id: str, conversation_uuid: str) -> Session | None:
        key = self.key(agent_id, conversation_uuid)
        session = self._sessions.get(key)
        if session is None:
            return None
        if self._clock() - session.last_used > self.idle_seconds:
            self._remove(key)
            return None
        self._sessions.move_to_end(key)
        return session

    def set_summary(self, agent_id: str, conversation_uuid: str, summary: Summary) -> None:
        """A newer summary for a warm session (written after its last run ended)."""
        key = self.key(agent_id, conversation_uuid)
        session = self._sessions.get(key)
        if session is not None:
            session.summary = summary
            chars = _chars(session)
            self.chars += chars - self._held[key]
            self._held[key] = chars
            self._shrink()

    def put(self, session: Session) -> None:
        """Install ``session``, keeping the newer summary of the one it replaces (one that
        landed while its run went on)."""
        session.last_used = self._clock()
        key = self.key(session.agent_id, session.conversation_uuid)
        old = self._sessions.get(key)
        if old is not None and _covers(old.summary) > _covers(session.summary):
            session.summary = old.summary
        self._remove(key)
        chars = _chars(session)
        if chars > self.max_chars:
            return  # alone over the budget: the next run reads its context instead
        self._sessions[key] = session
        self._held[key] = chars
        self.chars += chars
        self._shrink()

    def drop(self, agent_id: str, conversation_uuid: str) -> None:
        self._remove(self.key(agent_id, conversation_uuid))
        for dropped in self.on_drop:
            dropped(agent_id, conversation_uuid)

    def clear(self) -> None:
        self._sessions.clear()
        self._held.clear()
        self.chars = 0

    def _shrink(self) -> None:
        """Drop the least recently used until both bounds hold."""
        while len(self._sessions) > self.max_size or self.chars > self.max_chars:
            self._remove(next(iter(self._sessions)))

    def _remove(self, key: str) -> None:
        if self._sessions.pop(key, None) is not None:
            self.chars -= self._held.pop(key)
