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


class SessionPool:
    """Bounded LRU with idle expiry; a missing session is simply recreated on demand."""

    def __init__(self, *, max_size: int, idle_seconds: float, clock=time.monotonic) -> None:
        self.max_size = max_size
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()
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
            del self._sessions[key]
            return None
        self._sessions.move_to_end(key)
        return session

    def set_summary(self, agent_id: str, conversation_uuid: str, summary: Summary) -> None:
        """A newer summary for a warm session (written after its last run ended)."""
        session = self._sessions.get(self.key(agent_id, conversation_uuid))
        if session is not None:
            session.summary = summary

    def put(self, session: Session) -> None:
        """Install ``session``, keeping the newer summary of the one it replaces (one that
        landed while its run went on)."""
        session.last_used = self._clock()
        key = self.key(session.agent_id, session.conversation_uuid)
        old = self._sessions.get(key)
        if old is not None and _covers(old.summary) > _covers(session.summary):
            session.summary = old.summary
        self._sessions[key] = session
        self._sessions.move_to_end(key)
        while len(self._sessions) > self.max_size:
            self._sessions.popitem(last=False)

    def drop(self, agent_id: str, conversation_uuid: str) -> None:
        self._sessions.pop(self.key(agent_id, conversation_uuid), None)
        for dropped in self.on_drop:
            dropped(agent_id, conversation_uuid)

    def clear(self) -> None:
        self._sessions.clear()
