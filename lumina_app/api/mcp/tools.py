"""The MCP server's tools and resources: each one a thin call into ``services/`` as the
caller the ``/mcp`` door authenticated. Lumina's own errors come back as tool errors naming
the code and message (another owner's ids are "not found", like a missing one)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Annotated, Any, ParamSpec, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from lumina_app.api.routes_health import VERSION
from lumina_app.composition import Services, current
from lumina_app.domain import LuminaError, Msg, Principal
from lumina_app.domain.memories import MAX_MEMORY_CHARS, Memory
from lumina_app.domain.transcript import Line
from lumina_app.domain.views import iso_us
from lumina_app.services.conversations import ExportFormat

PRINCIPAL_KEY = "lumina.principal"
RESOURCE = "lumina://conversations/{uuid}"
INSTRUCTIONS = (
    "Lumina keeps this person's conversations with their agents and what it has learnt "
    "about them. Search before asking them to repeat themselves; remember durable facts "
    "they state; log an exchange worth keeping with log_exchange."
)

P = ParamSpec("P")
R = TypeVar("R")

AgentArg = Annotated[
    str | None,
    Field(max_length=64, description="an agent id (default: all, or the default agent)"),
]
ConversationArg = Annotated[
    str, Field(max_length=64, description="a conversation id (uuid) from another tool")
]
MemoryIdArg = Annotated[int, Field(ge=1, description="a memory id from search_memories/remember")]
MemoryText = Annotated[str, Field(min_length=1, max_length=MAX_MEMORY_CHARS)]


def caller(ctx: Context) -> Principal:
    """Who the ``/mcp`` door let in for this HTTP request."""
    request = ctx.request_context.request
    principal = getattr(request, "scope", {}).get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):  # not over the /mcp door: nobody
        raise ToolError("unauthorized: no caller")
    return principal


def client_name(ctx: Context) -> str:
    """The MCP client's own name (its clientInfo), for a memory's provenance."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = (info.title or info.name) if info is not None else ""
    return (name or "an MCP client").strip()[:64]


def lumina_errors(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
    """A Lumina error (bad input, not found, busy, quota) as a tool error an agent can read."""

    @wraps(fn)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await fn(*args, **kwargs)
        except LuminaError as exc:
            raise ToolError(f"{exc.code}: {exc}") from None

    return call


def _services() -> Services:
    return current()


def _memory(m: Memory) -> dict[str, Any]:
    return {
        "id": m.id,
        "agent": m.agent_id,
        "text": m.text,
        "pinned": m.pinned,
        "origin": m.origin,
        "conversationId": m.conversation_uuid,
        "createdAt": iso_us(m.created_at),
        "updatedAt": iso_us(m.updated_at),
    }


def _message(m: Msg) -> dict[str, Any]:
    return {
        "seq": m.seq,
        "role": m.role.value.lower(),
        "content": m.content,
        "status": m.status.value,
        "createdAt": iso_us(m.created_at) if m.created_at else None,
    }


# -- conversations ------------------------------------------------------------------------


@lumina_errors
async def search_conversations(
    ctx: Context,
    query: Annotated[str, Field(min_length=1, max_length=1000, description="what to look for")],
    agent: AgentArg = None,
    limit: Annotated[int, Field(ge=1, le=50)] = 10,
) -> dict[str, Any]:
    """Ranked recall across the person's conversations: the most relevant messages first,
    each with its conversation id, title, date and a snippet."""
    hits = await _services().recall.everywhere(caller(ctx), query, agent_id=agent, limit=limit)
    return {
        "hits": [
            {
                "conversationId": h.conversation_uuid,
                "title": h.title,
                "seq": h.seq,
                "role": h.role.lower(),
                "snippet": h.snippet,
                "score": round(h.score, 4),
                "date": iso_us(h.created_at),
                **({"file": {"id": h.file.id, "name": h.file.name}} if h.file else {}),
            }
            for h in hits
        ]
    }


@lumina_errors
async def read_conversation(
    ctx: Context,
    conversation_id: ConversationArg,
    around_seq: Annotated[
        int | None, Field(ge=1, description="center the page on this message seq")
    ] = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 30,
) -> dict[str, Any]:
    """Messages of one conversation in order: the latest ``limit``, or those around a seq
    (from search_conversations); ``nextAfter``/``nextBefore`` page on."""
    services = _services()
    principal = caller(ctx)
    if around_seq is None:
        found, page = await services.conversations.latest(
            principal, conversation_id, limit=limit, agent_id=None
        )
    else:
        after = max(0, around_seq - 1 - limit // 2)
        found, page = await services.conversations.messages(
            principal, conversation_id, limit=limit, after=after
        )
    return {
        "conversationId": found.uuid,
        "title": found.title,
        "agent": found.agent_id,
        "lastSeq": found.last_seq,
        "messages": [_message(m) for m in page.items],
        "nextAfter": page.next_after,
        "nextBefore": page.next_before,
    }


@lumina_errors
async def list_conversations(
    ctx: Context,
    agent: AgentArg = None,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Field(max_length=200, description="nextCursor of a page")] = None,
) -> dict[str, Any]:
    """The person's conversations, most recent activity first."""
    found, next_cursor = await _services().conversations.list(
        caller(ctx), agent_id=agent, limit=limit, cursor=cursor
    )
    return {
        "conversations": [
            {
                "conversationId": c.uuid,
                "title": c.title,
                "agent": c.agent_id,
                "messageCount": c.message_count,
                "updatedAt": iso_us(c.updated_at),
                "uri": RESOURCE.format(uuid=c.uuid),
            }
            for c in found
        ],
        "nextCursor": next_cursor,
    }


@lumina_errors
async def log_exchange(
    ctx: Context,
    agent: Annotated[str, Field(min_length=1, max_length=64, description="a Lumina agent id")],
    user: Annotated[str, Field(min_length=1, description="what the person said")],
    assistant: Annotated[str, Field(description="what the agent answered")],
    conversation_id: Annotated[
        str | None, Field(max_length=64, description="continue this one")
    ] = None,
) -> dict[str, Any]:
    """Keep one exchange had elsewhere in a Lumina conversation (a new one unless
    conversation_id is given): searchable, and read for long-term memories. Returns the
    conversation id to pass next time."""
    services = _services()
    assert services.exchanges is not None
    logged = await services.exchanges.append(
        caller(ctx),
        agent_id=agent,
        lines=[Line("user", user), Line("assistant", assistant)],
        conversation_uuid=conversation_id,
    )
    return {
        "conversationId": logged.conversation.uuid,
        "seqs": [m.seq for m in logged.messages],
    }


# -- long-term memories -------------------------------------------------------------------


@lumina_errors
async def remember(ctx: Context, text: MemoryText, agent: AgentArg = None) -> dict[str, Any]:
    """Keep a durable fact about the person (shown on their Memory page, used in later
    answers). The same fact already known is not kept twice."""
    services = _services()
    assert services.memories is not None
    memory, new = await services.memories.create(
        caller(ctx),
        agent_id=agent or services.agents.default_id(),
        text=text,
        origin=f"added over MCP by {client_name(ctx)}",
    )
    return {"memory": _memory(memory), "new": new}


@lumina_errors
async def search_memories(
    ctx: Context,
    query: Annotated[str, Field(max_length=200, description="empty: the newest memories")],
    agent: AgentArg = None,
) -> dict[str, Any]:
    """What is known about the person, most relevant to the query first."""
    services = _services()
    assert services.memories is not None
    found = await services.memories.list(caller(ctx), agent_id=agent, query=query, limit=20)
    return {"memories": [_memory(m) for m in found]}


@lumina_errors
async def update_memory(ctx: Context, id: MemoryIdArg, text: MemoryText) -> dict[str, Any]:
    """Correct a memory's text in place (not a pinned one or one the person added by
    hand: only they can change those)."""
    services = _services()
    assert services.memories is not None
    edited = await services.memories.edit(caller(ctx), id, text=text, by_agent=True)
    return {"memory": _memory(edited)}


@lumina_errors
async def forget(ctx: Context, id: MemoryIdArg) -> dict[str, Any]:
    """Forget one memory for good: it is never used again (not a pinned one or one the
    person added by hand: only they can forget those)."""
    services = _services()
    assert services.memories is not None
    await services.memories.delete(caller(ctx), id, by_agent=True)
    return {"forgotten": id}


async def conversation_markdown(uuid: str, ctx: Context) -> str:
    """A conversation as Markdown (the archive's export)."""
    try:
        export = await _services().conversations.export(caller(ctx), uuid, ExportFormat.MD)
    except LuminaError as exc:
        raise ResourceError(f"{exc.code}: {exc}") from None
    return str(export.body)


READS = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
WRITES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, openWorldHint=False)
DELETES = ToolAnnotations(readOnlyHint=False, destructiveHint=True, openWorldHint=False)
TOOLS: list[tuple[Callable[..., Awaitable[dict[str, Any]]], ToolAnnotations]] = [
    (search_conversations, READS),
    (read_conversation, READS),
    (list_conversations, READS),
    (log_exchange, WRITES),
    (remember, WRITES),
    (search_memories, READS),
    (update_memory, DELETES),
    (forget, DELETES),
]


def build_server() -> MCPServer:
    server: MCPServer = MCPServer(
        name="lumina", title="Lumina", version=VERSION, instructions=INSTRUCTIONS
    )
    for fn, hints in TOOLS:
        description = " ".join((fn.__doc__ or "").split())
        server.add_tool(fn, description=description, annotations=hints)
    server.resource(
        RESOURCE,
        name="conversation",
        description="A Lumina conversation as Markdown",
        mime_type="text/markdown",
    )(conversation_markdown)
    return server
