"""The stream routes' slot (``services/stream_cap.py``): taken as a dependency, before a
route's body starts a run, so a refused stream (429, ``Retry-After``) has started nothing.
The slot goes back when the stream is over — the run ended, the client left or stopped
reading, or the request failed before it streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends

from lumina_app.api.auth import Caller
from lumina_app.api.deps import StreamsDep
from lumina_app.services.stream_cap import StreamSlot


async def _stream_slot(caller: Caller, streams: StreamsDep) -> AsyncIterator[StreamSlot]:
    slot = await streams.take(caller.owner)
    try:
        yield slot  # on success the route hands it to its EventStream, which releases it
    except BaseException:
        slot.release()  # the route failed (409, 404, ...): nothing will stream
        raise


StreamSlotDep = Annotated[StreamSlot, Depends(_stream_slot)]
