"""Runs as a caller sees them: start one, follow its events (from any event id), stop it,
read its status. A run is someone's: another owner's run id is simply not found."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lumina_app.agents.run.attachments import Attached, FileSent, load
from lumina_app.agents.run.context import chat_message, render
from lumina_app.agents.run.engine import ChatEngine
from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.agents.tools.auto_recall import Elsewhere, recalled_message
from lumina_app.domain import (
    ConversationBusy,
    InvalidInput,
    MessageStatus,
    Msg,
    MsgRole,
    NotFound,
    Principal,
    RunEvent,
    RunFinished,
    RunNotFound,
    RunRecord,
    RunStatus,
    Scenario,
    Summary,
)
from lumina_app.domain.access import is_run_id
from lumina_app.domain.ids import ConversationPk, parse_conversation_uuid
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.long_term import context_message
from lumina_app.memory.run_inspection import RunInspection
from lumina_app.services.attachments import Attachments
from lumina_app.services.live import LiveHub, Notice
from lumina_app.services.titles import Titles
from lumina_app.storage.run_records import RunRecords

# Rows after a question that no later call of the model was sent.
_NOT_SENT = (MessageStatus.SUPERSEDED, MessageStatus.STREAMING, MessageStatus.FAILED)


@dataclass(frozen=True, slots=True)
class RunView:
    """A run's state: live from this process, or as recorded once it ended elsewhere."""

    run_id: str
    conversation_uuid: str
    agent_id: str
    status: RunStatus
    scenario: Scenario
    model: str
    message_id: int | None
    turn_id: str | None
    content: str | None = None
    error: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    trimmed: int = 0


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a run's model was given, rebuilt from what the context was made of."""

    run_id: str
    scenario: Scenario
    model: str
    prompt_hash: str
    summary: Summary | None
    window: tuple[int | None, int | None]
    # The messages from before the window no summary covered yet, sent verbatim: their
    # first and last seq and how many (None when there were none).
    earlier: tuple[int, int, int] | None
    trimmed: int
    tokens: int
    messages: list[dict[str, Any]]
    # How many of ``messages`` each model call was sent, in order: a run that used tools
    # called the model again with the calls and their results appended.
    calls: list[int]
    # The long-term memories put in ("What you know about this person"), by id.
    memories: list[int] = dataclasses.field(default_factory=list)
    # The messages auto-recall put in, and where each was said.
    recalled: list[RecalledFrom] = dataclasses.field(default_factory=list)
    # What of each file of the context's questions was sent (``FileSent.view``).
    files: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RecalledFrom:
    """A message auto-recall gave a run: its conversation (``title`` None: the run's own;
    else the other conversation's title when the run was given it) and when it was said."""

    message_id: int
    seq: int
    conversation_uuid: str
    title: str | None
    created_at: datetime | None


@dataclass(eq=False, repr=False)
class RunService:
    engine: ChatEngine
    records: RunRecords
    lookup: ConversationLookup
    inspection: RunInspection
    # The owner's open pages are told a run started, and a new conversation is named
    # after its first answer, by the engine's listeners (composition.py): here only a
    # branch switch is announced, and ``titles`` is at hand for tests to wait on.
    live: LiveHub | None = None
    titles: Titles | None = None
    attachments: Attachments | None = None  # the files a send names, checked

    async def start_run(
        self,
        principal: Principal,
        *,
        agent_id: str,
        message: str,
        conversation_uuid: str | None = None,
        title: str | None = None,
        system_prompt: str | None = None,
        files: Sequence[str] = (),
    ) -> ActiveRun:
        """When this returns the question is committed and the run is on (ARCHITECTURE.md § Runs).
        No ``conversation_uuid`` starts a new conversation; a malformed one is not found.
        ``system_prompt`` replaces the agent's for this run (the gateway decides when).
        ``files``: ids of the caller's files the question carries, checked before anything
        is stored (``Attachments.check``: 404 / 413 / 422)."""
        attached = await self.files_meta(principal, files)
        return await self.engine.start_run(
            agent_id=agent_id,
            message=message,
            conversation_uuid=None
            if conversation_uuid is None
            else parse_conversation_uuid(conversation_uuid),
            principal=principal,
            title=title,
            system_prompt=system_prompt,
            files=attached,
        )

    async def files_meta(self, principal: Principal, files: Sequence[str]) -> list[dict[str, Any]]:
        """A question's ``files`` meta: ``{id, name, type, size}`` of each file named,
        checked (``Attachments.check``)."""
        if not files:
            return []
        if self.attachments is None:
            raise InvalidInput("this server keeps no files")
        checked = await self.attachments.check(principal, files)
        return [{"id": f.id, "name": f.name, "type": f.media_type, "size": f.size} for f in checked]

    async def regenerate(self, principal: Principal, conversation_uuid: str) -> ActiveRun:
        """Answer the last user message again (ARCHITECTURE.md § Regenerate): the previous
        answer stays stored as ``superseded``. Same run slot, events and durability as
        :meth:`start_run`; no user message is an InvalidInput."""
        return await self.engine.regenerate(
            conversation_uuid=parse_conversation_uuid(conversation_uuid), principal=principal
        )

    async def edit(
        self, principal: Principal, conversation_uuid: str, seq: int, message: str
    ) -> ActiveRun:
        """Ask the question at ``seq`` again as ``message``: a new branch of the
        conversation from there, the old one kept (``docs/API.md``, "Branches"). Same
        run slot, events and durability as :meth:`start_run`."""
        return await self.engine.edit(
            conversation_uuid=parse_conversation_uuid(conversation_uuid),
            seq=seq,
            message=message,
            principal=principal,
        )

    async def switch_branch(
        self, principal: Principal, conversation_uuid: str, seq: int, branch: int
    ) -> int:
        """Show branch ``branch`` of the question at ``seq``; the first seq that changed.
        The owner's open pages of the conversation read it again."""
        uuid = parse_conversation_uuid(conversation_uuid)
        changed = await self.engine.switch_branch(
            conversation_uuid=uuid, seq=seq, branch=branch, principal=principal
        )
        if changed and self.live is not None:
            await self.live.announce(principal.owner, Notice("branched", conversation=uuid))
        return changed

    async def continue_turn(
        self,
        principal: Principal,
        conversation_uuid: str,
        outputs: list[Msg],
        system_prompt: str | None = None,
    ) -> ActiveRun:
        """Go on with the conversation's last turn after a client ran its calls
        (``outputs``: TOOL rows); same run slot, events and durability as :meth:`start_run`."""
        return await self.engine.continue_turn(
            conversation_uuid=parse_conversation_uuid(conversation_uuid),
            outputs=outputs,
            principal=principal,
            system_prompt=system_prompt,
        )

    def follow(self, run: ActiveRun, after: int = 0) -> AsyncIterator[RunEvent | None]:
        """The events of a run the caller just started (``None``: a keepalive is due)."""
        return self.engine.follow(run, after)

    async def events(
        self, principal: Principal, run_id: str, *, after: int = 0
    ) -> AsyncIterator[RunEvent | None]:
        """What came after event ``after`` (a reconnect's Last-Event-ID), then live."""
        return await self.engine.open_stream(_checked(run_id), after=after, owner=principal.owner)

    async def stream(self, principal: Principal, **start: Any) -> AsyncIterator[RunEvent]:
        """Start a run and follow it to its result."""
        run = await self.start_run(principal, **start)  # type: ignore[arg-type]
        async for event in self.follow(run):
            if event is not None:
                yield event

    async def execute_sync(self, principal: Principal, **start: Any) -> RunFinished:
        """Start a run and wait for its result."""
        return await self.result(await self.start_run(principal, **start))  # type: ignore[arg-type]

    @staticmethod
    async def result(run: ActiveRun) -> RunFinished:
        """Wait for a run this caller started to end (it ends whether or not anyone waits)."""
        await run.done.wait()
        assert run.result is not None
        return run.result

    async def stop(self, principal: Principal, run_id: str) -> RunView:
        """The answer ends ``stopped`` with its text so far; an ended run is left as it is."""
        await self.engine.stop(_checked(run_id), owner=principal.owner)
        return await self.status(principal, run_id)

    async def status(self, principal: Principal, run_id: str) -> RunView:
        active = self.engine.active_run(_checked(run_id), owner=principal.owner)
        if active is not None:
            record = active.record
            return RunView(
                run_id=run_id,
                conversation_uuid=active.conversation.uuid,
                agent_id=record.agent_id,
                status=RunStatus.RUNNING,
                scenario=record.scenario,
                model=record.model,
                message_id=record.assistant_message_id,
                turn_id=active.assistant.turn_id,
                started_at=record.started_at,
                trimmed=record.trimmed,
            )
        record = await self.records.get_run(run_id, owner=principal.owner)
        if record is None:
            raise RunNotFound(run_id)
        answer = (
            await self.inspection.get_message(record.assistant_message_id)
            if record.assistant_message_id
            else None
        )
        return RunView(
            run_id=run_id,
            conversation_uuid=await self.inspection.conversation_uuid(record.conversation_pk) or "",
            agent_id=record.agent_id,
            status=record.status,
            scenario=record.scenario,
            model=record.model,
            message_id=record.assistant_message_id,
            turn_id=answer.turn_id if answer else None,
            content=answer.content if answer else None,
            error=record.error,
            started_at=record.started_at,
            finished_at=record.finished_at,
            trimmed=record.trimmed,
        )

    async def context(self, principal: Principal, run_id: str) -> RunContext:
        """Exactly the messages the run's provider was sent: the recorded recipe (prompt
        version, summary, history message ids) rendered the way the run rendered it."""
        active = self.engine.active_run(_checked(run_id), owner=principal.owner)
        record = (
            active.record if active else await self.records.get_run(run_id, owner=principal.owner)
        )
        if record is None:
            raise RunNotFound(run_id)
        recipe = record.context
        if not recipe or record.user_message_id is None:
            raise NotFound(f"run {run_id!r} has no recorded context (it ran before Lumina kept it)")
        prompt = await self.engine.prompts.text(recipe["prompt"]) or ""
        summary = await self.inspection.summary_of(recipe["summary"]) if recipe["summary"] else None
        history = await self.inspection.messages_by_id(record.conversation_pk, recipe["ids"])
        question = await self.inspection.get_message(record.user_message_id)
        recalled, elsewhere = await self._recalled(record, recipe)
        memory_ids = list(recipe.get("memories", []))
        known = (
            await self.engine.long_term.by_ids(record.owner, memory_ids)
            if memory_ids and self.engine.long_term is not None
            else []
        )
        sent = list(recipe.get("files", []))
        messages = render(
            prompt,
            summary,
            history,
            question.content if question else "",
            recalled_message(recalled, elsewhere),
            context_message(known),
            attached=await self._attached_again(record, sent),
            turn=question.turn_id if question else "",
        )
        older = history[: recipe.get("earlier", 0)]
        earlier = (older[0].seq, older[-1].seq, len(older)) if older else None
        calls = [len(messages)]
        for row in await self._steps(record, question):
            if row.role is MsgRole.ASSISTANT and len(messages) > calls[-1]:
                calls.append(len(messages))
            messages.append(chat_message(row))
        if len(messages) > calls[-1]:
            calls.append(len(messages))
        return RunContext(
            run_id=run_id,
            scenario=record.scenario,
            model=record.model,
            prompt_hash=recipe["prompt"],
            summary=summary,
            window=(record.context_first_seq, record.context_last_seq),
            earlier=earlier,
            trimmed=record.trimmed,
            tokens=recipe.get("tokens", 0),
            messages=messages,
            calls=calls,
            memories=memory_ids,
            recalled=await self._origins(record, recalled, elsewhere),
            files=[FileSent(**entry).view() for entry in sent],
        )

    async def _attached_again(self, record: RunRecord, sent: list[dict]) -> Attached | None:
        """The files' parts as the run sent them, read again from what it recorded."""
        if not sent or self.engine.files is None:
            return None
        return await load(self.engine.files, record.owner, sent)

    async def _recalled(self, record: RunRecord, recipe: dict) -> tuple[list[Msg], list[Elsewhere]]:
        """The messages auto-recall gave the run: its conversation's, and the other
        conversations' in the recorded order, each with where it was said as titled then
        (a message deleted since is left out)."""
        here = await self.inspection.messages_by_id(
            record.conversation_pk, recipe.get("recalled", [])
        )
        recorded = recipe.get("recalledElsewhere", [])
        by_pk: dict[ConversationPk, list[int]] = {}
        for entry in recorded:
            by_pk.setdefault(entry["conversationPk"], []).append(entry["id"])
        found: dict[int | None, Msg] = {}
        for pk, ids in by_pk.items():
            found |= {m.id: m for m in await self.inspection.messages_by_id(pk, ids)}
        elsewhere = [
            Elsewhere(
                found[e["id"]],
                e["id"],
                e["conversationPk"],
                e["conversationId"],
                e["title"],
                e.get("score", 0.0),
            )
            for e in recorded
            if e["id"] in found
        ]
        return here, elsewhere

    async def _origins(
        self, record: RunRecord, here: list[Msg], elsewhere: list[Elsewhere]
    ) -> list[RecalledFrom]:
        """Where each recalled message was said, in the order the run was sent them."""
        uuid = await self.inspection.conversation_uuid(record.conversation_pk) if here else ""
        return [
            *(RecalledFrom(m.id or 0, m.seq, uuid or "", None, m.created_at) for m in here),
            *(
                RecalledFrom(
                    e.message_id, e.message.seq, e.conversation_uuid, e.title, e.message.created_at
                )
                for e in elsewhere
            ),
        ]

    async def _steps(self, record: RunRecord, question: Msg | None) -> list[Msg]:
        """The rows of the run's tool steps (each answer that asked for tools, then its
        results), sent to the model's later calls: the consecutive rows from the run's
        first answer row up to, not including, its last one; for a turn the run went on
        with (a client's tool outputs), the turn's rows before them too."""
        last = record.assistant_message_id
        if question is None or last is None:
            return []
        answer = await self.inspection.get_message(last)
        if answer is None or answer.seq <= question.seq + 1:
            return []
        rows = await self.inspection.turn_rows(record.conversation_pk, question.seq, answer.seq)
        first = next(
            (i for i, m in enumerate(rows) if (m.meta or {}).get("runId") == record.run_id),
            len(rows),
        )
        # Before the run's own rows: those of the turn it went on with (a client's tool
        # outputs, the answer that asked for them), but not the answers a regenerate replaced.
        before = [m for m in rows[:first] if m.status not in _NOT_SENT]
        return before + rows[first:]

    async def forget(self, principal: Principal, run_id: str) -> None:
        """Delete an ended run's record (what ``/context`` and ``GET`` read); the messages
        it wrote stay in their conversation. A running run is a 409: stop it first."""
        active = self.engine.active_run(_checked(run_id), owner=principal.owner)
        if active is not None:
            raise ConversationBusy(active.conversation.uuid, run_id)
        if not await self.records.delete_run(run_id, owner=principal.owner):
            raise RunNotFound(run_id)

    async def conversation_of(self, principal: Principal, run_id: str) -> str:
        """The uuid of the conversation a run of the caller's answered (a next turn's)."""
        active = self.engine.active_run(_checked(run_id), owner=principal.owner)
        if active is not None:
            return active.conversation.uuid
        record = await self.records.get_run(run_id, owner=principal.owner)
        uuid = await self.inspection.conversation_uuid(record.conversation_pk) if record else None
        if uuid is None:
            raise RunNotFound(run_id)
        return uuid

    async def running_in(self, principal: Principal, conversation_uuid: str) -> str | None:
        """The live run of one of the caller's conversations (any instance), if any."""
        conversation = await self.lookup.find_visible(
            principal, parse_conversation_uuid(conversation_uuid)
        )
        return await self.engine.running_run_id(conversation.uuid)


def _checked(run_id: str) -> str:
    """Anything but the engine's own ``run-<16 hex>`` shape is not found, without a query."""
    if not is_run_id(run_id):
        raise RunNotFound(run_id)
    return run_id
