"""Family B, per-agent routes: agents, their conversations, and chat over SSE."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from lumina_app.agents.registry import AgentDefinition
from lumina_app.api.auth import AuthenticatedRoute, Owner
from lumina_app.api.deps import (
    LastEventId,
    ServicesDep,
    find_conversation,
    optional_conversation_id,
    stream_response,
)
from lumina_app.api.idempotency import IdempotencyKey, idempotent_run
from lumina_app.api.schemas import (
    MAX_SEQ,
    AgentConversations,
    AgentOut,
    ChatBody,
    ConversationDetail,
    ConversationMeta,
    Cursor,
    HistoryEntry,
    NoNul,
    error_responses,
)
from lumina_app.api.sse import named_frames
from lumina_app.api.stream_slots import StreamSlotDep
from lumina_app.composition import Services
from lumina_app.domain import AgentNotFound

router = APIRouter(prefix="/api/agent", tags=["agents"], route_class=AuthenticatedRoute)


def _agent_out(services: Services, agent: AgentDefinition) -> AgentOut:
    return AgentOut(
        id=agent.id,
        name=agent.name,
        description=agent.description,
        available=agent.available,
        error=agent.error,
        provider=agent.provider or services.settings.llm_provider,
        model=agent.model or services.settings.llm_model,
    )


def _agent(services: Services, agent_id: str) -> AgentDefinition:
    agent = services.registry.get(agent_id)
    if agent is None:
        raise AgentNotFound(agent_id)
    return agent


@router.get("/list", response_model=list[AgentOut])
async def list_agents(services: ServicesDep, _owner: Owner) -> list[AgentOut]:
    return [_agent_out(services, a) for a in services.registry.list()]


@router.get("/{agent_id}/info", response_model=AgentOut)
async def agent_info(agent_id: str, services: ServicesDep, _owner: Owner) -> AgentOut:
    return _agent_out(services, _agent(services, agent_id))


@router.get("/{agent_id}/conversations", response_model=AgentConversations)
async def agent_conversations(
    agent_id: str,
    services: ServicesDep,
    owner: Owner,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    after: Annotated[str | None, Query(max_length=200), Cursor] = None,
    q: Annotated[str | None, Query(max_length=200), NoNul] = None,
) -> AgentConversations:
    _agent(services, agent_id)
    items, cursor = await services.memory.list_conversations(
        agent_id=agent_id, owner=owner, limit=limit, cursor=after, search=q
    )
    return AgentConversations(
        conversations=[ConversationMeta.of(c) for c in items], nextCursor=cursor
    )


@router.get("/{agent_id}/conversations/{conversation_id}", response_model=ConversationDetail)
async def agent_conversation(
    agent_id: str,
    conversation_id: str,
    services: ServicesDep,
    owner: Owner,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
) -> ConversationDetail:
    conv = await find_conversation(services, conversation_id, owner=owner, agent_id=agent_id)
    msgs = await services.memory.history(conv, limit=limit, after_seq=after)
    next_after = msgs[-1].seq if msgs and msgs[-1].seq < conv.last_seq else None
    return ConversationDetail(
        meta=ConversationMeta.of(conv),
        messages=[HistoryEntry.of(m) for m in msgs],
        nextAfter=next_after,
    )


@router.post(
    "/{agent_id}/chat",
    response_class=Response,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "SSE: session | thinking | agent_output | tool_call | error | result",
        },
        **error_responses(429),
    },
)
async def chat(
    agent_id: str,
    body: ChatBody,
    services: ServicesDep,
    owner: Owner,
    slot: StreamSlotDep,
    idempotency_key: IdempotencyKey = None,
    last_event_id: LastEventId = 0,
) -> Response:
    """A retry with the same Idempotency-Key gets the same run's stream, from after its
    Last-Event-ID if it sends one (a reconnect)."""
    conversation = optional_conversation_id(body.conversation_id)

    async def start() -> str:
        run = await services.chat.start(
            agent_id=agent_id, message=body.message, conversation_uuid=conversation, owner=owner
        )
        return run.run_id

    run_id, retry = await idempotent_run(
        services, owner, idempotency_key, f"chat:{agent_id}", body, start
    )
    after = last_event_id if retry else 0
    events = await services.chat.open_stream(run_id, after=after, owner=owner)
    return stream_response(services, events, named_frames, slot)


@router.delete("/{agent_id}/conversations/{conversation_id}", status_code=204)
async def delete_conversation(
    agent_id: str, conversation_id: str, services: ServicesDep, owner: Owner
) -> Response:
    conv = await find_conversation(services, conversation_id, owner=owner, agent_id=agent_id)
    await services.memory.delete(conv)
    return Response(status_code=204)
