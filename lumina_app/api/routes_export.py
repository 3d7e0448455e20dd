"""Conversation export: ``GET /api/v1/conversations/{id}/export?format=json|md|archive``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from lumina_app.api.auth import Caller
from lumina_app.api.deps import ConversationsDep
from lumina_app.services.conversations import ExportFormat

router = APIRouter(prefix="/api/v1", tags=["export"])


@router.get(
    "/conversations/{conversation_id}/export",
    responses={
        200: {
            "description": "json: {meta, history}; md: a Markdown transcript; "
            "archive: a .zip of agents/<agentId>/conversations/<convId>/",
            "content": {"application/json": {}, "text/markdown": {}, "application/zip": {}},
        }
    },
)
async def export_conversation(
    conversation_id: str,
    conversations: ConversationsDep,
    caller: Caller,
    export_format: Annotated[ExportFormat, Query(alias="format")] = ExportFormat.JSON,
) -> Response:
    """A conversation in the archive's shapes (ARCHITECTURE.md § Archive); another's: 404."""
    export = await conversations.export(caller, conversation_id, export_format)
    headers = {"Content-Disposition": f'attachment; filename="{export.filename}"'}
    if export_format is ExportFormat.JSON:
        return JSONResponse(export.body, headers=headers)
    if export_format is ExportFormat.MD:
        return Response(export.body, media_type="text/markdown; charset=utf-8", headers=headers)
    return Response(export.body, media_type="application/zip", headers=headers)
