"""Preparing a run: which scenario its context comes from (DESIGN §5), the context
itself, and the accept transaction that commits the question before generation."""

from __future__ import annotations

from lumina_app.agents.context import BuiltContext, build_context
from lumina_app.agents.prompts import PromptVersions
from lumina_app.agents.providers import ProviderFactory
from lumina_app.agents.registry import AgentDefinition
from lumina_app.agents.run_driver import ActiveRun
from lumina_app.agents.sessions import SessionPool
from lumina_app.domain import (
    ConversationInfo,
    Msg,
    Principal,
    RunRecord,
    Scenario,
    SessionStarted,
    new_turn_id,
)
from lumina_app.domain.views import iso_ms
from lumina_app.memory import MemoryManager, MemoryView
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
    ) -> None:
        self.settings = settings
        self.memory = memory
        self.sessions = sessions
        self.providers = providers
        self.prompts = prompts

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
        history = view.messages
        prompt = agent.system_prompt if system_prompt is None else system_prompt
        context = build_context(
            prompt,
            history,
            text,
            window=self.settings.context_window,
            summary=view.summary if agent.memory.summary else None,
            token_budget=agent.memory.context_tokens,
        )
        provider = self.providers.for_agent(agent)
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
            context=await self._recipe(prompt, context),
            trimmed=context.trimmed,
        )
        turn_id = new_turn_id()
        meta = {"provider": provider.name, "model": provider.model, "runId": run_id}
        begin = self.memory.begin_conversation if created else self.memory.begin_turn
        user, assistant = await begin(
            conversation,
            Msg.user(text, turn_id=turn_id),
            Msg.assistant("", turn_id=turn_id, meta=meta),
            record,
        )
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
            "tokens": context.tokens,
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
    )
