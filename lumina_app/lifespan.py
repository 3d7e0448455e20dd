"""Start-up and shutdown of process-wide resources (engines, pools, run recovery)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lumina_app import platform
from lumina_app.composition import install, open_services
from lumina_app.observability import logs, multiproc
from lumina_app.platform import gc_freeze
from lumina_app.settings import get_settings

log = logging.getLogger(__name__)


@asynccontextmanager
async def lumina_lifespan(app: Any = None) -> AsyncIterator[None]:
    """Open shared resources before the first request and close them at shutdown.

    Reflex mounts the FastAPI app, whose own ``lifespan=`` never runs, so this is
    registered with ``app.register_lifespan_task``. At start-up, runs that a crashed
    process left ``streaming`` are closed as ``interrupted``.
    """
    platform.check()  # an untested framework release fails start-up here, loudly
    settings = get_settings()
    logs.configure(settings.log_format)
    services = await open_services(settings)
    problem = await services.auth.exposure_problem()
    if problem is not None:
        await services.close()
        log.error("refusing to start: %s", problem)
        raise RuntimeError(problem)
    if services.embeddings is not None:  # its memory taken now, and frozen below with it
        await services.embeddings.warm()
    install(services)
    # Everything loaded so far lives for the whole process: out of the collector's walks.
    gc_freeze.freeze()
    log.info("lumina services open (hot window: %s)", services.memory.hot_backend)
    try:
        yield
    finally:
        install(None)
        await services.close()
        multiproc.worker_exited()
