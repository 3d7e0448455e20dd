"""The stream routes' slot (``services/stream_cap.py``): taken as a dependency, before a
route's body starts a run, so a refused stream (429, ``Retry-After``) has started nothing.
The slot goes back when the stream is over — the run ended, the client left or stopped
reading, or the request failed before it streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends

from lumina_app.api.auth import Caller
from lumina_app.api.deps import ServicesDep
from lumina_app.composition import Services
from lumina_app.domain import Principal
from lumina_app.services.stream_cap import StreamSlot


async def take_stream_slot(services: Services, caller: Principal) -> StreamSlot:
    """The caller's slot for one more stream, or TooManyStreams (429)."""
    limit = services.settings.max_streams_per_owner
    return await services.streams.take(caller.owner, limit=limit)


async def _stream_slot(caller: Caller, services: ServicesDep) -> AsyncIterator[StreamSlot]:
    slot = await take_stream_slot(services, caller)
    try:
        yield slot  # on success the route hands it to its EventStream, which releases it
    except BaseException:
        slot.release()  # the route failed (409, 404, ...): nothing will stream
        raise


StreamSlotDep = Annotated[StreamSlot, Depends(_stream_slot)]
