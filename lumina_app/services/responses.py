"""The Responses API's service: which conversation a response continues, and what a stored
response (a run) looks like afterwards. The run starts on the gateway's path
(``OpenAIGateway.start`` → ``RunService.start``), so auth scoping, the one-active-run rule and
history matching are the chat gateway's.

A response names its conversation by ``previous_response_id`` (the conversation of that
run) or ``conversation`` (``conv_<uuid>``): then ``input`` holds only what is new, and the
context comes from Lumina's memory. Naming neither (``store: false`` clients that resend
everything), the conversation is the one the client's session key (``prompt_cache_key``
or the ``session-id`` header) was recorded on, else the one the input continues, matched
like a re-sent chat history; only what it lacks is stored."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    ConversationNotFound,
    InvalidInput,
    Msg,
    NotFound,
    Principal,
    RunFinished,
    RunNotFound,
    RunStatus,
)
from lumina_app.domain.access import is_conversation_id
from lumina_app.domain.tokens import estimate_text
from lumina_app.domain.transcript import Line
from lumina_app.memory import MemoryManager
from lumina_app.memory.run_inspection import RunInspection
from lumina_app.services.openai_gateway import ChatTurn, GatewayRun, OpenAIGateway, history_rows
from lumina_app.services.runs import RunService, RunView

RESPONSE_PREFIX = "resp_"
CONVERSATION_PREFIX = "conv_"
RUN_PREFIX = "run-"


def response_id(run_id: str) -> str:
    """``run-<hex>`` → ``resp_<hex>``: a stored response is a run."""
    return RESPONSE_PREFIX + run_id.removeprefix(RUN_PREFIX)


def run_id_of(response: str) -> str:
    """The run a response id names; anything else names no response (a plain 404)."""
    if not response.startswith(RESPONSE_PREFIX):
        raise NotFound(f"response {response!r} not found")
    return RUN_PREFIX + response.removeprefix(RESPONSE_PREFIX)


def conversation_id(uuid: str) -> str:
    return CONVERSATION_PREFIX + uuid


def uuid_of(conversation: str) -> str:
    """``conv_<uuid>`` (or the bare uuid) → the Lumina conversation's uuid."""
    uuid = conversation.removeprefix(CONVERSATION_PREFIX)
    if not is_conversation_id(uuid):
        raise ConversationNotFound(conversation)
    return uuid


@dataclass(frozen=True, slots=True)
class ResponseTurn:
    """A ``POST /v1/responses`` in Lumina's terms."""

    agent_id: str
    lines: list[Line]
    previous_response_id: str | None = None
    conversation: str | None = None
    session_key: str | None = None  # prompt_cache_key or the session-id header


@dataclass(frozen=True, slots=True)
class ResponseView:
    """A response as the wire shows it, from a run live or recorded."""

    run_id: str
    conversation_uuid: str
    agent_id: str
    status: RunStatus
    content: str
    message_id: int | None
    created_at: datetime | None
    completed_at: datetime | None
    input_tokens: int
    output_tokens: int
    error: str | None = None
    previous_response_id: str | None = None

    @property
    def id(self) -> str:
        return response_id(self.run_id)


class ResponsesService:
    def __init__(
        self,
        gateway: OpenAIGateway,
        runs: RunService,
        memory: MemoryManager,
        inspection: RunInspection,
    ) -> None:
        self.gateway = gateway
        self.runs = runs
        self.memory = memory
        self.inspection = inspection

    async def start(self, principal: Principal, turn: ResponseTurn) -> GatewayRun:
        """Find the conversation, store the input's earlier items, start the run."""
        named: str | None = None
        if turn.previous_response_id is not None:
            named = await self._conversation_of(principal, turn.previous_response_id)
        if turn.conversation is not None:
            uuid = uuid_of(turn.conversation)
            if named is not None and named != uuid:
                raise InvalidInput(
                    "previous_response_id and conversation name different conversations"
                )
            named = uuid
        if named is None:
            return await self.gateway.start(
                principal, ChatTurn(turn.agent_id, turn.lines, session_key=turn.session_key)
            )
        conversation = await self.memory.find_visible(principal, named)
        if conversation.agent_id != turn.agent_id:
            raise InvalidInput(
                f"model: this conversation is with agent {conversation.agent_id!r}, "
                f"not {turn.agent_id!r}"
            )
        system = [line for line in turn.lines if line.role == "system"]
        dialogue = [line for line in turn.lines if line.role != "system"]
        if not dialogue or dialogue[-1].role != "user":
            raise InvalidInput("input: the last item must be a user message")
        if dialogue[:-1]:
            await self._append(principal, conversation, dialogue[:-1])
        return await self.gateway.start(
            principal, ChatTurn(turn.agent_id, [*system, dialogue[-1]], conversation.uuid)
        )

    async def _append(
        self, principal: Principal, conversation: ConversationInfo, lines: list[Line]
    ) -> None:
        running = await self.runs.running_in(principal, conversation.uuid)
        if running is not None:
            raise ConversationBusy(conversation.uuid, running)
        await self.memory.append_history(conversation, history_rows(lines))

    async def _conversation_of(self, principal: Principal, response: str) -> str:
        try:
            return await self.runs.conversation_of(principal, run_id_of(response))
        except RunNotFound:
            raise NotFound(f"response {response!r} not found") from None

    async def _status(self, principal: Principal, response: str) -> RunView:
        try:
            return await self.runs.status(principal, run_id_of(response))
        except RunNotFound:
            raise NotFound(f"response {response!r} not found") from None

    @staticmethod
    def finished(started: GatewayRun, result: RunFinished, previous: str | None) -> ResponseView:
        """The view of a run this process just ran to its end."""
        record = started.run.record
        return ResponseView(
            run_id=started.run.run_id,
            conversation_uuid=started.conversation_id,
            agent_id=record.agent_id,
            status=result.status,
            content=result.content,
            message_id=result.message_id,
            created_at=record.started_at,
            completed_at=None,
            input_tokens=result.usage.get("promptTokens")
            or (record.context or {}).get("tokens", 0),
            output_tokens=result.usage.get("completionTokens") or estimate_text(result.content),
            error=result.error if result.status is not RunStatus.COMPLETE else None,
            previous_response_id=previous,
        )

    async def get(self, principal: Principal, response: str) -> ResponseView:
        """A stored response (another owner's is not found)."""
        view = await self._status(principal, response)
        record = await self.runs.records.get_run(view.run_id, owner=principal.owner)
        tokens = (record.context or {}).get("tokens", 0) if record else 0
        content = view.content or ""
        return ResponseView(
            run_id=view.run_id,
            conversation_uuid=view.conversation_id,
            agent_id=view.agent_id,
            status=view.status,
            content=content,
            message_id=view.message_id,
            created_at=view.started_at,
            completed_at=view.finished_at,
            input_tokens=tokens,
            output_tokens=estimate_text(content),
            error=view.error,
        )

    async def cancel(self, principal: Principal, response: str) -> ResponseView:
        """Stop a running response (its answer ends ``stopped``); an ended one is left."""
        await self.runs.stop(principal, run_id_of(response))
        return await self.get(principal, response)

    async def delete(self, principal: Principal, response: str) -> None:
        """Forget a stored response (the run's record); its messages stay in the
        conversation, which is the memory."""
        try:
            await self.runs.forget(principal, run_id_of(response))
        except RunNotFound:
            raise NotFound(f"response {response!r} not found") from None

    async def input_items(self, principal: Principal, response: str) -> list[Msg]:
        """What the response was asked: its question row."""
        run_id = (await self._status(principal, response)).run_id
        record = await self.runs.records.get_run(run_id, owner=principal.owner)
        if record is None or record.user_message_id is None:
            return []
        question = await self.inspection.get_message(record.user_message_id)
        return [question] if question is not None else []
