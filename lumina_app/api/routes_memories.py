"""Long-term memories (issue #27): what agents know about the caller, to see and correct.
Someone else's memory id is a 404 on every route, like a missing or malformed one.
A fact that changed keeps its earlier versions as history (#42): ``validFrom``,
``validUntil`` and ``replacedBy`` on each, ``?history=true`` or ``/{id}/history``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import MemoriesDep
from lumina_app.api.schemas import NoNul, StrictBody, copied
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
    origin: str | None = Field(
        default=None, description='who added it outside a conversation ("added over MCP by …")'
    )
    supersededBy: int | None = Field(default=None, description="the same as replacedBy")
    replacedBy: int | None = Field(default=None, description="the newer memory replacing it")
    validFrom: str = Field(description="when it became true (was learnt)")
    validUntil: str | None = Field(description="when a newer fact replaced it; null: current")
    createdAt: str
    updatedAt: str
    history: list[MemoryOut] | None = Field(
        default=None, description="with history=true: the versions it replaced, newest first"
    )

    @classmethod
    def of(cls, m: Memory, history: list[Memory] | None = None) -> MemoryOut:
        return copied(
            cls,
            m,
            status=m.status.value,
            conversationId=m.conversation_uuid,
            replacedBy=m.superseded_by,
            validFrom=iso_us(m.valid_from or m.created_at),
            validUntil=iso_us(m.valid_until) if m.valid_until else None,
            createdAt=iso_us(m.created_at),
            updatedAt=iso_us(m.updated_at),
            history=[cls.of(h) for h in history] if history is not None else None,
        )


class MemoryList(BaseModel):
    items: list[MemoryOut]


class CreateMemory(StrictBody):
    agent_id: str = Field(alias="agentId", min_length=1, max_length=64)
    text: MemoryText
    pinned: StrictBool = False


class EditMemory(StrictBody):
    # The schema says what the validator enforces: "supersede": true needs a text.
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        json_schema_extra={
            "if": {"properties": {"supersede": {"const": True}}, "required": ["supersede"]},
            "then": {"required": ["text"], "properties": {"text": {"type": "string"}}},
        },
    )

    text: MemoryText | None = None
    pinned: StrictBool | None = None
    supersede: StrictBool = Field(
        default=False,
        description="the text is a newer fact: keep the old one as history (else: corrected "
        "in place)",
    )

    @model_validator(mode="after")
    def _superseding_needs_text(self) -> EditMemory:
        if self.supersede and self.text is None:
            raise ValueError("supersede needs the new text")
        return self


class Forgotten(BaseModel):
    forgotten: int


# One status, a comma list of them, or "all" (the schema says so: bad ones are a 422 there).
STATUS_FILTER = r"^(all|(active|superseded|deleted)(, ?(active|superseded|deleted))*)$"


@router.get("", response_model=MemoryList)
async def list_memories(
    memories: MemoriesDep,
    caller: Caller,
    agent_id: AgentId = None,
    q: Annotated[str | None, Query(max_length=200), NoNul] = None,
    status: Annotated[str | None, Query(max_length=64, pattern=STATUS_FILTER)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 200,
    history: Annotated[bool, Query()] = False,
) -> MemoryList:
    """The caller's memories (current ones unless ``status`` says otherwise: one of
    active, superseded, deleted, a comma list, or all); with ``q``, the current ones most
    relevant to it, best first (the same ranking as recall). With ``history=true`` each
    carries ``history``: the earlier versions it replaced, newest first, with their dates."""
    found = await memories.list(
        caller, agent_id=agent_id, query=q, statuses=statuses_of(status), limit=limit
    )
    if not history:
        return MemoryList(items=[MemoryOut.of(m) for m in found])
    earlier = await memories.earlier(caller, found)
    return MemoryList(items=[MemoryOut.of(m, earlier[m.id]) for m in found])


@router.post(
    "",
    status_code=201,
    response_model=MemoryOut,
    responses={200: {"model": MemoryOut, "description": "the same fact was already known"}},
)
async def create_memory(
    body: CreateMemory, memories: MemoriesDep, caller: Caller, response: Response
) -> MemoryOut:
    """Tell an agent a fact about yourself. The same fact already known is not kept twice:
    that one is returned (200)."""
    memory, new = await memories.create(
        caller, agent_id=body.agent_id, text=body.text, pinned=body.pinned
    )
    if not new:
        response.status_code = 200
    return MemoryOut.of(memory)


@router.post("/forget", response_model=Forgotten)
async def forget_everything(
    memories: MemoriesDep, caller: Caller, agent_id: AgentId = None
) -> Forgotten:
    """Forget everything (of one agent, with ``agentId``): every memory marked deleted."""
    return Forgotten(forgotten=await memories.forget_all(caller, agent_id=agent_id))


@router.get("/{memory_id}", response_model=MemoryOut)
async def get_memory(memory_id: str, memories: MemoriesDep, caller: Caller) -> MemoryOut:
    return MemoryOut.of(await memories.get(caller, memory_id))


@router.get("/{memory_id}/history", response_model=MemoryList)
async def memory_history(memory_id: str, memories: MemoriesDep, caller: Caller) -> MemoryList:
    """The chain a memory belongs to, newest first: the current version, then each earlier
    one with ``validFrom``/``validUntil`` and ``replacedBy`` (any version's id finds it)."""
    return MemoryList(items=[MemoryOut.of(m) for m in await memories.history(caller, memory_id)])


@router.patch("/{memory_id}", response_model=MemoryOut)
async def edit_memory(
    memory_id: str, body: EditMemory, memories: MemoriesDep, caller: Caller
) -> MemoryOut:
    """Correct a memory's text in place, or pin it (a pinned memory goes into every
    context). With ``"supersede": true`` the text is a newer fact: the memory is closed
    (``validUntil``, ``replacedBy``) and the new current one is returned (a new id)."""
    memory = await memories.edit(
        caller, memory_id, text=body.text, pinned=body.pinned, supersede=body.supersede
    )
    return MemoryOut.of(memory)


@router.delete("/{memory_id}", status_code=204)
async def delete_memory(memory_id: str, memories: MemoriesDep, caller: Caller) -> Response:
    """Forget one memory: it is never used again. A current memory's history goes with it;
    an earlier version is removed from the history alone."""
    await memories.delete(caller, memory_id)
    return Response(status_code=204)
