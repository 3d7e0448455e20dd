"""Preparing a run: which scenario its context comes from (ARCHITECTURE.md § Runs), the context
itself (:meth:`TurnPreparer.prepare`), and the accept transaction that commits the
question before generation (:meth:`TurnPreparer.accept`)."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import Any

from lumina_app.agents.definitions.prompts import PromptVersions
from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.providers.acp.provider import AcpProvider
from lumina_app.agents.providers.factory import Provider, ProviderFactory
from lumina_app.agents.run import client_tools
from lumina_app.agents.run.attachments import Attached, FileSource, Limits, carrying, plan, reserve
from lumina_app.agents.run.context import (
    MAX_EARLIER,
    BuiltContext,
    build_context,
    chat_message,
    render,
    whole_exchanges,
)
from lumina_app.agents.run.run_driver import ActiveRun
from lumina_app.agents.run.sessions import SessionPool
from lumina_app.agents.tools.auto_recall import Recollection, recall_earlier
from lumina_app.agents.tools.memories import scope_of
from lumina_app.domain import (
    ConversationInfo,
    InvalidInput,
    MessageNotFound,
    Msg,
    MsgRole,
    Principal,
    RunRecord,
    Scenario,
    SessionStarted,
    StoreUnavailable,
    new_turn_id,
)
from lumina_app.domain.tokens import estimate_messages
from lumina_app.domain.views import iso_ms
from lumina_app.memory import MemoryManager, MemoryView
from lumina_app.memory.context_reads import ContextReads
from lumina_app.memory.long_term import LongTermMemory, context_message
from lumina_app.recall.retriever import Retriever
from lumina_app.settings import Settings
from lumina_app.storage.message_files import MessageFiles

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RunRequest:
    """What a caller asked a run for: an answer to ``text`` in a conversation (``new``: one
    stored together with this first turn), or, ``text`` None, its last question answered
    again (regenerate), or, ``outputs`` given, its last turn gone on with once a client sent
    the outputs of the calls it was asked to run (TOOL rows), or, ``edit_seq`` given, the
    question at that seq asked again as ``text`` (a new branch from there). ``system_prompt``
    replaces the agent's (the gateway decides when)."""

    agent: AgentDefinition
    principal: Principal
    conversation_uuid: str
    text: str | None = None
    new: ConversationInfo | None = None
    system_prompt: str | None = None
    outputs: list[Msg] | None = None
    edit_seq: int | None = None
    files: tuple[dict[str, Any], ...] = ()  # the question's (``Msg.files``), checked already

    @property
    def asks(self) -> bool:
        """A question asked anew (not an answer again, a continuation or an edit)."""
        return self.text is not None and self.edit_seq is None and self.outputs is None

    @property
    def regenerates(self) -> bool:
        return self.text is None and self.outputs is None


class Accept(Enum):
    """Which accept transaction stores the turn."""

    CONVERSATION = "conversation"  # a new conversation with its first question
    TURN = "turn"  # the next question of a stored conversation
    REGENERATE = "regenerate"  # a new answer to the stored question; the old one superseded
    CONTINUE = "continue"  # the client's tool outputs and a new answer in the last turn
    EDIT = "edit"  # a question asked again in place: a new branch from there (``branches``)


@dataclass(slots=True)
class PreparedRun:
    """A run whose context is built and recorded, not yet accepted: what its one
    transaction stores (``question``, unless regenerating, and ``answer``, both without
    ids yet, and ``record``) and what generation then needs."""

    accept: Accept
    agent: AgentDefinition
    conversation: ConversationInfo
    owner: str
    question: Msg
    answer: Msg
    record: RunRecord
    context: BuiltContext
    provider: Provider
    view: MemoryView
    outputs: list[Msg] = field(default_factory=list)  # Accept.CONTINUE: the client's outputs
    turn: list[Msg] = field(default_factory=list)  # Accept.CONTINUE: the rows after the question
    edit_seq: int = 0  # Accept.EDIT: the seq of the question edited


@dataclass(eq=False, repr=False, kw_only=True)
class TurnPreparer:
    settings: Settings
    memory: MemoryManager  # the window (a resumed conversation's context)
    context: ContextReads  # the rest a context is read from (regenerate, continue)
    sessions: SessionPool
    providers: ProviderFactory
    prompts: PromptVersions
    retriever: Retriever | None = None  # auto-recall (agents with memory.autoRecall)
    long_term: LongTermMemory | None = None  # what is known about the person (memory.longTerm)
    links: MessageFiles | None = None  # a question's links to its files (deletion follows them)
    # what the files of a context's questions send (their text, bytes)
    files: FileSource | None = None

    async def prepare(
        self, run_id: str, request: RunRequest, conversation: ConversationInfo
    ) -> PreparedRun:
        """Build the run's context and its record, reading only what the scenario needs."""
        if request.outputs is not None:
            return await self._prepare_continue(run_id, request, conversation)
        if request.text is None:
            return await self._prepare_regenerate(run_id, request, conversation)
        if request.edit_seq is not None:
            return await self._prepare_edit(run_id, request, conversation, request.edit_seq)
        agent = request.agent
        session = self.sessions.get(agent.id, conversation.uuid)
        if session is not None and session.last_seq == conversation.last_seq:
            scenario, view = Scenario.CONTINUE, MemoryView(session.history, session.summary)
        elif conversation.last_seq == 0:
            scenario, view = Scenario.NEW, MemoryView([])
        else:
            scenario, view = Scenario.RESUME, await self.memory.load_view(conversation)
            if agent.memory.summary:
                view = await self.context.with_unsummarized(conversation, view, limit=MAX_EARLIER)
        accept = Accept.CONVERSATION if request.new is not None else Accept.TURN
        meta = {"files": list(request.files)} if request.files else {}
        question = Msg.user(request.text, turn_id=new_turn_id(), meta=meta)
        return await self._prepared(run_id, request, conversation, scenario, view, question, accept)

    async def _prepare_regenerate(
        self, run_id: str, request: RunRequest, conversation: ConversationInfo
    ) -> PreparedRun:
        """Answer the conversation's last question again: its context is what came before
        that question (never the answer being replaced), read from SQL; the accept
        transaction supersedes the old answer and opens the new one in the same turn."""
        agent = request.agent
        question = await self.context.last_question(conversation)
        if question is None:
            raise InvalidInput("this conversation has no user message to answer again")
        self.sessions.drop(agent.id, conversation.uuid)  # its history holds the old answer
        view = await self.context.view_before(conversation, question.seq)
        if agent.memory.summary:
            view = await self.context.with_unsummarized(
                conversation, view, limit=MAX_EARLIER, before_seq=question.seq
            )
        return await self._prepared(
            run_id, request, conversation, Scenario.RESUME, view, question, Accept.REGENERATE
        )

    async def _prepare_edit(
        self, run_id: str, request: RunRequest, conversation: ConversationInfo, seq: int
    ) -> PreparedRun:
        """Ask the question at ``seq`` again with new text: its context is what came before
        that question on the active branch; the accept transaction parks the branch from
        there on and opens the new question and its answer after everything."""
        agent = request.agent
        original = await self.context.message_at(conversation, seq)
        if original is None or original.role is not MsgRole.USER:
            raise MessageNotFound(f"no question at seq {seq} on this conversation's branch")
        self.sessions.drop(agent.id, conversation.uuid)  # its history holds the old branch
        view = await self.context.view_before(conversation, seq)
        if agent.memory.summary:
            view = await self.context.with_unsummarized(
                conversation, view, limit=MAX_EARLIER, before_seq=seq
            )
        # The edited question keeps its files (the parked one keeps its own links).
        meta = {"files": original.files} if original.files else {}
        question = Msg.user(request.text or "", turn_id=new_turn_id(), meta=meta)
        prepared = await self._prepared(
            run_id, request, conversation, Scenario.RESUME, view, question, Accept.EDIT, seq
        )
        prepared.edit_seq = seq
        return prepared

    async def _prepare_continue(
        self, run_id: str, request: RunRequest, conversation: ConversationInfo
    ) -> PreparedRun:
        """Go on with the last turn once a client sent the outputs of the calls it was
        asked to run: the context is the turn's question and what followed it; the accept
        transaction stores the outputs and a new answer row in the same turn."""
        agent = request.agent
        question = await self.context.last_question(conversation)
        if question is None:
            raise InvalidInput("this conversation has no user message to go on from")
        self.sessions.drop(agent.id, conversation.uuid)
        view = await self.context.view_before(conversation, question.seq)
        if agent.memory.summary:
            view = await self.context.with_unsummarized(
                conversation, view, limit=MAX_EARLIER, before_seq=question.seq
            )
        prepared = await self._prepared(
            run_id, request, conversation, Scenario.RESUME, view, question, Accept.CONTINUE
        )
        prepared.outputs = list(request.outputs or [])
        prepared.turn = await self.context.rows_after(conversation, question.seq)
        prepared.record.user_message_id = question.id  # the turn's question, not an output
        return prepared

    async def _prepared(
        self,
        run_id: str,
        request: RunRequest,
        conversation: ConversationInfo,
        scenario: Scenario,
        view: MemoryView,
        question: Msg,
        accept: Accept,
        before_seq: int | None = None,
    ) -> PreparedRun:
        """Build the context for ``question`` on ``view`` (with the agent's system prompt,
        or the one a gateway client sent where the agent allows it) and record it;
        ``before_seq``: where this conversation's recalled rows end (an edit's question)."""
        agent, text, system_prompt = request.agent, question.content, request.system_prompt
        history = view.messages
        prompt = agent.system_prompt if system_prompt is None else system_prompt
        recalled = Recollection()
        if agent.memory.auto_recall and self.retriever is not None:
            recalled = await recall_earlier(
                self.retriever, conversation, text, agent.memory.auto_recall,
                in_window={m.seq for m in history}, owner=request.principal.owner,
                agent_id=agent.id, before_seq=before_seq,
            )  # fmt: skip
        known = [] if conversation.temporary else await self._known(agent, request.principal, text)
        known_ids = {"memories": [m.id for m in known]} if known else {}
        said, known_text = recalled.message(), context_message(known)
        provider = self.providers.for_agent(agent, conversation.uuid, conversation.owner)
        own_session: dict = {}
        if isinstance(provider, AcpProvider):  # its process holds the context: it says which
            scenario, own_session = await provider.prepare(scenario)
        try:
            limits = self._file_limits(agent, provider)
            context, attached = await self._built(
                request, prompt, view, question, said, known_text, limits
            )
        except BaseException:
            if isinstance(provider, AcpProvider):  # the session it took goes back
                provider.abandon()
            raise
        if accept in (Accept.CONVERSATION, Accept.TURN, Accept.EDIT) and context.messages:
            context.messages[-1] = client_tools.with_images(context.messages[-1])
        first_seq, last_seq = context.seq_range
        record = RunRecord(
            run_id=run_id,
            conversation_pk=conversation.id,
            agent_id=agent.id,
            owner=request.principal.owner,
            scenario=scenario,
            provider=provider.name,
            model=provider.model,
            context_first_seq=first_seq,
            context_last_seq=last_seq,
            context_messages=len(context.history),
            context=await self._recipe(prompt, context)
            | recalled.recipe()
            | known_ids
            | own_session
            | ({"files": [asdict(sent) for sent in attached.sent]} if attached.sent else {}),
            trimmed=context.trimmed,
        )
        # The answer says which memories its run was given, so a page of answers can show
        # "Used N memories" without reading the run records.
        meta = {"provider": provider.name, "model": provider.model, "runId": run_id, **known_ids}
        return PreparedRun(
            accept=accept,
            agent=agent,
            conversation=conversation,
            owner=request.principal.owner,
            question=question,
            answer=Msg.assistant("", turn_id=question.turn_id, meta=meta),
            record=record,
            context=context,
            provider=provider,
            view=view,
        )

    async def _built(
        self,
        request: RunRequest,
        prompt: str,
        view: MemoryView,
        question: Msg,
        said: str,
        known_text: str,
        limits: Limits,
    ) -> tuple[BuiltContext, Attached]:
        """The context for ``question``, then the files of its questions in the room the
        budget leaves (up to half of it held back from the history for them)."""
        agent, history, text = request.agent, view.messages, question.content
        budget = agent.memory.context_tokens
        held = 0
        if budget and self.files is not None:
            held = min(reserve(carrying(history, question), limits), budget // 2)
        summary = view.summary if agent.memory.summary else None
        context = build_context(
            prompt,
            history,
            text,
            window=self.settings.context_window,
            summary=summary,
            token_budget=budget - held if budget else None,
            earlier=agent.memory.summary,
            recalled=said,
            known=known_text,
        )
        attached = await self._attach(request.principal.owner, context, question, limits, budget)
        if attached.sent:  # the same context, its questions with their files
            context.messages = render(
                prompt, summary, context.history, text, said, known_text,
                attached=attached, turn=question.turn_id,
            )  # fmt: skip
            context.tokens = estimate_messages(context.messages)
        return context, attached

    async def accept(self, run: PreparedRun) -> ActiveRun:
        """The accept transaction: the question (a regenerated one is stored already), the
        ``streaming`` answer row and the run record, committed together. Once it returns
        the turn is stored and the run is this process's to generate."""
        conversation = run.conversation
        try:
            user, assistant, stored = await self._store(run)
        except BaseException:
            if isinstance(run.provider, AcpProvider):  # the session it took goes back
                run.provider.abandon()
            raise
        if run.accept in (Accept.CONVERSATION, Accept.TURN, Accept.EDIT) and user.files:
            await self._link(run, user)
        active = ActiveRun(
            run_id=run.record.run_id,
            conversation=conversation,
            agent=run.agent,
            owner=run.owner,
            record=run.record,
            user=user,
            assistant=assistant,
            context=run.context,
            provider=run.provider,
            window_history=list(run.view.messages),
            summary=run.view.summary,
        )
        if run.accept is Accept.CONTINUE:  # the turn so far is part of what the model sees
            settled = whole_exchanges([run.question, *run.turn, *stored])[1:]
            active.settled = settled
            active.context.messages += [chat_message(msg) for msg in settled]
        return active

    async def _store(self, run: PreparedRun) -> tuple[Msg, Msg, list[Msg]]:
        """The one transaction ``run.accept`` names: (question, answer, tool outputs)."""
        memory, conversation, record = self.memory, run.conversation, run.record
        if run.accept is Accept.REGENERATE:
            answer = await memory.begin_regenerate(conversation, run.question, run.answer, record)
            return run.question, answer, []
        if run.accept is Accept.EDIT:
            user, answer = await memory.begin_edit(
                conversation, run.edit_seq, run.question, run.answer, record
            )
            return user, answer, []
        if run.accept is Accept.CONTINUE:
            stored, answer = await memory.begin_continue(
                conversation, run.outputs, run.answer, record
            )
            return run.question, answer, stored
        begin = (
            memory.begin_conversation if run.accept is Accept.CONVERSATION else memory.begin_turn
        )
        user, answer = await begin(conversation, run.question, run.answer, record)
        return user, answer, []

    def _file_limits(self, agent: AgentDefinition, provider: object) -> Limits:
        """Images only for a model that takes them (an acp agent's process must say so at
        ``initialize``); file text within the agent's budget (``memory.contextTokens``) or
        ``LUMINA_FILE_CONTEXT_TOKENS``."""
        settings = self.settings
        vision = agent.takes_images(settings.llm_provider)
        if isinstance(provider, AcpProvider):
            vision = vision and provider.takes_images
        return Limits(
            images=settings.max_images_per_context if vision else 0,
            image_bytes=settings.max_context_image_bytes,
            tokens=settings.file_context_tokens,
        )

    async def _attach(
        self,
        owner: str,
        context: BuiltContext,
        question: Msg,
        limits: Limits,
        budget: int | None,
    ) -> Attached:
        """The parts of the files of the context's questions, in the room left: the
        budget's rest once the context is built, or the setting's without a budget."""
        questions = carrying(context.history, question)
        if self.files is None or not questions:
            return Attached()
        room = budget - context.tokens if budget else limits.tokens
        return await plan(self.files, owner, questions, replace(limits, tokens=room))

    async def _link(self, run: PreparedRun, question: Msg) -> None:
        """The question's links to its files, right after the accept committed it: the
        fast write paths store a turn in one statement (``writes_pg``), so the links are
        their own transaction. A file deleted meanwhile links nothing (the question still
        names it); a failure here is logged, never undoes the accepted turn."""
        if self.links is None:
            return
        ids = [f["id"] for f in question.files]
        try:
            await self.links.link(run.owner, run.conversation.id, question.seq, ids)
        except (StoreUnavailable, OSError) as exc:
            log.warning("the files of question %s were not linked: %s", question.seq, exc)

    async def _known(self, agent: AgentDefinition, principal: Principal, text: str) -> list:
        """The memories about the person most relevant to ``text``, within the agent's
        budget (none without ``memory.longTerm``)."""
        config = agent.memory.long_term
        if config is None or self.long_term is None:
            return []
        return await self.long_term.for_context(
            principal.owner,
            text,
            agent_id=scope_of(agent),
            tokens=config.tokens,
            limit=config.limit,
        )

    async def _recipe(self, system_prompt: str, context: BuiltContext) -> dict:
        """What the context was made of, to rebuild exactly what the provider is sent."""
        prompt = await self.prompts.remember(system_prompt)
        return {
            "prompt": prompt,
            "summary": context.summary.id if context.summary else None,
            "ids": [m.id for m in context.history],
            "earlier": context.earlier,
            "tokens": context.tokens,
        }


def session_started(run: ActiveRun) -> SessionStarted:
    """The ``session`` event of an accepted run."""
    return SessionStarted(
        conversation_uuid=run.conversation.uuid,
        turn_id=run.user.turn_id,
        run_id=run.run_id,
        scenario=run.scenario,
        agent_id=run.agent.id,
        user_message_id=run.user.id,
        assistant_message_id=run.assistant.id,
        context_messages=run.record.context_messages,
        model=run.record.model,
        user_seq=run.user.seq,
        created_at=iso_ms(run.user.created_at) if run.user.created_at else "",
        answer_seq=run.assistant.seq,
    )
