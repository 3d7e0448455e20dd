"""What the OpenAI-compatible gateway reads and keeps of the cold store
(``services/openai_gateway.py``, ``services/openai_conversations.py``): the conversations
a re-sent history may continue, with the rows a client could have seen of each, and the
gateway's per-conversation meta. The queries are ``storage/sql/history_match.py``."""

from __future__ import annotations

from typing import Any

from lumina_app.domain import ConversationInfo, Msg
from lumina_app.storage.sql import history_match
from lumina_app.storage.sql.database import SQLDatabase


class GatewayHistory:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def opened_with(
        self, *, owner: str, agent_id: str, opening: str, limit: int
    ) -> dict[str, list[Msg]]:
        """Conversations of ``owner`` and ``agent_id`` that opened with a question of that
        hash (most recent first, at most ``limit``): the rows a client saw of each, by uuid."""
        ids = dict(
            await history_match.candidates(
                self.db, owner=owner, agent_id=agent_id, opening=opening, limit=limit
            )
        )
        rows = await history_match.seen_rows(self.db, list(ids))
        return {uuid: rows.get(cid, []) for cid, uuid in ids.items()}

    async def by_session_key(
        self, *, owner: str, agent_id: str, key_hash: str
    ) -> tuple[str, list[Msg]] | None:
        """The conversation a client's session key was recorded on, with the rows it could
        have seen of it; None if the key is new."""
        found = await history_match.by_session_key(
            self.db, owner=owner, agent_id=agent_id, key_hash=key_hash
        )
        if found is None:
            return None
        conversation_pk, uuid = found
        rows = await history_match.seen_rows(self.db, [conversation_pk])
        return uuid, rows.get(conversation_pk, [])

    async def gateway_meta(self, conversation: ConversationInfo) -> dict[str, Any]:
        return await history_match.gateway_meta(self.db, conversation.id)

    async def set_gateway_meta(
        self, conversation: ConversationInfo, *, opening: str | None, meta: dict[str, Any]
    ) -> None:
        """The opening hash (if given) and the meta; the conversation keeps its place."""
        await history_match.set_gateway_meta(self.db, conversation.id, opening=opening, meta=meta)
