"""Family A, Lumina v1: conversations, messages, execution (stream, async, sync)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Path, Query, Response

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import (
    ConversationsDep,
    IdempotencyDep,
    LastEventId,
    RunsDep,
)
from lumina_app.api.idempotency import IdempotencyKey, idempotent
from lumina_app.api.run_stream import AnsweringDep, Once
from lumina_app.api.schemas import (
    MAX_SEQ,
    BranchBody,
    BranchSwitched,
    ConversationOut,
    ConversationPage,
    CreateConversation,
    Cursor,
    EditBody,
    EditConversation,
    ExecuteBody,
    ForkConversation,
    MessageOut,
    MessagePage,
    NoNul,
    RegenerateBody,
    RunAccepted,
    SyncResult,
    TaskText,
    error_responses,
    stream_responses,
)
from lumina_app.domain import InvalidInput

router = APIRouter(prefix="/api/v1", tags=["v1"], route_class=AuthenticatedRoute)
Limit = Annotated[int, Query(ge=1, le=100)]
# A run started on a stored conversation (regenerate, an edit): streamed, or waited for.
RUN_RESPONSES = {
    200: {
        "content": {
            "text/event-stream": {},
            "application/json": {"schema": {"$ref": "#/components/schemas/SyncResult"}},
        },
        "description": 'SSE as execute/stream; with {"stream": false}, the execute/sync JSON',
    },
    **error_responses(409, 429),
}


@router.post("/conversations", status_code=201, response_model=ConversationOut)
async def create_conversation(
    body: CreateConversation,
    conversations: ConversationsDep,
    idempotency: IdempotencyDep,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> ConversationOut:
    async def create() -> dict:
        conv = await conversations.create(
            caller, agent_id=body.agent_id, title=body.title or "", temporary=body.temporary
        )
        return ConversationOut.of(conv).model_dump()

    return await idempotent(
        idempotency, caller.owner, idempotency_key, "create-conversation", body, create
    )


@router.get("/conversations", response_model=ConversationPage)
async def list_conversations(
    conversations: ConversationsDep,
    caller: Caller,
    agent_id: Annotated[str | None, Query(alias="agentId", max_length=64), NoNul] = None,
    limit: Limit = 20,
    after: Annotated[str | None, Query(max_length=200), Cursor] = None,
    q: Annotated[str | None, Query(max_length=200), NoNul] = None,
    pinned: Annotated[bool | None, Query()] = None,
    archived: Annotated[bool | None, Query()] = None,
) -> ConversationPage:
    """Newest activity first, every agent's unless ``agentId``; ``pinned``/``archived``
    true or false keep only the conversations that are or are not (absent: all)."""
    items, cursor = await conversations.list(
        caller,
        agent_id=agent_id,
        limit=limit,
        cursor=after,
        search=q,
        pinned=pinned,
        archived=archived,
    )
    return ConversationPage(items=[ConversationOut.of(c) for c in items], nextCursor=cursor)


@router.get("/conversations/{conversation_id}", response_model=ConversationOut)
async def get_conversation(
    conversation_id: str, conversations: ConversationsDep, caller: Caller
) -> ConversationOut:
    return ConversationOut.of(await conversations.get(caller, conversation_id))


@router.patch("/conversations/{conversation_id}", response_model=ConversationOut)
async def edit_conversation(
    conversation_id: str, body: EditConversation, conversations: ConversationsDep, caller: Caller
) -> ConversationOut:
    """Rename, pin or unpin, archive or unarchive: what the body names, the rest kept."""
    if body.title is not None:
        await conversations.rename(caller, conversation_id, body.title)
    return ConversationOut.of(
        await conversations.organize(
            caller, conversation_id, pinned=body.pinned, archived=body.archived
        )
    )


@router.post(
    "/conversations/{conversation_id}/fork", status_code=201, response_model=ConversationOut
)
async def fork_conversation(
    conversation_id: str,
    conversations: ConversationsDep,
    idempotency: IdempotencyDep,
    caller: Caller,
    body: Annotated[ForkConversation | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
) -> ConversationOut:
    """A new conversation with this one's messages up to ``atSeq`` (default: all)."""
    body = body or ForkConversation()

    async def fork() -> dict:
        conv = await conversations.fork(
            caller, conversation_id, at_seq=body.at_seq, title=body.title
        )
        return ConversationOut.of(conv).model_dump()

    request = {"conversation": conversation_id, **body.model_dump(by_alias=True)}
    return await idempotent(idempotency, caller.owner, idempotency_key, "fork", request, fork)


@router.post(
    "/conversations/{conversation_id}/regenerate",
    response_class=Response,
    responses=RUN_RESPONSES,
)
async def regenerate(
    conversation_id: str,
    asked: AnsweringDep,
    body: Annotated[RegenerateBody | None, Body()] = None,
    idempotency_key: IdempotencyKey = None,
    last_event_id: LastEventId = 0,
) -> Response:
    """Answer the conversation's last user message again; the previous answer stays
    stored as ``superseded`` (an earlier version). 409 while a run is active, 422 when
    there is no user message."""
    body = body or RegenerateBody()
    request = {"conversation": conversation_id, "stream": body.stream}
    once = Once(idempotency_key, "regenerate", request, last_event_id)
    return await once.answer(
        asked, lambda: asked.runs.regenerate(asked.caller, conversation_id), stream=body.stream
    )


Seq = Annotated[int, Path(ge=1, le=MAX_SEQ)]


@router.post(
    "/conversations/{conversation_id}/messages/{seq}/edit",
    response_class=Response,
    responses=RUN_RESPONSES,
)
async def edit_message(
    conversation_id: str,
    seq: Seq,
    body: EditBody,
    asked: AnsweringDep,
    idempotency_key: IdempotencyKey = None,
    last_event_id: LastEventId = 0,
) -> Response:
    """Ask the question at ``seq`` again as ``message``: a new branch of the conversation
    from there, answered like a send; the old branch stays stored (``superseded`` with
    ``meta.parked``) and comes back with a switch. 404 when ``seq`` is not a question on
    the active branch, 409 while a run is active."""
    request = {"conversation": conversation_id, "seq": seq, **body.model_dump()}
    once = Once(idempotency_key, "edit", request, last_event_id)
    return await once.answer(
        asked,
        lambda: asked.runs.edit(asked.caller, conversation_id, seq, body.message),
        stream=body.stream,
    )


@router.post(
    "/conversations/{conversation_id}/messages/{seq}/branch",
    response_model=BranchSwitched,
    responses=error_responses(409),
)
async def switch_branch(
    conversation_id: str, seq: Seq, body: BranchBody, runs: RunsDep, caller: Caller
) -> BranchSwitched:
    """Show branch ``branch`` of the edited question at ``seq`` (any of its versions on
    the active branch): everything after it switches with it. 404 when ``seq`` is not a
    question on the active branch, 422 for a branch it does not have, 409 while a run is
    active."""
    await runs.switch_branch(caller, conversation_id, seq, body.branch)
    return BranchSwitched(conversationId=conversation_id, seq=seq, branch=body.branch)


@router.delete("/conversations/{conversation_id}", status_code=204)
async def delete_conversation(
    conversation_id: str, conversations: ConversationsDep, caller: Caller
) -> Response:
    await conversations.delete(caller, conversation_id)
    return Response(status_code=204)


@router.get("/conversations/{conversation_id}/messages", response_model=MessagePage)
async def list_messages(
    conversation_id: str,
    conversations: ConversationsDep,
    caller: Caller,
    limit: Limit = 50,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
    before: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
    branches: Literal["active", "all"] = "active",
) -> MessagePage:
    """Ordered by seq. ``after`` pages forward; ``before`` gives the page ending before a
    seq (the UI's scroll-up); both bound a range; neither gives the first page.
    ``nextAfter`` / ``nextBefore`` continue forward / backward within the range asked for.
    The active branch's rows; ``branches=all`` adds the other branches' (``superseded``,
    with ``meta.parked``); an edited question has ``branch`` / ``branches``."""
    _conv, page = await conversations.messages(
        caller,
        conversation_id,
        limit=limit,
        after=after,
        before=before,
        parked=branches == "all",
    )
    return MessagePage(
        items=[
            MessageOut.of(m, page.versions.get(m.seq), page.branches.get(m.seq)) for m in page.items
        ],
        nextAfter=page.next_after,
        nextBefore=page.next_before,
    )


TaskQuery = Annotated[str | None, Query(max_length=1_000_000), TaskText]
ConversationQuery = Annotated[str | None, Query(alias="conversationId", max_length=64)]
OptionalBody = Annotated[ExecuteBody | None, Body()]


@dataclass(frozen=True)
class Execution:
    """What the three execute routes take: a task and an optional conversation, from the
    query string or a JSON body (for long inputs)."""

    agent_id: str
    text: str
    conversation: str | None
    files: tuple[str, ...] = ()

    def fingerprint(self) -> dict[str, Any]:
        """What a retry with the same Idempotency-Key must repeat (files: without any, the
        fingerprint of a send before files existed)."""
        found: dict[str, Any] = {
            "agent": self.agent_id,
            "task": self.text,
            "conversation": self.conversation,
        }
        return found | ({"files": list(self.files)} if self.files else {})

    def run_keywords(self) -> dict[str, Any]:
        """The run it asks for (``RunService.start_run``'s keywords)."""
        return {
            "agent_id": self.agent_id,
            "message": self.text,
            "conversation_uuid": self.conversation,
            "files": self.files,
        }


async def execution(
    agent_id: str,
    task: TaskQuery = None,
    conversation_id: ConversationQuery = None,
    body: OptionalBody = None,
) -> Execution:
    text = task if task is not None else (body.task if body else None)
    files = tuple(body.files) if body else ()
    if text is None and files:
        text = ""  # files say enough on their own
    if text is None:
        raise InvalidInput("task is required (query parameter or JSON body)")
    from_body = body.conversation_id if body and body.conversation_id else None
    return Execution(agent_id, text, conversation_id or from_body or None, files)


ExecutionDep = Annotated[Execution, Depends(execution)]


@router.post(
    "/agents/{agent_id}/execute/stream",
    response_class=Response,
    responses=stream_responses("SSE: chunk… then done"),
)
async def execute_stream(
    job: ExecutionDep,
    asked: AnsweringDep,
    idempotency_key: IdempotencyKey = None,
    last_event_id: LastEventId = 0,
) -> Response:
    """A retry with the same Idempotency-Key gets the same run's stream, from after its
    Last-Event-ID if it sends one (a reconnect)."""

    once = Once(idempotency_key, "execute-stream", job.fingerprint(), last_event_id)
    return await once.answer(
        asked, lambda: asked.runs.start_run(asked.caller, **job.run_keywords())
    )


@router.post(
    "/agents/{agent_id}/execute",
    status_code=202,
    response_model=RunAccepted,
    responses=error_responses(429),  # the owner's cap of runs going at once
)
async def execute(
    job: ExecutionDep,
    runs: RunsDep,
    idempotency: IdempotencyDep,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> RunAccepted:
    async def start_run() -> dict:
        run = await runs.start_run(caller, **job.run_keywords())
        return RunAccepted(
            runId=run.run_id,
            conversationId=run.conversation.uuid,
            status="running",
            scenario=run.scenario.value,
        ).model_dump()

    return await idempotent(
        idempotency, caller.owner, idempotency_key, "execute", job.fingerprint(), start_run
    )


@router.post(
    "/agents/{agent_id}/execute/sync", response_model=SyncResult, responses=error_responses(429)
)
async def execute_sync(
    job: ExecutionDep,
    runs: RunsDep,
    idempotency: IdempotencyDep,
    caller: Caller,
    idempotency_key: IdempotencyKey = None,
) -> SyncResult:
    async def run() -> dict:
        return SyncResult.of(await runs.execute_sync(caller, **job.run_keywords())).model_dump()

    return await idempotent(
        idempotency, caller.owner, idempotency_key, "execute-sync", job.fingerprint(), run
    )
