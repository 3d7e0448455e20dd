"""LangChain's chat history over one Lumina conversation (``pip install
'lumina-client[langchain]'``), so ``RunnableWithMessageHistory`` keeps its history in
Lumina: searchable, in the hot window, read for long-term memories, on the chat page.

Messages are appended without running a model (the Conversations API's items:
``POST /v1/conversations/conv_<id>/items``). Human, AI and system messages are kept; a
``ToolMessage`` or a function message is refused (Lumina stores tool rows of its own runs
only). ``clear()`` removes every message, one by one; the conversation itself stays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from lumina_client.async_client import AsyncLumina
from lumina_client.client import Lumina
from lumina_client.errors import NotFoundError
from lumina_client.models import Message

_ROLES = {"human": "user", "ai": "assistant", "system": "system"}
_HIDDEN = {"superseded", "failed"}  # replaced or failed answers: not part of the history


def to_langchain(message: Message) -> BaseMessage | None:
    """A stored message as LangChain's; None for what a history does not show (tool rows,
    replaced or failed answers)."""
    if message.status in _HIDDEN:
        return None
    kind = {"USER": HumanMessage, "ASSISTANT": AIMessage, "SYSTEM": SystemMessage}.get(message.role)
    return kind(content=message.content, id=str(message.id)) if kind else None


def to_lumina(message: BaseMessage) -> tuple[str, str]:
    role = _ROLES.get(message.type)
    if role is None:
        raise ValueError(f"Lumina keeps human, ai and system messages, not {message.type!r}")
    return role, message.text if hasattr(message, "text") else str(message.content)


class LuminaChatMessageHistory(BaseChatMessageHistory):
    """``LuminaChatMessageHistory(conversation_id, client=Lumina(...))``; pass an
    ``AsyncLumina`` as ``async_client`` for the async methods to use it (else they run the
    sync client in a thread). ``LuminaChatMessageHistory.new(agent, client=...)`` starts a
    new conversation."""

    def __init__(
        self,
        conversation_id: str,
        *,
        client: Lumina,
        async_client: AsyncLumina | None = None,
    ) -> None:
        self.conversation_id = conversation_id
        self.client = client
        self.async_client = async_client

    @classmethod
    def new(
        cls,
        agent: str,
        *,
        client: Lumina,
        async_client: AsyncLumina | None = None,
        title: str | None = None,
    ) -> LuminaChatMessageHistory:
        conversation = client.conversations.create(agent, title=title)
        return cls(conversation.id, client=client, async_client=async_client)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        stored = self.client.messages.list(self.conversation_id)
        return [m for m in map(to_langchain, stored) if m is not None]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            self.client.messages.append(self.conversation_id, [to_lumina(m) for m in messages])

    def clear(self) -> None:
        for message in list(self.client.messages.list(self.conversation_id)):
            try:  # an answer's delete takes its tool rows along: those may be gone already
                self.client.messages.delete(self.conversation_id, message.id)
            except NotFoundError:
                continue

    async def aget_messages(self) -> list[BaseMessage]:
        if self.async_client is None:
            return await asyncio.to_thread(lambda: self.messages)
        found = []
        async for stored in self.async_client.messages.list(self.conversation_id):
            message = to_langchain(stored)
            if message is not None:
                found.append(message)
        return found

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if self.async_client is None:
            await asyncio.to_thread(self.add_messages, messages)
        elif messages:
            lines = [to_lumina(m) for m in messages]
            await self.async_client.messages.append(self.conversation_id, lines)

    async def aclear(self) -> None:
        if self.async_client is None:
            await asyncio.to_thread(self.clear)
            return
        stored = [m async for m in self.async_client.messages.list(self.conversation_id)]
        for message in stored:
            try:
                await self.async_client.messages.delete(self.conversation_id, message.id)
            except NotFoundError:
                continue
