"""The Conversations API: ``/v1/conversations[/{id}]`` and its items, in OpenAI's wire
format (services/openai_conversations.py). ``conv_<uuid>`` is the Lumina conversation of
that uuid; an item is one of its messages (``msg_<message id>``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path, Query

from lumina_app.api.auth import Caller
from lumina_app.api.deps import OpenAIConversationsDep
from lumina_app.api.openai_errors import openai_router
from lumina_app.api.responses_wire import item_list, message_item
from lumina_app.api.schemas_responses import (
    CreateConversation,
    CreateItems,
    UpdateConversation,
    inline_files,
)
from lumina_app.services.openai_conversations import ConversationView
from lumina_app.services.responses import conversation_id

router = openai_router()
ConversationId = Annotated[str, Path(max_length=128)]
ItemId = Annotated[str, Path(max_length=64)]


def _conversation(view: ConversationView) -> dict[str, Any]:
    return {
        "id": conversation_id(view.conversation.uuid),
        "object": "conversation",
        "created_at": int(view.conversation.created_at.timestamp()),
        "metadata": view.metadata,
    }


@router.post("/conversations")
async def create_conversation(
    body: CreateConversation, conversations: OpenAIConversationsDep, caller: Caller
) -> dict[str, Any]:
    """A new conversation with ``metadata.agent`` (else the default agent), holding
    ``items`` if given."""
    lines = [item.line() for item in body.items or []]
    files = [inline_files(item.attachments()) for item in body.items or []]
    view, _saved = await conversations.create(
        caller, metadata=body.metadata or {}, items=lines, files=files
    )
    return _conversation(view)


@router.get("/conversations/{conversation}")
async def get_conversation(
    conversation: ConversationId, conversations: OpenAIConversationsDep, caller: Caller
) -> dict[str, Any]:
    return _conversation(await conversations.get(caller, conversation))


@router.post("/conversations/{conversation}")
async def update_conversation(
    conversation: ConversationId,
    body: UpdateConversation,
    conversations: OpenAIConversationsDep,
    caller: Caller,
) -> dict[str, Any]:
    """Replace the conversation's metadata."""
    return _conversation(await conversations.update(caller, conversation, body.metadata))


@router.delete("/conversations/{conversation}")
async def delete_conversation(
    conversation: ConversationId, conversations: OpenAIConversationsDep, caller: Caller
) -> dict[str, Any]:
    """Its messages, runs, hot window and archive go, as with every delete."""
    uuid = await conversations.delete(caller, conversation)
    return {"id": conversation_id(uuid), "object": "conversation.deleted", "deleted": True}


@router.get("/conversations/{conversation}/items")
async def listitem_list(
    conversation: ConversationId,
    conversations: OpenAIConversationsDep,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    after: Annotated[str | None, Query(max_length=64)] = None,
    order: Literal["asc", "desc"] = "desc",
) -> dict[str, Any]:
    """Its messages, newest first unless ``order=asc``; ``after`` an item id."""
    page = await conversations.items(
        caller, conversation, limit=limit, after=after, descending=order == "desc"
    )
    return item_list(page.items, page.has_more)


@router.post("/conversations/{conversation}/items")
async def additem_list(
    conversation: ConversationId,
    body: CreateItems,
    conversations: OpenAIConversationsDep,
    caller: Caller,
) -> dict[str, Any]:
    """Append messages (stored as final rows, as the client gives them)."""
    lines = [item.line() for item in body.items]
    files = [inline_files(item.attachments()) for item in body.items]
    return item_list(await conversations.add(caller, conversation, lines, files))


@router.get("/conversations/{conversation}/items/{item}")
async def get_item(
    conversation: ConversationId,
    item: ItemId,
    conversations: OpenAIConversationsDep,
    caller: Caller,
) -> dict[str, Any]:
    return message_item(await conversations.item(caller, conversation, item))


@router.delete("/conversations/{conversation}/items/{item}")
async def delete_item(
    conversation: ConversationId,
    item: ItemId,
    conversations: OpenAIConversationsDep,
    caller: Caller,
) -> dict[str, Any]:
    """Remove an item (an answer goes with its tool calls' results); answers the
    conversation, as OpenAI does. 409 while a turn runs in the conversation."""
    return _conversation(await conversations.delete_item(caller, conversation, item))
