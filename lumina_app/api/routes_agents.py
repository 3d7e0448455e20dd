"""Family B, per-agent routes: agents, their conversations, and chat over SSE."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import (
    AgentsDep,
    ConversationsDep,
    LastEventId,
)
from lumina_app.api.idempotency import IdempotencyKey
from lumina_app.api.run_stream import AnsweringDep, Once
from lumina_app.api.schemas import (
    MAX_SEQ,
    AgentConversations,
    AgentInfoOut,
    AgentOut,
    ChatBody,
    ConversationDetail,
    ConversationMeta,
    Cursor,
    HistoryEntry,
    NoNul,
    stream_responses,
)
from lumina_app.api.sse import named_frames

router = APIRouter(prefix="/api/agent", tags=["agents"], route_class=AuthenticatedRoute)


@router.get("/list", response_model=list[AgentOut])
async def list_agents(agents: AgentsDep, _caller: Caller) -> list[AgentOut]:
    return [AgentOut.of(a) for a in agents.list()]


@router.get("/{agent_id}/info", response_model=AgentInfoOut)
async def agent_info(agent_id: str, agents: AgentsDep, _caller: Caller) -> AgentInfoOut:
    """The agent and its tools (starting its MCP servers if they are not running)."""
    return AgentInfoOut.of(await agents.info(agent_id))


@router.get("/{agent_id}/conversations", response_model=AgentConversations)
async def agent_conversations(
    agent_id: str,
    agents: AgentsDep,
    conversations: ConversationsDep,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    after: Annotated[str | None, Query(max_length=200), Cursor] = None,
    q: Annotated[str | None, Query(max_length=200), NoNul] = None,
) -> AgentConversations:
    agents.get(agent_id)
    items, cursor = await conversations.list(
        caller, agent_id=agent_id, limit=limit, cursor=after, search=q
    )
    return AgentConversations(
        conversations=[ConversationMeta.of(c) for c in items], nextCursor=cursor
    )


@router.get("/{agent_id}/conversations/{conversation_id}", response_model=ConversationDetail)
async def agent_conversation(
    agent_id: str,
    conversation_id: str,
    conversations: ConversationsDep,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
) -> ConversationDetail:
    conv, page = await conversations.messages(
        caller, conversation_id, agent_id=agent_id, limit=limit, after=after
    )
    return ConversationDetail(
        meta=ConversationMeta.of(conv),
        messages=[HistoryEntry.of(m) for m in page.items],
        nextAfter=page.next_after,
    )


@router.post(
    "/{agent_id}/chat",
    response_class=Response,
    responses=stream_responses(
        "SSE: session | thinking | agent_output | tool_call | tool_result | error | result"
    ),
)
async def chat(
    agent_id: str,
    body: ChatBody,
    asked: AnsweringDep,
    idempotency_key: IdempotencyKey = None,
    last_event_id: LastEventId = 0,
) -> Response:
    """A retry with the same Idempotency-Key gets the same run's stream, from after its
    Last-Event-ID if it sends one (a reconnect)."""

    once = Once(idempotency_key, f"chat:{agent_id}", body, last_event_id)
    return await once.answer(
        asked,
        lambda: asked.runs.start_run(
            asked.caller,
            agent_id=agent_id,
            message=body.message,
            conversation_uuid=body.conversation_id or None,
            files=body.files,
        ),
        framer=named_frames,
    )


@router.delete("/{agent_id}/conversations/{conversation_id}", status_code=204)
async def delete_conversation(
    agent_id: str, conversation_id: str, conversations: ConversationsDep, caller: Caller
) -> Response:
    await conversations.delete(caller, conversation_id, agent_id=agent_id)
    return Response(status_code=204)
