"""The Responses API's service: which conversation a response continues, and what a stored
response (a run) looks like afterwards. The run starts on the gateway's path
(``OpenAIGateway.start_completion`` → ``RunService.start_run``), so auth scoping, the
one-active-run rule and history matching are the chat gateway's.

A response names its conversation by ``previous_response_id`` (the conversation of that
run) or ``conversation`` (``conv_<uuid>``): then ``input`` holds only what is new, and the
context comes from Lumina's memory. Naming neither (``store: false`` clients that resend
everything), the conversation is the one the client's session key (``prompt_cache_key``
or the ``session-id`` header) was recorded on, else the one the input continues, matched
like a re-sent chat history; only what it lacks is stored.

Client function tools (``tools``) are offered to the model for the run; a call of one ends
the response with a ``function_call`` item, pending in the conversation (the answer row's
``toolCalls``, marked ``client``). A request whose input ends with ``function_call_output``
items for every pending call stores them as the calls' TOOL rows and goes on with that
turn (``RunService.continue_turn``) — no user message needed."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lumina_app.agents.run import client_tools
from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    InputTooLarge,
    InvalidInput,
    Msg,
    MsgRole,
    NotFound,
    Principal,
    RunFinished,
    RunNotFound,
    RunStatus,
)
from lumina_app.domain.ids import ConversationUuid, parse_conversation_uuid
from lumina_app.domain.tokens import estimate_text
from lumina_app.domain.transcript import Line, longest_prefix, opening_hash, visible
from lumina_app.memory import MemoryManager
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.memory.run_inspection import RunInspection
from lumina_app.services.gateway_files import ImagesRefused, InlineFile
from lumina_app.services.openai_gateway import (
    MATCH_CANDIDATES,
    ChatTurn,
    Found,
    GatewayRun,
    OpenAIGateway,
    SystemPrompt,
    history_rows,
    session_hash,
)
from lumina_app.services.runs import RunService, RunView

RESPONSE_PREFIX = "resp_"
CONVERSATION_PREFIX = "conv_"
RUN_PREFIX = "run-"
COMPACTION_PREFIX = "lumina-compaction."


def response_id(run_id: str) -> str:
    """``run-<hex>`` → ``resp_<hex>``: a stored response is a run."""
    return RESPONSE_PREFIX + run_id.removeprefix(RUN_PREFIX)


def run_id_of(response: str) -> str:
    """The run a response id names; anything else names no response (a plain 404)."""
    if not response.startswith(RESPONSE_PREFIX):
        raise NotFound(f"response {response!r} not found")
    return RUN_PREFIX + response.removeprefix(RESPONSE_PREFIX)


@contextmanager
def _the_run_of(response: str) -> Iterator[str]:
    """The run a response id names, for a call on it: its run not found (another owner's,
    deleted, never made) is the response not found."""
    try:
        yield run_id_of(response)
    except RunNotFound:
        raise NotFound(f"response {response!r} not found") from None


def compaction_handle(uuid: str) -> str:
    """A compaction item's ``encrypted_content``: opaque to the client, a handle to the
    conversation to Lumina (whose owner check every use goes through)."""
    raw = json.dumps({"conversation": uuid}).encode()
    return COMPACTION_PREFIX + base64.urlsafe_b64encode(raw).decode()


def compacted_conversation(handle: str) -> ConversationUuid:
    """The conversation a compaction handle names."""
    try:
        raw = base64.urlsafe_b64decode(handle.removeprefix(COMPACTION_PREFIX).encode())
        uuid = json.loads(raw)["conversation"]
    except (ValueError, TypeError, KeyError):
        uuid = None
    if not handle.startswith(COMPACTION_PREFIX) or not isinstance(uuid, str):
        raise InvalidInput("compaction: encrypted_content is not a compaction of this server")
    return parse_conversation_uuid(uuid)


def conversation_id(uuid: str) -> str:
    return CONVERSATION_PREFIX + uuid


def uuid_of(conversation: str) -> ConversationUuid:
    """``conv_<uuid>`` (or the bare uuid) → the Lumina conversation's uuid."""
    return parse_conversation_uuid(
        conversation.removeprefix(CONVERSATION_PREFIX), named=conversation
    )


@dataclass(frozen=True, slots=True)
class ResponseTurn:
    """A ``POST /v1/responses`` in Lumina's terms."""

    agent_id: str
    lines: list[Line]
    previous_response_id: str | None = None
    conversation: str | None = None
    session_key: str | None = None  # prompt_cache_key or the session-id header
    outputs: tuple[tuple[str, str], ...] = ()  # (call_id, output): the trailing outputs
    tools: tuple[dict[str, Any], ...] = ()  # the client's function tools (chat specs)
    compaction: str | None = None  # a compaction item's handle: names the conversation
    images: tuple[dict[str, Any], ...] = ()  # the question's http(s) images: this run only
    image_count: int = 0  # images anywhere in the input
    files: tuple[InlineFile, ...] = ()  # the question's images and files: stored, attached


@dataclass(frozen=True, slots=True)
class ClientCall:
    """A call of a client's function tool the model made (a ``function_call`` item)."""

    call_id: str
    name: str
    arguments: str


def client_calls(answer: Msg | None) -> tuple[ClientCall, ...]:
    """The calls of the client's tools an answer row asked for."""
    calls = answer.tool_calls if answer is not None else []
    return tuple(
        ClientCall(str(c.get("id")), str(c.get("name")), str(c.get("arguments") or ""))
        for c in calls
        if c.get("client")
    )


@dataclass(frozen=True, slots=True)
class ResponseView:
    """A response as the wire shows it, from a run live or recorded."""

    run_id: str
    conversation_uuid: str
    agent_id: str
    status: RunStatus
    created_at: datetime | None
    content: str = ""  # none yet: an opening response, or one answered without a run
    message_id: int | None = None
    completed_at: datetime | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    previous_response_id: str | None = None
    calls: tuple[ClientCall, ...] = ()  # the client's tools the model called
    reasoning: str = ""  # the model's thoughts before its answer

    @property
    def id(self) -> str:
        return response_id(self.run_id)


@dataclass(frozen=True, slots=True)
class ImageLimits:
    """What image input may be: the default provider (whose kind an agent without its
    own ``provider`` has), images per request, characters per ``image_url``."""

    default_provider: str = "demo"
    max_images: int = 8
    max_chars: int = 200_000


@dataclass(eq=False, repr=False)
class ResponsesService:
    gateway: OpenAIGateway
    runs: RunService
    memory: MemoryManager
    lookup: ConversationLookup
    inspection: RunInspection
    conversations: ConversationReads
    images: ImageLimits | None = None

    def __post_init__(self) -> None:
        self.images = self.images or ImageLimits()

    async def start_response(self, principal: Principal, turn: ResponseTurn) -> GatewayRun:
        """Find the conversation, store the input's earlier items, start the run (the
        client's function tools offered to the model)."""
        self._check_input(turn)
        previous = turn.previous_response_id
        meta = {"previousResponseId": previous} if previous else None
        if turn.image_count or any(f.kind == "image" for f in turn.files):
            self._check_images(turn)
        with client_tools.offered(turn.tools, meta, turn.images):
            return await self._start_response(principal, turn)

    def _check_input(self, turn: ResponseTurn) -> None:
        """The gateway's caps, whichever way the conversation is found, before anything is
        stored: the messages and the tool outputs, counted and sized alike."""
        outputs = [Line("tool", text) for _call, text in turn.outputs]
        self.gateway.caps.check([*turn.lines, *outputs], field="input")

    def _check_images(self, turn: ResponseTurn) -> None:
        """Images only for an agent whose model takes them (a 400 naming why), within the
        caps (a 413)."""
        agent = self.gateway.agents.definition(turn.agent_id)
        if not agent.takes_images(self.images.default_provider):
            raise ImagesRefused(
                f"input_image: agent {agent.id!r} is text-only (its model is not marked "
                '"vision": true in its config.json); send text only'
            )
        limits = self.images
        if turn.image_count > limits.max_images:
            raise InputTooLarge(f"input_image: at most {limits.max_images} images per request")
        # an http(s) URL is passed on as it is; a data URL is stored, as large as a file
        longest = max((len(part["image_url"]["url"]) for part in turn.images), default=0)
        if longest > limits.max_chars:
            raise InputTooLarge(
                f"input_image: an http(s) image_url may be at most {limits.max_chars} characters"
            )

    async def _named(self, principal: Principal, turn: ResponseTurn) -> str | None:
        """The conversation ``previous_response_id``, ``conversation`` or a compaction
        item names (all that are given must name the same one)."""
        named: str | None = None
        if turn.previous_response_id is not None:
            named = await self._conversation_of(principal, turn.previous_response_id)
        for uuid in (
            uuid_of(turn.conversation) if turn.conversation is not None else None,
            compacted_conversation(turn.compaction) if turn.compaction is not None else None,
        ):
            if uuid is not None and named is not None and named != uuid:
                raise InvalidInput(
                    "previous_response_id, conversation and compaction name different conversations"
                )
            named = uuid or named
        return named

    async def compact(self, principal: Principal, turn: ResponseTurn) -> str:
        """``POST /v1/responses/compact``: the conversation the input is (found or made,
        with what it lacks stored), as a compaction handle; a later input carrying it goes
        on with that conversation without resending what came before."""
        self._check_input(turn)
        named = await self._named(principal, turn)
        if named is None:
            found = await self.gateway.locate(
                principal, turn.agent_id, turn.lines, turn.session_key
            )
            return compaction_handle(found.uuid)
        conversation = await self._with_agent(principal, named, turn.agent_id)
        dialogue = [line for line in turn.lines if line.role != "system"]
        if dialogue:
            await self._append(principal, conversation, dialogue)
        return compaction_handle(conversation.uuid)

    async def _start_response(self, principal: Principal, turn: ResponseTurn) -> GatewayRun:
        named = await self._named(principal, turn)
        if turn.outputs:
            return await self._continue(principal, turn, named)
        if named is None:
            return await self.gateway.start_completion(
                principal,
                ChatTurn(turn.agent_id, turn.lines, session_key=turn.session_key, files=turn.files),
            )
        conversation = await self._with_agent(principal, named, turn.agent_id)
        system = [line for line in turn.lines if line.role == "system"]
        dialogue = [line for line in turn.lines if line.role != "system"]
        if not dialogue or dialogue[-1].role != "user":
            raise InvalidInput("input: the last item must be a user message")
        if dialogue[:-1]:
            await self._append(principal, conversation, dialogue[:-1])
        return await self.gateway.start_completion(
            principal,
            ChatTurn(turn.agent_id, [*system, dialogue[-1]], conversation.uuid, files=turn.files),
        )

    async def _continue(
        self, principal: Principal, turn: ResponseTurn, named: str | None
    ) -> GatewayRun:
        """Go on with the turn whose calls ``turn.outputs`` answer: every pending call of
        the client's gets its output (resent outputs of earlier calls are left), stored as
        its TOOL row, and the model goes on from there."""
        found = Found.NAMED
        if named is None:
            named, found = await self._unnamed(principal, turn)
        conversation = await self._with_agent(principal, named, turn.agent_id)
        rows = await self.conversations.history(
            conversation, limit=200, before_seq=conversation.last_seq + 1
        )
        answered = {row.tool_call_id for row in rows if row.role is MsgRole.TOOL}
        # Only the newest answer's calls are pending: a client that asked something new
        # instead left the older ones unanswered for good.
        asker = next((row for row in reversed(rows) if row.role is MsgRole.ASSISTANT), None)
        pending = {c.call_id: c for c in client_calls(asker) if c.call_id not in answered}
        given = {call_id: text for call_id, text in turn.outputs if call_id not in answered}
        unknown = sorted(set(given) - set(pending))
        if unknown:
            raise InvalidInput(f"function_call_output: no pending call {unknown[0]!r}")
        missing = sorted(set(pending) - set(given))
        if missing or not pending:
            raise InvalidInput(
                f"function_call_output: the output of call {missing[0]!r} is missing"
                if missing
                else "function_call_output: this conversation has no pending call"
            )
        turn_id = asker.turn_id if asker is not None else None
        outputs = [
            Msg.tool(
                given[call.call_id],
                call_id=call.call_id,
                name=call.name,
                turn_id=turn_id,
                meta={"source": "client"},
            )
            for call in pending.values()
        ]
        meta = await self.gateway.history.gateway_meta(conversation)
        agent = self.gateway.agents.definition(conversation.agent_id)
        prompt = meta.get("systemPrompt") if agent.allow_client_system_prompt else None
        run = await self.runs.continue_turn(principal, conversation.uuid, outputs, prompt)
        shown = SystemPrompt.APPLIED if prompt is not None else SystemPrompt.NONE
        return GatewayRun(run, shown, found)

    async def _unnamed(self, principal: Principal, turn: ResponseTurn) -> tuple[str, Found]:
        """The conversation a request naming none goes on with: its session key's, else
        the one its messages continue."""
        if turn.session_key:
            keyed = await self.gateway.history.by_session_key(
                owner=principal.owner,
                agent_id=turn.agent_id,
                key_hash=session_hash(turn.session_key),
            )
            if keyed is not None:
                return keyed[0], Found.KEYED
        dialogue = [line for line in turn.lines if line.role != "system"]
        first = next((line.text for line in dialogue if line.role == "user"), None)
        if first is not None:
            candidates = await self.gateway.history.opened_with(
                owner=principal.owner,
                agent_id=turn.agent_id,
                opening=opening_hash(first),
                limit=MATCH_CANDIDATES,
            )
            # The answer that only called the tools is empty: no line (as in the input).
            stored = {
                uuid: [line for line in visible(rows) if line.role != "assistant" or line.text]
                for uuid, rows in candidates.items()
            }
            best = longest_prefix(stored, dialogue)
            if best is not None:
                return best[0], Found.MATCHED
        raise InvalidInput(
            "function_call_output: no conversation of yours has these calls pending "
            "(name it with previous_response_id or conversation)"
        )

    async def _with_agent(self, principal: Principal, uuid: str, agent_id: str) -> ConversationInfo:
        """The named conversation, which must be with the agent ``model`` names."""
        conversation = await self.lookup.find_visible(principal, uuid)
        if conversation.agent_id != agent_id:
            raise InvalidInput(
                f"model: this conversation is with agent {conversation.agent_id!r}, "
                f"not {agent_id!r}"
            )
        return conversation

    async def _append(
        self, principal: Principal, conversation: ConversationInfo, lines: list[Line]
    ) -> None:
        running = await self.runs.running_in(principal, conversation.uuid)
        if running is not None:
            raise ConversationBusy(conversation.uuid, running)
        await self.memory.append_history(conversation, history_rows(lines))

    async def _conversation_of(self, principal: Principal, response: str) -> str:
        with _the_run_of(response) as run_id:
            return await self.runs.conversation_of(principal, run_id)

    async def _status(self, principal: Principal, response: str) -> RunView:
        with _the_run_of(response) as run_id:
            return await self.runs.status(principal, run_id)

    @staticmethod
    def finished(started: GatewayRun, result: RunFinished, previous: str | None) -> ResponseView:
        """The view of a run this process just ran to its end."""
        record = started.run.record
        return ResponseView(
            run_id=started.run.run_id,
            conversation_uuid=started.conversation_uuid,
            agent_id=record.agent_id,
            status=result.status,
            content=result.content,
            message_id=result.message_id,
            created_at=record.started_at,
            input_tokens=result.usage.get("promptTokens")
            or (record.context or {}).get("tokens", 0),
            output_tokens=result.usage.get("completionTokens") or estimate_text(result.content),
            error=result.error if result.status is not RunStatus.COMPLETE else None,
            previous_response_id=previous,
            calls=tuple(
                ClientCall(c.call_id, c.name, c.arguments)
                for c in (started.run.step.client_calls if started.run.step else [])
            ),
            reasoning="".join(started.run.step.thinking) if started.run.step else "",
        )

    async def get(self, principal: Principal, response: str) -> ResponseView:
        """A stored response (another owner's is not found)."""
        view = await self._status(principal, response)
        record = await self.runs.records.get_run(view.run_id, owner=principal.owner)
        tokens = (record.context or {}).get("tokens", 0) if record else 0
        content = view.content or ""
        answer = await self.inspection.get_message(view.message_id) if view.message_id else None
        return ResponseView(
            run_id=view.run_id,
            conversation_uuid=view.conversation_uuid,
            agent_id=view.agent_id,
            status=view.status,
            content=content,
            message_id=view.message_id,
            created_at=view.started_at,
            completed_at=view.finished_at,
            input_tokens=tokens,
            output_tokens=estimate_text(content),
            error=view.error,
            previous_response_id=answer.meta.get("previousResponseId") if answer else None,
            calls=client_calls(answer),
            reasoning=str(answer.meta.get("thinking") or "") if answer else "",
        )

    async def cancel(self, principal: Principal, response: str) -> ResponseView:
        """Stop a running response (its answer ends ``stopped``); an ended one is left."""
        with _the_run_of(response) as run_id:
            await self.runs.stop(principal, run_id)
        return await self.get(principal, response)

    async def delete(self, principal: Principal, response: str) -> None:
        """Forget a stored response (the run's record); its messages stay in the
        conversation, which is the memory."""
        with _the_run_of(response) as run_id:
            await self.runs.forget(principal, run_id)

    async def input_items(self, principal: Principal, response: str) -> list[Msg]:
        """What the response was asked: its question, or for a turn it went on with, the
        outputs of the client's tools it was given (the TOOL rows just before its answer)."""
        run_id = (await self._status(principal, response)).run_id
        record = await self.runs.records.get_run(run_id, owner=principal.owner)
        if record is None or record.user_message_id is None:
            return []
        question = await self.inspection.get_message(record.user_message_id)
        if question is None:
            return []
        last = record.assistant_message_id
        answer = await self.inspection.get_message(last) if last is not None else None
        if answer is None:
            return [question]
        rows = await self.inspection.turn_rows(record.conversation_pk, question.seq, answer.seq)
        ours = next((i for i, m in enumerate(rows) if m.meta.get("runId") == run_id), len(rows))
        given: list[Msg] = []
        for row in reversed(rows[:ours]):
            if row.role is not MsgRole.TOOL:
                break
            given.insert(0, row)
        return given or [question]
