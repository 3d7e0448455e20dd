"""Preparing a run: which scenario its context comes from (DESIGN §5), the context
itself, and the accept transaction that commits the question before generation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from lumina_app.agents.acp.provider import AcpProvider
from lumina_app.agents.auto_recall import recall_earlier, recalled_message
from lumina_app.agents.context import MAX_EARLIER, BuiltContext, build_context
from lumina_app.agents.prompts import PromptVersions
from lumina_app.agents.providers import ProviderFactory
from lumina_app.agents.registry import AgentDefinition
from lumina_app.agents.run_driver import ActiveRun
from lumina_app.agents.sessions import SessionPool
from lumina_app.domain import (
    ConversationInfo,
    InvalidInput,
    Msg,
    Principal,
    RunRecord,
    Scenario,
    SessionStarted,
    new_turn_id,
)
from lumina_app.domain.views import iso_ms
from lumina_app.memory import MemoryManager, MemoryView
from lumina_app.recall.retriever import Retriever
from lumina_app.settings import Settings


class TurnPreparer:
    def __init__(
        self,
        *,
        settings: Settings,
        memory: MemoryManager,
        sessions: SessionPool,
        providers: ProviderFactory,
        prompts: PromptVersions,
        retriever: Retriever | None = None,
    ) -> None:
        self.settings = settings
        self.memory = memory
        self.sessions = sessions
        self.providers = providers
        self.prompts = prompts
        self.retriever = retriever  # auto-recall (agents with memory.autoRecall)

    async def prepare(
        self,
        run_id: str,
        agent: AgentDefinition,
        conversation: ConversationInfo,
        text: str,
        principal: Principal,
        created: bool,
        system_prompt: str | None = None,
    ) -> ActiveRun:
        """Build the run's context (scenario new / continue / resume) and commit the
        question with a ``streaming`` answer row and the run record, in one transaction."""
        session = self.sessions.get(agent.id, conversation.uuid)
        if session is not None and session.last_seq == conversation.last_seq:
            scenario, view = Scenario.CONTINUE, MemoryView(session.history, session.summary)
        elif conversation.last_seq == 0:
            scenario, view = Scenario.NEW, MemoryView([])
        else:
            scenario, view = Scenario.RESUME, await self.memory.load_view(conversation)
            if agent.memory.summary:
                view = await self.memory.with_unsummarized(conversation, view, limit=MAX_EARLIER)
        begin = self.memory.begin_conversation if created else self.memory.begin_turn
        turn_id = new_turn_id()

        async def commit(record: RunRecord, meta: dict) -> tuple[Msg, Msg]:
            question = Msg.user(text, turn_id=turn_id)
            return await begin(
                conversation, question, Msg.assistant("", turn_id=turn_id, meta=meta), record
            )

        return await self._accept(
            run_id, agent, conversation, principal, scenario, view, text, commit, system_prompt
        )

    async def prepare_regenerate(
        self,
        run_id: str,
        agent: AgentDefinition,
        conversation: ConversationInfo,
        principal: Principal,
    ) -> ActiveRun:
        """Answer the conversation's last question again: its context is what came before
        that question (never the answer being replaced), read from SQL; the accept
        transaction supersedes the old answer and opens the new one in the same turn."""
        question = await self.memory.last_question(conversation)
        if question is None:
            raise InvalidInput("this conversation has no user message to answer again")
        self.sessions.drop(agent.id, conversation.uuid)  # its history holds the old answer
        view = await self.memory.view_before(conversation, question.seq)
        if agent.memory.summary:
            view = await self.memory.with_unsummarized(
                conversation, view, limit=MAX_EARLIER, before_seq=question.seq
            )

        async def commit(record: RunRecord, meta: dict) -> tuple[Msg, Msg]:
            answer = Msg.assistant("", turn_id=question.turn_id, meta=meta)
            return question, await self.memory.begin_regenerate(
                conversation, question, answer, record
            )

        return await self._accept(
            run_id, agent, conversation, principal, Scenario.RESUME, view, question.content, commit
        )

    async def _accept(
        self,
        run_id: str,
        agent: AgentDefinition,
        conversation: ConversationInfo,
        principal: Principal,
        scenario: Scenario,
        view: MemoryView,
        text: str,
        commit: Callable[[RunRecord, dict], Awaitable[tuple[Msg, Msg]]],
        system_prompt: str | None = None,
    ) -> ActiveRun:
        """Build the context for ``text`` on ``view`` (with the agent's system prompt, or
        the one a gateway client sent where the agent allows it), record it, and
        ``commit`` the turn."""
        history = view.messages
        prompt = agent.system_prompt if system_prompt is None else system_prompt
        recalled = []
        if agent.memory.auto_recall and self.retriever is not None:
            recalled = await recall_earlier(
                self.retriever, conversation, text, agent.memory.auto_recall,
                in_window={m.seq for m in history},
            )  # fmt: skip
        context = build_context(
            prompt,
            history,
            text,
            window=self.settings.context_window,
            summary=view.summary if agent.memory.summary else None,
            token_budget=agent.memory.context_tokens,
            earlier=agent.memory.summary,
            recalled=recalled_message(recalled),
        )
        provider = self.providers.for_agent(agent, conversation.uuid)
        own_session: dict = {}
        if isinstance(provider, AcpProvider):  # its process holds the context: it says which
            scenario, own_session = await provider.prepare(scenario)
        first_seq, last_seq = context.seq_range
        record = RunRecord(
            run_id=run_id,
            conversation_id=conversation.id,
            agent_id=agent.id,
            owner=principal.owner,
            scenario=scenario,
            provider=provider.name,
            model=provider.model,
            context_first_seq=first_seq,
            context_last_seq=last_seq,
            context_messages=len(context.history),
            context=await self._recipe(prompt, context) | _recalled_recipe(recalled) | own_session,
            trimmed=context.trimmed,
        )
        meta = {"provider": provider.name, "model": provider.model, "runId": run_id}
        try:
            user, assistant = await commit(record, meta)
        except BaseException:
            if isinstance(provider, AcpProvider):
                provider.abandon()
            raise
        return ActiveRun(
            run_id=run_id,
            conversation=conversation,
            agent=agent,
            owner=principal.owner,
            record=record,
            user=user,
            assistant=assistant,
            context=context,
            provider=provider,
            window_history=list(history),
            summary=view.summary,
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


def _recalled_recipe(recalled: list) -> dict:
    """Which earlier messages auto-recall put in, and why (their fused relevance)."""
    if not recalled:
        return {}
    return {
        "recalled": [m.message_id for m in recalled],
        "recalledWhy": [{"seq": m.seq, "score": m.score} for m in recalled],
    }


def session_started(run: ActiveRun) -> SessionStarted:
    """The ``session`` event of an accepted run."""
    return SessionStarted(
        conversation_id=run.conversation.uuid,
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
