"""An SSE stream's watch lets go of the request when the stream ends, even when the
server keeps the pending receive future (granian does, for the connection's life)."""

import asyncio
import gc

from lumina_app.api.sse import _Watch


class ServerFuture:
    """Like granian's receive future: still pending when the stream ends, held by the
    server, and its callbacks kept when cancelled."""

    _asyncio_future_blocking = False

    def __init__(self) -> None:
        self.callbacks: list = []
        self.cancelled_by_app = False

    def add_done_callback(self, callback) -> None:
        self.callbacks.append(callback)

    def remove_done_callback(self, callback) -> int:
        before = len(self.callbacks)
        self.callbacks = [c for c in self.callbacks if c != callback]
        return before - len(self.callbacks)

    def cancel(self) -> bool:
        self.cancelled_by_app = True
        return True


async def test_an_ended_streams_watch_is_freed_while_the_server_keeps_its_future() -> None:
    held_by_server: list[ServerFuture] = []

    def receive():
        future = ServerFuture()
        held_by_server.append(future)
        return future

    def watches() -> int:
        gc.collect()
        return sum(isinstance(o, _Watch) for o in gc.get_objects())

    before = watches()
    watch = _Watch(15.0, 30.0, receive, asyncio.current_task())
    watch.reset()
    watch.stop()
    del watch
    assert held_by_server and held_by_server[0].cancelled_by_app
    assert held_by_server[0].callbacks == []
    assert watches() == before, "the ended stream's watch (and its request) stayed alive"
