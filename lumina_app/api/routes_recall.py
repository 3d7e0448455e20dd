"""Ranked recall: a question's most relevant earlier messages, in one conversation or
across the caller's (the same path as the ``recall`` tool and auto-recall)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.api.deps import RecallDep
from lumina_app.api.routes_search import SearchResults
from lumina_app.api.schemas import NoNul
from lumina_app.domain.search import MAX_RECALL_CHARS

router = APIRouter(prefix="/api/v1", tags=["search"], route_class=AuthenticatedRoute)
Limit = Annotated[int, Query(ge=1, le=50)]
# A question may be long (a person's message often is): longer than this is a 422.
RecallText = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_RECALL_CHARS,
        description=f"a question or words, at most {MAX_RECALL_CHARS} characters",
    ),
    NoNul,
]


@router.get(
    "/conversations/{conversation_id}/recall",
    response_model=SearchResults,
)
async def recall_conversation(
    conversation_id: str, recall: RecallDep, caller: Caller, q: RecallText, limit: Limit = 10
) -> Response:
    """The messages of one conversation most relevant to ``q`` (a question or words), best
    first: BM25 over each message with the one before it and its date, fused with
    embeddings. Not every word needs to match."""
    hits = await recall.in_conversation(caller, conversation_id, q, limit=limit)
    return SearchResults.response(hits)


@router.get("/recall", response_model=SearchResults)
async def recall_everywhere(
    recall: RecallDep,
    caller: Caller,
    q: RecallText,
    agent_id: Annotated[str | None, Query(alias="agentId", max_length=64), NoNul] = None,
    limit: Limit = 10,
) -> Response:
    """The caller's messages most relevant to ``q`` across their conversations, best first."""
    hits = await recall.everywhere(caller, q, agent_id=agent_id, limit=limit)
    return SearchResults.response(hits)
