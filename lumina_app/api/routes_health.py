"""``/healthz``: database, hot-window and connection status, and the version. Open to all
callers so load balancers can use it; it reveals no data."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from lumina_app.api.deps import HealthDep
from lumina_app.api.schemas import Health

router = APIRouter(tags=["health"])
VERSION = "0.1.0"


def _reflex_version() -> str:
    try:
        return version("reflex")
    except PackageNotFoundError:
        return "unknown"


@router.get("/healthz", response_model=Health)
async def healthz(request: Request, health: HealthDep) -> JSONResponse:
    """``degraded`` also when this worker is nearly at its connection cap: a balancer should
    send new clients elsewhere before they get 503."""
    found = await health.check(nearly_full=request.app.state.in_flight.nearly_full)
    body = Health.of(found, f"lumina {VERSION} (reflex {_reflex_version()})")
    return JSONResponse(body.model_dump(), status_code=503 if body.status == "down" else 200)
