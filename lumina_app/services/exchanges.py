"""Exchanges an agent had elsewhere (a coding agent's session, a LangChain app), kept in a
Lumina conversation without running a model: stored through the same write path as the
Conversations API's items (SQL, then the hot window, then the archive mirror and recall's
embedder), and handed to long-term memory extraction as a run's turn would be."""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.agents.after_run.memory_extractor import MemoryExtractor, Turn
from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    InvalidInput,
    Msg,
    MsgRole,
    Principal,
)
from lumina_app.domain.transcript import Line
from lumina_app.memory import MemoryManager
from lumina_app.services.conversations import ConversationService
from lumina_app.services.input_caps import InputCaps
from lumina_app.services.openai_gateway import history_rows
from lumina_app.services.runs import RunService

TITLE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Logged:
    conversation: ConversationInfo
    messages: list[Msg]


@dataclass(eq=False, repr=False)
class ExchangeLog:
    memory: MemoryManager
    conversations: ConversationService
    runs: RunService
    extractor: MemoryExtractor | None
    caps: InputCaps  # the gateway's: one set of caps for every door

    async def append(
        self,
        principal: Principal,
        *,
        agent_id: str,
        lines: list[Line],
        conversation_uuid: str | None = None,
    ) -> Logged:
        """Store ``lines`` (user/assistant) at the end of the caller's conversation, or of
        a new one with ``agent_id``; each question and the answer after it are a turn."""
        self.caps.check(lines)
        agent = self.conversations.agents.definition(agent_id)  # unknown agent: not found
        if conversation_uuid:
            conversation = await self.conversations.get(principal, conversation_uuid)
            if conversation.agent_id != agent.id:
                raise InvalidInput(
                    f"conversation {conversation.uuid} is with agent {conversation.agent_id!r}, "
                    f"not {agent.id!r}"
                )
            running = await self.runs.running_in(principal, conversation.uuid)
            if running is not None:  # its answer's seq is already taken
                raise ConversationBusy(conversation.uuid, running)
        else:
            first = next((line.text for line in lines if line.role == "user"), "")
            conversation = await self.conversations.create(
                principal, agent_id=agent.id, title=first[:TITLE_CHARS]
            )
        saved = await self.memory.append_history(conversation, history_rows(lines))
        self._extract(principal, conversation, saved)
        return Logged(conversation, saved)

    def _extract(
        self, principal: Principal, conversation: ConversationInfo, saved: list[Msg]
    ) -> None:
        """Each stored question with its answer goes to the extractor, as after a run."""
        if self.extractor is None or conversation.temporary:
            return
        agent = self.conversations.agents.definition(conversation.agent_id)
        if agent.memory.long_term is None:
            return
        for index, msg in enumerate(saved):
            if msg.role is not MsgRole.USER or not msg.content.strip():
                continue
            answer = next((m.content for m in saved[index + 1 :] if m.turn_id == msg.turn_id), "")
            self.extractor.after_turn(
                Turn(agent, principal.owner, conversation.uuid, msg.seq, msg.content, answer)
            )
