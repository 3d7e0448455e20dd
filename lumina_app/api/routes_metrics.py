"""``GET /metrics``: Prometheus's text format, merged over every worker process. Behind the
same trust rule as every route (loopback without keys, else a key): metrics name agents
and tools, which is not for everyone."""

from __future__ import annotations

from fastapi import APIRouter, Response

from lumina_app.api.auth import AuthenticatedRoute, Caller
from lumina_app.observability.metrics import exposition

router = APIRouter(tags=["metrics"], route_class=AuthenticatedRoute)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}},
)
async def metrics(_caller: Caller) -> Response:
    body, content_type = exposition()
    return Response(body, media_type=content_type)
