"""The OpenAI-compatible gateway's service: which conversation a chat-completions request
continues, what of it is new, and the client's system prompt; then the run starts on the
same path as every other route (``RunService.start_run``).

A request names its conversation (header or ``metadata.conversation_id``): only its last
user message is new, the context comes from Lumina's memory. Without one, the request's
earlier messages are matched against what a client could have seen of the owner's
conversations of that agent (``domain/transcript.py``): the longest one they continue is
continued, and what the request has beyond it is stored first; with none, a new
conversation is made of them. So a client that re-sends its whole history each time keeps
one conversation and no row is stored twice.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import KW_ONLY, dataclass
from enum import StrEnum
from typing import Any

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.run import client_tools
from lumina_app.agents.run.engine import title_from
from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    InvalidInput,
    Msg,
    Principal,
    new_turn_id,
)
from lumina_app.domain.ids import parse_conversation_uuid
from lumina_app.domain.text import check_storable_text
from lumina_app.domain.transcript import Line, longest_prefix, opening_hash, visible
from lumina_app.memory import MemoryManager
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.gateway_history import GatewayHistory
from lumina_app.services.agents import AgentService, AgentView
from lumina_app.services.gateway_files import Attached, GatewayFiles, InlineFile
from lumina_app.services.input_caps import InputCaps
from lumina_app.services.runs import RunService

MATCH_CANDIDATES = 20  # conversations that opened alike, newest first, compared per request


class SystemPrompt(StrEnum):
    """What became of a client's ``system`` message (the ``X-Lumina-System-Prompt`` header)."""

    APPLIED = "applied"  # the agent allows it: it replaced the agent's prompt
    IGNORED = "ignored"  # the agent does not: kept as conversation meta, not used
    NONE = "none"  # none was sent, and none is on record


class Found(StrEnum):
    """How a request's conversation was found (a metric's label)."""

    NAMED = "named"  # by the header or metadata.conversation_id
    KEYED = "keyed"  # by the client's session key (Responses: prompt_cache_key, session-id)
    MATCHED = "matched"  # its earlier messages continue a stored conversation
    CREATED = "created"  # a new conversation holding its earlier messages
    NEW = "new"  # a first message: a new conversation


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """A chat-completions request in Lumina's terms: the agent, the messages
    (``system`` / ``user`` / ``assistant`` lines) and the conversation it names, if any."""

    agent_id: str
    messages: list[Line]
    conversation_uuid: str | None = None
    session_key: str | None = None  # a client's id for its conversation, recorded on it
    files: tuple[InlineFile, ...] = ()  # the question's: stored and attached to it
    linked_images: tuple[dict[str, Any], ...] = ()  # http(s) image parts: this run only


@dataclass(frozen=True, slots=True)
class GatewayRun:
    run: ActiveRun
    system_prompt: SystemPrompt
    found: Found

    @property
    def conversation_uuid(self) -> str:
        return self.run.conversation.uuid


@dataclass(eq=False, repr=False)
class OpenAIGateway:
    agents: AgentService
    runs: RunService
    memory: MemoryManager
    lookup: ConversationLookup
    history: GatewayHistory
    _: KW_ONLY
    caps: InputCaps | None = None  # shared with the Responses and Conversations doors
    files: GatewayFiles | None = None  # files and images on a question (#48)

    def __post_init__(self) -> None:
        self.caps = self.caps or InputCaps()

    def models(self) -> list[tuple[AgentView, int]]:
        """The agents a client may name as ``model`` (the available ones), each with when
        its definition last changed (the model's ``created``)."""
        found = []
        for view in self.agents.list():
            if view.available:
                folder = self.agents.definition(view.id).folder
                config = folder / "config.json" if folder else None
                created = int(config.stat().st_mtime) if config and config.exists() else 0
                found.append((view, created))
        return found

    async def start_completion(self, principal: Principal, turn: ChatTurn) -> GatewayRun:
        """Store the question's files (refused before anything else is stored), find or
        make the conversation, store what it lacks, start the run with the files; the
        files this request uploaded go again if the run does not start."""
        agent = self.agents.definition(turn.agent_id)
        self.caps.check(turn.messages)
        system, dialogue = _split(turn.messages)
        if system is not None:
            check_storable_text(system, "system message")
        if turn.linked_images and self.files is not None:
            self.files.check_images(agent.id, "image_url")
        attached = Attached()
        if turn.files:
            if self.files is None:
                raise InvalidInput("files cannot be stored here")
            attached = await self.files.store(principal, agent.id, turn.files)
        try:
            shown = client_tools.offered((), None, turn.linked_images)
            with shown if turn.linked_images else contextlib.nullcontext():
                return await self._start_completion(
                    principal, turn, agent, system, dialogue, attached.ids
                )
        except Exception:  # not on a cancel: the question may have been stored with them
            if self.files is not None:
                await self.files.discard(principal, attached.uploaded)
            raise

    async def _start_completion(
        self,
        principal: Principal,
        turn: ChatTurn,
        agent: AgentDefinition,
        system: str | None,
        dialogue: list[Line],
        files: tuple[str, ...],
    ) -> GatewayRun:
        question = dialogue[-1].text
        earlier = dialogue[:-1]
        conversation: ConversationInfo | None = None
        found = Found.NEW
        key = session_hash(turn.session_key) if turn.session_key else None
        if turn.conversation_uuid is not None:
            conversation = await self.lookup.find_visible(
                principal, parse_conversation_uuid(turn.conversation_uuid), agent_id=agent.id
            )
            found = Found.NAMED
        elif key is not None:
            conversation = await self._keyed(principal, agent.id, key, earlier)
            found = Found.KEYED
        if conversation is None and earlier:
            conversation, found = await self._continued(principal, agent.id, earlier, question)
        elif conversation is None:
            found = Found.NEW
        meta = await self.history.gateway_meta(conversation) if conversation else {}
        if key is not None and meta.get("sessionKey") != key:
            meta = {**meta, "sessionKey": key}
            if conversation is not None:
                await self.history.set_gateway_meta(conversation, opening=None, meta=meta)
        if system is not None and meta.get("systemPrompt") != system:
            meta = {**meta, "systemPrompt": system}
            if conversation is not None:
                await self.history.set_gateway_meta(conversation, opening=None, meta=meta)
        prompt = meta.get("systemPrompt") if agent.allow_client_system_prompt else None
        run = await self.runs.start_run(
            principal,
            agent_id=agent.id,
            message=question,
            conversation_uuid=conversation.uuid if conversation else None,
            system_prompt=prompt,
            files=files,
        )
        if conversation is None:  # made by the run: index it for the next request
            await self.history.set_gateway_meta(
                run.conversation, opening=opening_hash(question), meta=meta
            )
        if prompt is not None:
            outcome = SystemPrompt.APPLIED
        elif meta.get("systemPrompt") is not None:
            outcome = SystemPrompt.IGNORED
        else:
            outcome = SystemPrompt.NONE
        return GatewayRun(run, outcome, found)

    async def locate(
        self, principal: Principal, agent_id: str, lines: list[Line], session_key: str | None
    ) -> ConversationInfo:
        """The conversation a history with no new question belongs to (a compaction's):
        the session key's, else the one it continues, with what it lacks stored; else a
        new one holding it."""
        agent = self.agents.definition(agent_id)
        self.caps.check(lines, field="input")
        dialogue = [line for line in lines if line.role != "system"]
        key = session_hash(session_key) if session_key else None
        if key is not None:
            keyed = await self._keyed(principal, agent.id, key, dialogue)
            if keyed is not None:
                return keyed
        first = next((line.text for line in dialogue if line.role == "user"), None)
        if first is None:
            raise InvalidInput("input: no user message to find or start a conversation by")
        conversation, _found = await self._continued(principal, agent.id, dialogue, first)
        if key is not None:
            meta = await self.history.gateway_meta(conversation)
            await self.history.set_gateway_meta(
                conversation, opening=None, meta={**meta, "sessionKey": key}
            )
        return conversation

    async def _keyed(
        self, principal: Principal, agent_id: str, key: str, earlier: list[Line]
    ) -> ConversationInfo | None:
        """The conversation the session key was recorded on, with what of ``earlier`` it
        lacks stored (nothing if the client's history went another way: Lumina's memory
        stands); None for a new key."""
        found = await self.history.by_session_key(
            owner=principal.owner, agent_id=agent_id, key_hash=key
        )
        if found is None:
            return None
        uuid, rows = found
        conversation = await self.lookup.find_visible(principal, uuid, agent_id=agent_id)
        seen = visible(rows)
        rest = earlier[len(seen) :] if earlier[: len(seen)] == seen else []
        return await self._store(principal, conversation, rest)

    async def _store(
        self, principal: Principal, conversation: ConversationInfo, rest: list[Line]
    ) -> ConversationInfo:
        """``rest`` appended as history (never beside a running turn: its answer's seq is
        already taken); the conversation as it is then."""
        if not rest:
            return conversation
        running = await self.runs.running_in(principal, conversation.uuid)
        if running is not None:
            raise ConversationBusy(conversation.uuid, running)
        await self.memory.append_history(conversation, history_rows(rest))
        return await self.lookup.find_visible(principal, conversation.uuid)

    async def _continued(
        self, principal: Principal, agent_id: str, earlier: list[Line], question: str
    ) -> tuple[ConversationInfo, Found]:
        """The conversation ``earlier`` continues, with what it lacked stored; else a new
        one holding ``earlier``."""
        # What a conversation opened with; a history that starts with the assistant (a
        # greeting) and has no question yet opens with this request's.
        first = next((line.text for line in earlier if line.role == "user"), question)
        opening = opening_hash(first)
        found = await self.history.opened_with(
            owner=principal.owner, agent_id=agent_id, opening=opening, limit=MATCH_CANDIDATES
        )
        best = longest_prefix({uuid: visible(rows) for uuid, rows in found.items()}, earlier)
        if best is not None:
            uuid, size = best
            conversation = await self.lookup.find_visible(principal, uuid, agent_id=agent_id)
            rest, found = earlier[size:], Found.MATCHED
        else:
            conversation = await self.memory.create_conversation(
                agent_id=agent_id, title=title_from(first), owner=principal.owner
            )
            await self.history.set_gateway_meta(conversation, opening=opening, meta={})
            rest, found = earlier, Found.CREATED
        return await self._store(principal, conversation, rest), found


def session_hash(key: str) -> str:
    """What a session key is recorded as: never the key itself."""
    return hashlib.sha256(("session:" + key).encode()).hexdigest()


def _split(messages: list[Line]) -> tuple[str | None, list[Line]]:
    """The system text (all system messages, joined) and the dialogue, which must end
    with a user message: that is the new input (which may be files alone)."""
    system = [m.text for m in messages if m.role == "system"]
    dialogue = [m for m in messages if m.role != "system"]
    if not dialogue or dialogue[-1].role != "user":
        raise InvalidInput("messages: the last message must be a user message")
    if not dialogue[-1].text.strip() and not dialogue[-1].files:
        raise InvalidInput("messages: the last user message is empty")
    return ("\n\n".join(system) if system else None), dialogue


def history_rows(lines: list[Line]) -> list[Msg]:
    """Stored rows for history a client brought: a question and the answer after it share
    a turn id, as in a run."""
    rows: list[Msg] = []
    turn = new_turn_id()
    meta: dict[str, Any] = {"source": "gateway"}
    for line in lines:
        if line.role == "user":
            turn = new_turn_id()
            rows.append(Msg.user(line.text, turn_id=turn, meta=dict(meta)))
        elif line.role == "system":  # a system or developer item: a system line, kept as one
            rows.append(Msg.system(line.text, turn_id=turn, meta=dict(meta)))
        else:
            rows.append(Msg.assistant(line.text, turn_id=turn, meta=dict(meta)))
    return rows
