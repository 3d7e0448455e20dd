"""Plain dicts the components render: the UI never holds domain objects in state."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TypedDict

from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    LuminaError,
    Msg,
    MsgRole,
    RunEvent,
    RunFinished,
    SessionStarted,
    StoreUnavailable,
)
from lumina_app.domain.views import iso_ms
from lumina_app.services.search import SearchHit
from lumina_app.ui.routes import chat_url
from lumina_app.ui.view_models.file_views import FileView, message_files
from lumina_app.ui.view_models.tool_views import ToolView, stored_cards


class StepView(TypedDict):
    """An earlier step of an answer: what it said and the tools it called, shown inline
    in the one message of its turn (``ui.view_models.turns``)."""

    seq: int
    content: str
    thinking: str
    tools: list[ToolView]


class MessageView(TypedDict):
    key: str
    id: int
    seq: int
    role: str
    content: str
    status: str
    error: str
    time: str
    run: str  # the run that wrote an answer ("" for questions): its context can be shown
    tools: list[ToolView]  # an answer's calls; a TOOL row's own result (until paired)
    turn: str  # the turn id shared by a question and every version of its answer
    thinking: str  # what a reasoning model thought before this answer ("" if nothing)
    # Set by ``ui.versions.arrange``: this row's version of its turn's answer, how many
    # there are, whether it is hidden (another version is shown), whether it carries the
    # "n / m" switcher (the last row shown of a turn with several), and whether it is the
    # last answer on the page (the one regenerate replaces).
    version: int
    versions: int
    hidden: bool
    switcher: bool
    last: bool
    # Set for display by ``ui.view_models.turns.one_per_turn``: the earlier steps of the
    # run this answer ends (their rows folded into this one message).
    steps: list[StepView]
    memories: int  # long-term memories the answer's run was given ("Used N memories")
    # An edited question: its branch and how many there are (the "< k / n >" switcher);
    # 0 / 0 on every other row.
    branch: int
    branches: int
    files: list[FileView]  # a question's attached files (#48); [] on every other row


# What a row says about versions until ``ui.versions.arrange`` has looked at its page
# (and about steps until ``one_per_turn`` has: none; never mutated in place).
UNARRANGED = {
    "version": 1,
    "versions": 1,
    "hidden": False,
    "switcher": False,
    "last": False,
    "steps": [],
    "memories": 0,
    "branch": 0,
    "branches": 0,
}


class HitView(TypedDict):
    """A search hit in the sidebar: its snippet is escaped HTML with <mark>ed matches."""

    key: str
    url: str
    title: str
    snippet: str
    role: str
    time: str


class ConversationView(TypedDict):
    uuid: str
    title: str
    status: str
    updated: str
    count: int
    forked: bool  # a fork of another conversation (marked in the list)
    temporary: bool  # kept out of long-term memory (marked in the list)
    agent_id: str  # whose conversation it is: the list spans every agent (#45)
    agent: str  # that agent's name, shown on the row
    pinned: bool
    archived: bool


def message_view(msg: Msg, branch: tuple[int, int] | None = None) -> MessageView:
    """A stored row; ``branch``: an edited question's (branch, branches)."""
    branch_of, branches = branch or (0, 0)
    return MessageView(
        key=f"m{msg.id}",
        id=msg.id or 0,
        seq=msg.seq,
        role=msg.role.value.lower(),
        content=msg.content,
        status=msg.status.value,
        error=str(msg.meta.get("error") or ""),
        time=iso_ms(msg.created_at) if msg.created_at else "",
        run=str(msg.meta.get("runId") or "") if msg.role is MsgRole.ASSISTANT else "",
        tools=stored_cards(msg),
        turn=msg.turn_id,
        thinking=str(msg.meta.get("thinking") or ""),
        files=message_files(msg.meta) if msg.role is MsgRole.USER else [],
        **(
            UNARRANGED | {"memories": used_memories(msg), "branch": branch_of, "branches": branches}
        ),
    )


def used_memories(msg: Msg) -> int:
    """How many long-term memories the run that wrote this answer was given (the ids are
    kept in the answer's meta when its context is built, so no read is needed to say so)."""
    ids = msg.meta.get("memories") if msg.role is MsgRole.ASSISTANT else None
    return len(ids) if isinstance(ids, list) else 0


def question_view(
    session: SessionStarted, text: str, files: list[FileView] | None = None
) -> MessageView:
    """The question of a run, as its ``session`` event says it was stored (with the files
    the page sent with it)."""
    return MessageView(
        key=f"m{session.user_message_id}",
        id=session.user_message_id,
        seq=session.user_seq,
        role="user",
        content=text,
        status="complete",
        error="",
        time=session.created_at,
        run="",
        tools=[],
        turn=session.turn_id,
        thinking="",
        files=list(files or []),
        **UNARRANGED,
    )


async def no_events() -> AsyncIterator[RunEvent | None]:
    """An empty event stream (a run that is gone)."""
    return
    yield


def answer_view(result: RunFinished, seq: int, time: str, thinking: str = "") -> MessageView:
    """The finished answer of a run, from its ``result`` event."""
    return MessageView(
        key=f"m{result.message_id}",
        id=result.message_id,
        seq=seq,
        role="assistant",
        content=result.content,
        status=result.status.value,
        error=result.error or "",
        time=time,
        run=result.run_id,
        tools=[],
        turn=result.turn_id,
        thinking=thinking,
        files=[],
        **UNARRANGED,
    )


def conversation_view(conv: ConversationInfo, agent_name: str = "") -> ConversationView:
    return ConversationView(
        uuid=conv.uuid,
        title=conv.title or "Untitled",
        status=conv.status.value,
        updated=iso_ms(conv.updated_at),
        count=conv.message_count,
        forked=conv.parent_uuid is not None,
        temporary=conv.temporary,
        agent_id=conv.agent_id,
        agent=agent_name or conv.agent_id,
        pinned=conv.pinned,
        archived=conv.archived_at is not None,
    )


def explain(exc: LuminaError) -> str:
    """A failed send, said for people."""
    if isinstance(exc, ConversationBusy):
        return "This conversation is still answering another message. Wait for it or press Stop."
    if isinstance(exc, StoreUnavailable):
        return "The database is unreachable, so the message was not sent. Try again shortly."
    return str(exc)


def hit_view(hit: SearchHit, agent_id: str) -> HitView:
    return HitView(
        key=f"{hit.conversation_uuid}:{hit.seq}",
        url=chat_url(agent_id, hit.conversation_uuid) + f"?seq={hit.seq}",
        title=hit.title or "Untitled",
        snippet=hit.snippet,
        role=hit.role.lower(),
        time=iso_ms(hit.created_at),
    )
