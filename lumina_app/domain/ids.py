"""A conversation's two ids, one name and one type each.

``ConversationPk`` is the integer row key the storage layer joins on (its SQL column is
``conversation_id``); ``ConversationUuid`` is the public id a caller names a conversation
by, already checked for shape. The two never share a name, so a row key cannot be sent
where a public id is expected, or the other way round.
"""

from __future__ import annotations

from typing import NewType

from lumina_app.domain.access import is_conversation_id
from lumina_app.domain.errors import ConversationNotFound

ConversationPk = NewType("ConversationPk", int)
ConversationUuid = NewType("ConversationUuid", str)


def parse_conversation_uuid(value: object, *, named: str | None = None) -> ConversationUuid:
    """The one check of a public id's shape, made where a request enters the services: a
    uuid or an imported foreign id passes; anything else cannot name a conversation and is
    not found without touching the store. ``named`` is what the caller wrote, when the
    id was cut out of it (``conv_<uuid>``): the not-found error names that."""
    if not is_conversation_id(value):
        raise ConversationNotFound(str(value) if named is None else named)
    return ConversationUuid(value)
