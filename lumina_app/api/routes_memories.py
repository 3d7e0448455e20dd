"""Long-term memories (issue #27): what agents know about the caller, to see and correct.
Someone else's memory id is a 404 on every route, like a missing or malformed one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field, StrictBool

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import ServicesDep
from lumina_app.api.schemas import NoNul, StrictBody
from lumina_app.domain.memories import MAX_MEMORY_CHARS, Memory
from lumina_app.domain.views import iso_us
from lumina_app.services.memories import statuses_of

router = APIRouter(prefix="/api/v1/memories", tags=["memories"], route_class=AuthenticatedRoute)
AgentId = Annotated[str | None, Query(alias="agentId", max_length=64), NoNul]
MemoryText = Annotated[str, NoNul, Field(min_length=1, max_length=MAX_MEMORY_CHARS)]


class MemoryOut(BaseModel):
    id: int
    agentId: str
    text: str
    status: str
    pinned: bool
    conversationId: str | None = Field(description="the conversation it came from, if any")
    seq: int | None = Field(description="the message of that conversation it came from")
    supersededBy: int | None = None
    createdAt: str
    updatedAt: str

    @classmethod
    def of(cls, m: Memory) -> MemoryOut:
        return cls(
            id=m.id,
            agentId=m.agent_id,
            text=m.text,
            status=m.status.value,
            pinned=m.pinned,
            conversationId=m.conversation_uuid,
            seq=m.seq,
            supersededBy=m.superseded_by,
            createdAt=iso_us(m.created_at),
            updatedAt=iso_us(m.updated_at),
        )


class MemoryList(BaseModel):
    items: list[MemoryOut]


class CreateMemory(StrictBody):
    agent_id: str = Field(alias="agentId", min_length=1, max_length=64)
    text: MemoryText
    pinned: StrictBool = False


class EditMemory(StrictBody):
    text: MemoryText | None = None
    pinned: StrictBool | None = None


class Forgotten(BaseModel):
    forgotten: int


# One status, a comma list of them, or "all" (the schema says so: bad ones are a 422 there).
STATUS_FILTER = r"^(all|(active|superseded|deleted)(, ?(active|superseded|deleted))*)$"


@router.get("", response_model=MemoryList)
async def list_memories(
    services: ServicesDep,
    caller: Caller,
    agent_id: AgentId = None,
    q: Annotated[str | None, Query(max_length=200), NoNul] = None,
    status: Annotated[str | None, Query(max_length=64, pattern=STATUS_FILTER)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 200,
) -> MemoryList:
    """The caller's memories (active ones unless ``status`` says otherwise: one of
    active, superseded, deleted, a comma list, or all); with ``q``, the active ones most
    relevant to it, best first (the same ranking as recall)."""
    found = await services.memories.list(
        caller, agent_id=agent_id, query=q, statuses=statuses_of(status), limit=limit
    )
    return MemoryList(items=[MemoryOut.of(m) for m in found])


@router.post(
    "",
    status_code=201,
    response_model=MemoryOut,
    responses={200: {"model": MemoryOut, "description": "the same fact was already known"}},
)
async def create_memory(
    body: CreateMemory, services: ServicesDep, caller: Caller, response: Response
) -> MemoryOut:
    """Tell an agent a fact about yourself. The same fact already known is not kept twice:
    that one is returned (200)."""
    memory, new = await services.memories.create(
        caller, agent_id=body.agent_id, text=body.text, pinned=body.pinned
    )
    if not new:
        response.status_code = 200
    return MemoryOut.of(memory)


@router.post("/forget", response_model=Forgotten)
async def forget_everything(
    services: ServicesDep, caller: Caller, agent_id: AgentId = None
) -> Forgotten:
    """Forget everything (of one agent, with ``agentId``): every memory marked deleted."""
    return Forgotten(forgotten=await services.memories.forget_all(caller, agent_id=agent_id))


@router.get("/{memory_id}", response_model=MemoryOut)
async def get_memory(memory_id: str, services: ServicesDep, caller: Caller) -> MemoryOut:
    return MemoryOut.of(await services.memories.get(caller, memory_id))


@router.patch("/{memory_id}", response_model=MemoryOut)
async def edit_memory(
    memory_id: str, body: EditMemory, services: ServicesDep, caller: Caller
) -> MemoryOut:
    """Correct a memory's text, or pin it (a pinned memory goes into every context)."""
    memory = await services.memories.edit(caller, memory_id, text=body.text, pinned=body.pinned)
    return MemoryOut.of(memory)


@router.delete("/{memory_id}", status_code=204)
async def delete_memory(memory_id: str, services: ServicesDep, caller: Caller) -> Response:
    """Forget one memory: it is never used again."""
    await services.memories.delete(caller, memory_id)
    return Response(status_code=204)
