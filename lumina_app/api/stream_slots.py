"""At most LUMINA_MAX_STREAMS_PER_OWNER open SSE streams per owner (per worker process), so
one key cannot hold the server's connections (docs/SECURITY.md).

A stream route takes its slot as a dependency, before its body starts a run: a refused
stream (429, ``Retry-After``) has started nothing. The slot goes back when the stream is
over — the run ended, the client left or stopped reading, or the request failed before it
streamed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, FastAPI, Request

from lumina_app.api.auth import Caller
from lumina_app.api.deps import ServicesDep
from lumina_app.domain import TooManyStreams


class StreamSlots:
    """Open streams per owner, in this process."""

    def __init__(self) -> None:
        self._open: dict[str, int] = {}

    def take(self, owner: str, *, limit: int) -> StreamSlot:
        held = self._open.get(owner, 0)
        if held >= limit:
            raise TooManyStreams(limit)
        self._open[owner] = held + 1
        return StreamSlot(self, owner)

    def _give_back(self, owner: str) -> None:
        left = self._open[owner] - 1
        if left:
            self._open[owner] = left
        else:
            del self._open[owner]


class StreamSlot:
    """One owner's right to one open stream; :meth:`release` is idempotent."""

    __slots__ = ("_slots", "owner")

    def __init__(self, slots: StreamSlots, owner: str) -> None:
        self._slots: StreamSlots | None = slots
        self.owner = owner

    def release(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots._give_back(self.owner)


def stream_slots(app: FastAPI) -> StreamSlots:
    """The app's registry, made on first use (one app per worker process)."""
    slots = getattr(app.state, "stream_slots", None)
    if slots is None:
        slots = app.state.stream_slots = StreamSlots()
    return slots


async def _stream_slot(
    request: Request, caller: Caller, services: ServicesDep
) -> AsyncIterator[StreamSlot]:
    limit = services.settings.max_streams_per_owner
    slot = stream_slots(request.app).take(caller.owner, limit=limit)
    try:
        yield slot  # on success the route hands it to its EventStream, which releases it
    except BaseException:
        slot.release()  # the route failed (409, 404, ...): nothing will stream
        raise


StreamSlotDep = Annotated[StreamSlot, Depends(_stream_slot)]
