"""The Conversations API's service: a Lumina conversation *is* an OpenAI conversation
(``conv_<uuid>``), its messages are its items (``msg_<message id>``). Metadata lives in the
conversation's gateway meta; the agent is ``metadata.agent``, else the default agent. A user
item's ``input_image`` and ``input_file`` parts are stored as the owner's files and linked to
its message, as a question's are (docs/FILES.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lumina_app.domain import (
    ConversationBusy,
    ConversationInfo,
    InvalidInput,
    MessageStatus,
    Msg,
    MsgRole,
    NotFound,
    Principal,
)
from lumina_app.domain.transcript import Line
from lumina_app.memory import MemoryManager
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.memory.gateway_history import GatewayHistory
from lumina_app.services.agents import AgentService
from lumina_app.services.gateway_files import GatewayFiles, InlineFile
from lumina_app.services.input_caps import InputCaps
from lumina_app.services.openai_gateway import history_rows
from lumina_app.services.responses import uuid_of
from lumina_app.services.runs import RunService

ITEM_PREFIX = "msg_"
AGENT_KEY = "agent"
# ``metadata: {"temporary": "true"}`` (metadata values are strings in the OpenAI shape):
# a temporary conversation, which neither reads nor writes long-term memory (#27).
TEMPORARY_KEY = "temporary"
_FLAGS = {"true": True, "false": False}
SHOWN_ROLES = (MsgRole.USER, MsgRole.ASSISTANT, MsgRole.SYSTEM)
HIDDEN_STATUSES = (MessageStatus.SUPERSEDED, MessageStatus.FAILED)


def item_id(message_id: int | None) -> str:
    return f"{ITEM_PREFIX}{message_id}"


def message_id_of(item: str) -> int:
    digits = item.removeprefix(ITEM_PREFIX)
    if not item.startswith(ITEM_PREFIX) or not (digits.isascii() and digits.isdigit()):
        raise NotFound(f"item {item!r} not found")
    if len(digits) > 18:  # past any row id, and past a BIGINT
        raise NotFound(f"item {item!r} not found")
    return int(digits)


def shown(msg: Msg) -> bool:
    """An item a client sees: a question, a shown answer or a system line (not TOOL rows,
    replaced or failed answers)."""
    return msg.role in SHOWN_ROLES and msg.status not in HIDDEN_STATUSES


def _temporary(metadata: dict[str, str], *, default: bool) -> bool:
    value = metadata.get(TEMPORARY_KEY)
    if value is None:
        return default
    if not isinstance(value, str) or value.lower() not in _FLAGS:
        raise InvalidInput('metadata.temporary must be "true" or "false"')
    return _FLAGS[value.lower()]


@dataclass(frozen=True, slots=True)
class ConversationView:
    conversation: ConversationInfo
    metadata: dict[str, str]


@dataclass(frozen=True, slots=True)
class ItemPage:
    items: list[Msg]
    has_more: bool


@dataclass(eq=False, repr=False)
class OpenAIConversations:
    memory: MemoryManager
    lookup: ConversationLookup
    agents: AgentService
    runs: RunService
    reads: ConversationReads
    gateway: GatewayHistory
    caps: InputCaps | None = None  # the gateway's: one set of caps for every door
    # the items' images and files (#48)
    files: GatewayFiles | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.caps = self.caps or InputCaps()

    async def create(
        self,
        principal: Principal,
        *,
        metadata: dict[str, str],
        items: list[Line],
        files: Sequence[tuple[InlineFile, ...]] = (),
    ) -> tuple[ConversationView, list[Msg]]:
        """``files``: each item's images and files, in the items' order."""
        self.caps.check(items, field="items")
        agent = self.agents.definition(metadata.get(AGENT_KEY) or self.agents.default_id())
        temporary = _temporary(metadata, default=False)
        first = next((line.text for line in items if line.role == "user"), "")
        rows, uploaded = await self._rows(principal, items, files)
        try:
            conversation = await self.memory.create_conversation(
                agent_id=agent.id, title=first[:80], owner=principal.owner, temporary=temporary
            )
            meta = {"metadata": metadata}
            await self.gateway.set_gateway_meta(conversation, opening=None, meta=meta)
            saved = await self._append(principal, conversation, rows)
        except BaseException:
            await self._discard(principal, uploaded)
            raise
        return ConversationView(conversation, metadata), saved

    async def get(self, principal: Principal, conversation: str) -> ConversationView:
        found = await self.lookup.find_visible(principal, uuid_of(conversation))
        meta = await self.gateway.gateway_meta(found)
        return ConversationView(found, dict(meta.get("metadata") or {}))

    async def update(
        self, principal: Principal, conversation: str, metadata: dict[str, str]
    ) -> ConversationView:
        """Replace the metadata (the agent a conversation is with does not change)."""
        view = await self.get(principal, conversation)
        agent = view.conversation.agent_id
        if metadata.get(AGENT_KEY, agent) != agent:
            raise InvalidInput(f"metadata.agent: this conversation is with {agent!r} for good")
        temporary = view.conversation.temporary
        if _temporary(metadata, default=temporary) != temporary:
            said = "temporary" if temporary else "not temporary"
            raise InvalidInput(f"metadata.temporary: this conversation is {said} for good")
        meta = await self.gateway.gateway_meta(view.conversation)
        await self.gateway.set_gateway_meta(
            view.conversation, opening=None, meta={**meta, "metadata": metadata}
        )
        return ConversationView(view.conversation, metadata)

    async def delete(self, principal: Principal, conversation: str) -> str:
        found = await self.lookup.find_visible(principal, uuid_of(conversation))
        await self.memory.delete(found)
        return found.uuid

    async def items(
        self,
        principal: Principal,
        conversation: str,
        *,
        limit: int,
        after: str | None,
        descending: bool,
    ) -> ItemPage:
        """A page of items, oldest first or newest first, after the item ``after``."""
        found = await self.lookup.find_visible(principal, uuid_of(conversation))
        seq: int | None = None
        if after is not None:
            seq = (await self._message(found, after)).seq
        if descending:
            before = seq if seq is not None else found.last_seq + 1
            rows = await self.reads.history(found, limit=limit + 1, before_seq=before)
            rows.reverse()
        else:
            rows = await self.reads.history(found, limit=limit + 1, after_seq=seq or 0)
        page = [row for row in rows[:limit] if shown(row)]
        return ItemPage(page, len(rows) > limit)

    async def add(
        self,
        principal: Principal,
        conversation: str,
        items: list[Line],
        files: Sequence[tuple[InlineFile, ...]] = (),
    ) -> list[Msg]:
        """``files``: each item's images and files, in the items' order."""
        self.caps.check(items, field="items")
        found = await self.lookup.find_visible(principal, uuid_of(conversation))
        # Never slip rows in beside a running turn: its answer's seq is already taken.
        running = await self.runs.running_in(principal, found.uuid)
        if running is not None:
            raise ConversationBusy(found.uuid, running)
        rows, uploaded = await self._rows(principal, items, files)
        try:
            return await self._append(principal, found, rows)
        except BaseException:
            await self._discard(principal, uploaded)
            raise

    async def _rows(
        self, principal: Principal, items: list[Line], files: Sequence[tuple[InlineFile, ...]]
    ) -> tuple[list[Msg], list[str]]:
        """The items' rows, a user item's files stored (uploaded, or the owner's looked up:
        another's is a 404) and named in its meta; the ids this call uploaded. A refusal
        deletes what it uploaded. An assistant's or system item's parts are not kept."""
        rows, uploaded = history_rows(items), []
        paired = zip(rows, files, strict=False)  # one row per item; no files: none given
        carrying = [(row, found) for row, found in paired if found and row.role is MsgRole.USER]
        if carrying and self.files is None:
            raise InvalidInput("items: this server keeps no files")
        try:
            for row, found in carrying:
                assert self.files is not None
                stored = await self.files.store(principal, None, found)
                uploaded.extend(stored.uploaded)
                row.meta["files"] = await self.runs.files_meta(principal, stored.ids)
        except BaseException:
            await self._discard(principal, uploaded)
            raise
        return rows, uploaded

    async def _append(
        self, principal: Principal, conversation: ConversationInfo, rows: list[Msg]
    ) -> list[Msg]:
        """Store the rows, then link each question to its files (their own transaction, as
        a run's question's links are)."""
        saved = await self.memory.append_history(conversation, rows)
        links = self.runs.attachments.links if self.runs.attachments is not None else None
        for msg in saved:
            if msg.files and links is not None:
                ids = [f["id"] for f in msg.files]
                await links.link(principal.owner, conversation.id, msg.seq, ids)
        return saved

    async def _discard(self, principal: Principal, uploaded: list[str]) -> None:
        if uploaded and self.files is not None:
            await self.files.discard(principal, uploaded)

    async def item(self, principal: Principal, conversation: str, item: str) -> Msg:
        found = await self.lookup.find_visible(principal, uuid_of(conversation))
        return await self._message(found, item)

    async def delete_item(
        self, principal: Principal, conversation: str, item: str
    ) -> ConversationView:
        """Remove an item (a message; an answer with its tool calls' results): gone from
        SQL, the window, recall and the archive. While a turn runs in the conversation,
        409 (its rows are not settled yet); another owner's item is not found."""
        found = await self.lookup.find_visible(principal, uuid_of(conversation))
        running = await self.runs.running_in(principal, found.uuid)
        if running is not None:
            raise ConversationBusy(found.uuid, running)
        message = await self._message(found, item)
        deleted = await self.memory.delete_message(found, message.id or 0)
        if deleted.busy:  # a run started between the check and the delete
            running = await self.runs.running_in(principal, found.uuid)
            raise ConversationBusy(found.uuid, running or "unknown")
        if not deleted.message_ids:
            raise NotFound(f"item {item!r} not found")
        return await self.get(principal, conversation)

    async def _message(self, conversation: ConversationInfo, item: str) -> Msg:
        rows = await self.reads.messages_by_id(conversation, [message_id_of(item)])
        if not rows or not shown(rows[0]):
            raise NotFound(f"item {item!r} not found")
        return rows[0]
