"""Conversation export: ``GET /api/v1/conversations/{id}/export?format=json|md|archive``."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from lumina_app.api.auth import Owner
from lumina_app.api.deps import ServicesDep, find_conversation
from lumina_app.domain import ConversationInfo

router = APIRouter(prefix="/api/v1", tags=["export"])


class ExportFormat(StrEnum):
    JSON = "json"
    MD = "md"
    ARCHIVE = "archive"


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
    services: ServicesDep,
    owner: Owner,
    export_format: Annotated[ExportFormat, Query(alias="format")] = ExportFormat.JSON,
) -> Response:
    """One conversation in the archive's shapes (DESIGN §7); someone else's is a 404."""
    conv = await find_conversation(services, conversation_id, owner=owner)
    if export_format is ExportFormat.JSON:
        body = await services.archive.document(conv)
        return JSONResponse(body, headers=_attachment(conv, "json"))
    if export_format is ExportFormat.MD:
        text = await services.archive.markdown(conv)
        return Response(
            text, media_type="text/markdown; charset=utf-8", headers=_attachment(conv, "md")
        )
    data = await services.archive.zip_archive(conv)
    return Response(data, media_type="application/zip", headers=_attachment(conv, "zip"))


def _attachment(conv: ConversationInfo, extension: str) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{conv.uuid}.{extension}"'}
