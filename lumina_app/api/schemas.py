"""Request and response bodies (Pydantic), and the converters from domain objects."""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StrictBool,
    model_validator,
)
from pydantic_core import core_schema

from lumina_app.domain import ConversationInfo, Msg, RunFinished
from lumina_app.domain.views import conversation_meta, history_entry, iso_us
from lumina_app.services.agents import AgentView
from lumina_app.services.health import Health as HealthReport
from lumina_app.services.runs import RunContext, RunView

Out = TypeVar("Out", bound=BaseModel)
_CAPITAL = re.compile(r"(?=[A-Z])")


def copied(model: type[Out], source: object, **given: Any) -> Out:
    """``model`` from ``source``: each field not ``given`` is ``source``'s attribute of the
    same name in snake_case (``agentId``: ``agent_id``), which each converter would otherwise
    spell out field by field; ``given`` are the fields that are not a plain copy."""
    plain = _attributes(model)
    return model(**{f: getattr(source, a) for f, a in plain if f not in given}, **given)


@functools.cache
def _attributes(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """Each field of ``model`` with its snake_case attribute name (once per model)."""
    return tuple((name, _CAPITAL.sub("_", name).lower()) for name in model.model_fields)


def _no_nul(value: str | None) -> str | None:
    if value is not None and "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


class SchemaNote:
    """Adds JSON-schema keywords to a field (to its string form, when it may be null) without
    changing how it is validated: the rule is enforced elsewhere, with a clearer message
    than a pattern mismatch would give. The OpenAPI schema then tells clients the rule."""

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords

    def __get_pydantic_json_schema__(
        self, core: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        schema = handler(core)
        strings = [b for b in schema.get("anyOf", []) if b.get("type") == "string"]
        for target in strings or [schema]:
            target.update(self.keywords)
        return schema


class _NoNul(SchemaNote):
    """Rejects NUL (422), and says so in the schema."""

    def __init__(self) -> None:
        super().__init__(pattern=r"^[^\x00]*$")

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(_no_nul, handler(source))


# Text that reaches SQL must not contain NUL (PostgreSQL refuses it): a 422 here, not a 500 there.
NoNul = _NoNul()
# A task or message: some non-blank text, no NUL (the engine answers 422 otherwise).
TaskText = SchemaNote(minLength=1, pattern=r"^[^\x00]*[^\s\x00][^\x00]*$")
# A page cursor is opaque: the ``nextCursor`` of the previous page (anything else is 422).
Cursor = SchemaNote(format="cursor", description="nextCursor of the previous page")


def _unicode(value: str | None) -> str | None:
    """JSON may escape a lone surrogate (``"\\ud800"``); no database can store it as text."""
    if value is not None:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("must be valid Unicode text (lone surrogate)") from None
    return value


Unicode = AfterValidator(_unicode)

# Seqs are 32-bit INTEGER columns; PostgreSQL refuses to compare with anything larger.
MAX_SEQ = 2**31 - 1


class StrictBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class OpenBody(BaseModel):
    """An OpenAI wire object: fields Lumina does not read are kept, not refused."""

    model_config = ConfigDict(extra="allow")


class CreateConversation(StrictBody):
    agent_id: str = Field(alias="agentId", min_length=1, max_length=64)
    title: Annotated[str | None, NoNul] = Field(default=None, max_length=255)
    # Nothing is read from or written to long-term memory in a temporary conversation.
    temporary: StrictBool = False


class EditConversation(StrictBody):
    """A new title, pinned or not, archived or not: at least one of them, none null (the
    schema says so with ``minProperties``)."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, json_schema_extra={"minProperties": 1}
    )

    # Absent is "left as it is"; null is refused (the types are not nullable).
    title: Annotated[str, NoNul] = Field(default=None, min_length=1, max_length=255)
    pinned: StrictBool = Field(default=None, description="kept on top of the list")
    archived: StrictBool = Field(
        default=None, description="out of the list (still open, searchable, exportable)"
    )

    @model_validator(mode="after")
    def _something_to_change(self) -> EditConversation:
        if not self.model_fields_set:
            raise ValueError("give a title, pinned or archived")
        return self


class ForkConversation(StrictBody):
    at_seq: int | None = Field(default=None, alias="atSeq", ge=1, le=MAX_SEQ)
    title: Annotated[str | None, NoNul] = Field(default=None, max_length=255)


class RegenerateBody(StrictBody):
    stream: StrictBool = True  # false: wait and answer in the execute/sync shape


class EditBody(StrictBody):
    """A question asked again in place: a new branch from it (``docs/API.md``)."""

    message: Annotated[str, Unicode, TaskText]
    stream: StrictBool = True  # false: wait and answer in the execute/sync shape


class BranchBody(StrictBody):
    """Which branch of an edited question to show (1-based)."""

    branch: int = Field(ge=1, le=MAX_SEQ)


class BranchSwitched(BaseModel):
    conversationId: str
    seq: int
    branch: int


# The ids of the caller's files a message carries (``POST /api/v1/files``), in order:
# at most LUMINA_MAX_FILES_PER_MESSAGE (413), each once (422), each the caller's (404).
FileIds = Annotated[
    list[Annotated[str, Field(max_length=64)]],
    # Left out of a dump when empty: an idempotency fingerprint of a send without files
    # stays what it was before files existed.
    Field(
        max_length=1000,
        description="ids of the caller's files the message carries, each once",
        exclude_if=lambda v: not v,
        json_schema_extra={"uniqueItems": True},  # checked by the service: a 422
    ),
]


class ExecuteBody(StrictBody):
    task: Annotated[str | None, Unicode, TaskText] = None
    conversation_id: str | None = Field(default=None, alias="conversationId", max_length=64)
    files: FileIds = []


class ChatBody(StrictBody):
    message: Annotated[str, Unicode, TaskText]
    conversation_id: str | None = Field(default=None, alias="conversationId", max_length=64)
    files: FileIds = []


class FileOnMessage(BaseModel):
    """A file a message carries, as sent: its id, name, sniffed type and size."""

    id: str
    name: str
    type: str
    size: int

    @classmethod
    def of(cls, entry: dict[str, Any]) -> FileOnMessage:
        return cls(
            id=str(entry.get("id", "")),
            name=str(entry.get("name", "")),
            type=str(entry.get("type", "")),
            size=int(entry.get("size") or 0),
        )


class ConversationOut(BaseModel):
    uuid: str
    agentId: str
    title: str
    status: str
    messageCount: int
    toolCallCount: int
    lastSeq: int
    createdAt: str
    updatedAt: str
    parentUuid: str | None = None  # a fork's original, and the last seq it copied
    forkedAtSeq: int | None = None
    # Only a temporary conversation has it (true). Left out by a field rule, not a model
    # serializer: the schema keeps every field for clients (lumina_client checks them).
    temporary: bool | None = Field(default=None, exclude_if=lambda v: not v)
    # Only a pinned conversation has ``pinned`` (true), only an archived one ``archivedAt``:
    # the seed's conversation shape is unchanged for the others (#45).
    pinned: bool | None = Field(default=None, exclude_if=lambda v: not v)
    archivedAt: str | None = Field(default=None, exclude_if=lambda v: v is None)

    @classmethod
    def of(cls, conv: ConversationInfo) -> ConversationOut:
        return copied(
            cls,
            conv,
            status=conv.status.value,
            createdAt=iso_us(conv.created_at),
            updatedAt=iso_us(conv.updated_at),
            temporary=True if conv.temporary else None,
            pinned=True if conv.pinned else None,
            archivedAt=iso_us(conv.archived_at) if conv.archived_at else None,
        )


class ConversationPage(BaseModel):
    items: list[ConversationOut]
    nextCursor: str | None


class MessageOut(BaseModel):
    id: int
    seq: int
    turnId: str
    role: str
    content: str
    status: str
    createdAt: str
    updatedAt: str
    meta: dict[str, Any]
    # An answer row's version among its turn's answers (1-based, seq order) and how many
    # the turn has; a regenerate adds one, the earlier ones are ``superseded``. Null on
    # questions.
    version: int | None = None
    versions: int | None = None
    # An edited question's branch among its versions (1-based) and how many there are;
    # absent on every other row (``docs/API.md``, "Branches").
    branch: int | None = Field(default=None, exclude_if=lambda v: v is None)
    branches: int | None = Field(default=None, exclude_if=lambda v: v is None)
    # The files a question carries (docs/FILES.md); absent on a message without any.
    files: list[FileOnMessage] | None = Field(default=None, exclude_if=lambda v: not v)

    @classmethod
    def of(
        cls,
        msg: Msg,
        version: tuple[int, int] | None = None,
        branch: tuple[int, int] | None = None,
    ) -> MessageOut:
        return copied(
            cls,
            msg,
            version=version[0] if version else None,
            versions=version[1] if version else None,
            branch=branch[0] if branch else None,
            branches=branch[1] if branch else None,
            id=msg.id or 0,
            role=msg.role.value,
            status=msg.status.value,
            createdAt=iso_us(msg.created_at),
            updatedAt=iso_us(msg.updated_at or msg.created_at),
            files=[FileOnMessage.of(f) for f in msg.files] or None,
        )


class MessagePage(BaseModel):
    items: list[MessageOut]
    nextAfter: int | None
    nextBefore: int | None = None


class RunAccepted(BaseModel):
    runId: str
    conversationId: str
    status: str
    scenario: str


class RunOut(BaseModel):
    runId: str
    conversationId: str
    agentId: str
    status: str
    scenario: str
    model: str
    messageId: int | None
    turnId: str | None = None
    content: str | None = None
    error: str | None = None
    startedAt: str | None = None
    finishedAt: str | None = None
    trimmed: int = Field(0, description="window messages the agent's token budget left out")

    @classmethod
    def of(cls, run: RunView) -> RunOut:
        return copied(
            cls,
            run,
            conversationId=run.conversation_uuid,
            status=run.status.value,
            scenario=run.scenario.value,
            startedAt=iso_us(run.started_at) if run.started_at else None,
            finishedAt=iso_us(run.finished_at) if run.finished_at else None,
        )


class SummaryOut(BaseModel):
    id: int | None = Field(description="the stored summary's id")
    coveredFromSeq: int = Field(1, description="a summary covers seqs coveredFromSeq..coveredToSeq")
    coveredToSeq: int
    text: str
    model: str


class WindowOut(BaseModel):
    firstSeq: int | None
    lastSeq: int | None


class EarlierOut(BaseModel):
    firstSeq: int
    lastSeq: int
    messages: int


class RecalledOut(BaseModel):
    messageId: int
    seq: int
    conversationId: str = Field(description="the conversation it was said in")
    title: str | None = Field(
        description="that conversation's title when the run was given the message (auto-recall "
        'with "scope": "all"); null for the run\'s own conversation'
    )
    createdAt: str | None


class FileSentOut(BaseModel):
    """What a run's context sent of one file: ``image`` (an image part), ``text``
    (``chars`` of its ``of`` characters) or ``placeholder`` (``[image: name]`` /
    ``[file: name]``)."""

    id: str
    name: str
    type: str
    sent: Literal["image", "placeholder", "text"]
    chars: int
    of: int


class RunContextOut(BaseModel):
    runId: str
    scenario: str
    model: str
    promptHash: str = Field(description="SHA-256 of the system prompt the run used")
    summary: SummaryOut | None
    window: WindowOut
    earlier: EarlierOut | None = Field(
        description="messages from before the window that no summary covered yet, sent "
        "verbatim after the summary (agents with memory.summary)"
    )
    trimmed: int
    tokens: int = Field(description="the estimated size of messages (docs/API.md)")
    messages: list[dict[str, Any]] = Field(
        description="as sent to the provider's last call (with the tool calls and results)"
    )
    calls: list[int] = Field(
        description="how many of messages each model call was sent, in order (tool steps "
        "call the model again with more)"
    )
    memories: list[int] = Field(
        default_factory=list,
        description="ids of the long-term memories the run was given (agents with "
        "memory.longTerm), in the order they were sent",
    )
    recalled: list[RecalledOut] = Field(
        default_factory=list,
        description="the earlier messages auto-recall put in (memory.autoRecall), in the "
        "order they were sent, each with the conversation it was said in",
    )
    files: list[FileSentOut] = Field(
        default_factory=list,
        description="what of each file of the context's questions was sent, the newest "
        "question's first (docs/FILES.md)",
    )

    @classmethod
    def of(cls, context: RunContext) -> RunContextOut:
        summary = context.summary
        return cls(
            runId=context.run_id,
            scenario=context.scenario.value,
            model=context.model,
            promptHash=context.prompt_hash,
            summary=SummaryOut(
                id=summary.id,
                coveredToSeq=summary.covered_to_seq,
                text=summary.text,
                model=summary.model,
            )
            if summary
            else None,
            window=WindowOut(firstSeq=context.window[0], lastSeq=context.window[1]),
            earlier=EarlierOut(
                firstSeq=context.earlier[0],
                lastSeq=context.earlier[1],
                messages=context.earlier[2],
            )
            if context.earlier
            else None,
            trimmed=context.trimmed,
            tokens=context.tokens,
            messages=context.messages,
            calls=context.calls,
            memories=context.memories,
            recalled=[
                RecalledOut(
                    messageId=r.message_id,
                    seq=r.seq,
                    conversationId=r.conversation_uuid,
                    title=r.title,
                    createdAt=iso_us(r.created_at) if r.created_at else None,
                )
                for r in context.recalled
            ],
            files=[FileSentOut(**f) for f in context.files],
        )


class SyncResult(BaseModel):
    runId: str
    conversationId: str
    messageId: int
    status: str
    answer: str
    scenario: str
    error: str | None = None
    usage: dict[str, int] = {}

    @classmethod
    def of(cls, result: RunFinished) -> SyncResult:
        return copied(
            cls,
            result,
            conversationId=result.conversation_uuid,
            status=result.status.value,
            answer=result.content,
            scenario=result.scenario.value,
            error=result.error or None,
        )


class AgentOut(BaseModel):
    id: str
    name: str
    description: str
    available: bool
    error: str | None = None
    provider: str
    model: str | None = None

    @classmethod
    def of(cls, agent: AgentView) -> Self:
        """Its fields are the view's own (an info adds the tools, each a ``ToolOut``)."""
        return cls.model_validate(agent, from_attributes=True)


class ToolOut(BaseModel):
    """A tool of an agent; a server that could not start is one entry named ``*``."""

    name: str
    source: str = Field(description="builtin, or mcp:<server>")
    description: str
    available: bool
    reason: str | None = None


class AgentInfoOut(AgentOut):
    tools: list[ToolOut]


class Stats(BaseModel):
    messageCount: int
    toolCallCount: int


class ConversationMeta(BaseModel):
    """The archive's meta.json shape."""

    conversationId: str
    agentId: str
    title: str
    createdAt: str
    updatedAt: str
    status: str
    stats: Stats

    @classmethod
    def of(cls, conv: ConversationInfo) -> ConversationMeta:
        return cls(**conversation_meta(conv))


class HistoryEntry(BaseModel):
    role: str
    content: str
    messageId: str
    timestamp: str | None
    id: int
    seq: int
    status: str
    # The files a question carries, as on the v1 messages route; absent without any.
    files: list[FileOnMessage] | None = Field(default=None, exclude_if=lambda v: not v)

    @classmethod
    def of(cls, msg: Msg) -> HistoryEntry:
        # history_entry names the status of a superseded answer itself (the archive's form)
        entry = {**history_entry(msg), "status": msg.status.value}
        files = [FileOnMessage.of(f) for f in msg.files] or None
        return cls(**entry, id=msg.id or 0, seq=msg.seq, files=files)


class ConversationDetail(BaseModel):
    meta: ConversationMeta
    messages: list[HistoryEntry]
    nextAfter: int | None


class AgentConversations(BaseModel):
    conversations: list[ConversationMeta]
    nextCursor: str | None


class Health(BaseModel):
    status: str
    database: str
    hotWindow: str
    hotWindowBackend: str
    version: str

    @classmethod
    def of(cls, health: HealthReport, version: str) -> Health:
        return copied(cls, health, status=health.overall.value, version=version)


class ErrorDetail(BaseModel):
    code: str
    message: str
    runId: str | None = Field(default=None, description="409 conversation_busy: the running run")


class ErrorOut(BaseModel):
    """Every error response: ``{"error": {"code", "message"}}``."""

    error: ErrorDetail


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the errors an operation can answer with (documentation only)."""
    described = {
        401: "Missing or invalid bearer key or session (when keys are configured)",
        403: "Not a loopback client (when no keys are configured), or a refused Host, Origin "
        "or cross-site request",
        404: "No such conversation, agent or run (also: someone else's)",
        409: "The conversation has a running run, or the agent is unavailable",
        413: "Request body or task over the limit",
        415: "Unsupported file type (sniffed from the bytes)",
        422: "Invalid input",
        429: "Too many failed sign-ins, or too many open streams for this caller "
        "(Retry-After: when to try again)",
        503: "The database is unavailable, or the server is at its connection cap",
    }
    return {s: {"model": ErrorOut, "description": described[s]} for s in statuses}


def stream_responses(description: str, *, openai: bool = False) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries of a route answering with SSE: its 200 (``description``), the 400 of
    OpenAI's error shape at the OpenAI doors, and the 429 of too many open streams."""
    invalid = {400: {"description": "Invalid request (OpenAI's error shape)"}} if openai else {}
    ok = {200: {"content": {"text/event-stream": {}}, "description": description}}
    return {**ok, **invalid, **error_responses(429)}
