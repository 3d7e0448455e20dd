"""``Idempotency-Key`` on the POSTs that create: a retry with the same key and request gets
the first response and creates nothing; the same key with another request is a 422.

What is deleted is gone: a record is replayed for LUMINA_IDEMPOTENCY_TTL_SECONDS (24 h)
at most, and is deleted with the response, run or conversation it names; a retry after
that finds no record and is a new request (docs/SECURITY.md)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Header
from pydantic import BaseModel

from lumina_app.composition import IdempotencyStore
from lumina_app.domain import InvalidInput, RequestInProgress, StoreUnavailable
from lumina_app.services.runs import RunService

log = logging.getLogger(__name__)
IdempotencyKey = Annotated[str | None, Header(alias="Idempotency-Key", max_length=255)]


def _fingerprint(scope: str, request: BaseModel | dict[str, Any]) -> str:
    data = request.model_dump(by_alias=True) if isinstance(request, BaseModel) else request
    raw = json.dumps([scope, data], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


async def idempotent(
    store: IdempotencyStore,
    owner: str,
    key: str | None,
    scope: str,
    request: BaseModel | dict[str, Any],
    action: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    if not key:
        return await action()
    fingerprint = _fingerprint(scope, request)
    claim = await store.claim(owner, key, fingerprint)
    if claim is None:
        return await _replay(store, owner, key, fingerprint)
    stop = asyncio.Event()
    keeper = asyncio.create_task(_keep_alive(store, claim, store.lease / 3, stop))
    try:
        response = await action()
    except BaseException:
        await _stop(keeper, stop)
        await store.release(claim)
        raise
    await _stop(keeper, stop)
    await store.complete(claim, response)
    return response


async def _keep_alive(store: Any, claim: Any, interval: float, stop: asyncio.Event) -> None:
    """Renew the claim while its request runs (execute/sync can take minutes): a claim not
    renewed for a whole lease is taken as its holder's process having died."""
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)
        if stop.is_set():
            return
        try:
            if not await store.keep_alive(claim):
                log.warning("Idempotency-Key %r was taken over by a retry", claim.key)
                return
        except StoreUnavailable as exc:  # the next renewal may get through
            log.warning("Idempotency-Key %r not renewed: %s", claim.key, exc)


async def _stop(keeper: asyncio.Task, stop: asyncio.Event) -> None:
    """Let a renewal under way finish rather than cancel it mid-statement."""
    stop.set()
    await asyncio.shield(keeper)


async def _replay(
    store: IdempotencyStore, owner: str, key: str, fingerprint: str
) -> dict[str, Any]:
    record = await store.get(owner, key)
    if record is None:  # the first request failed and let go of the key meanwhile
        raise RequestInProgress("a request with this Idempotency-Key just failed; retry")
    if record.fingerprint != fingerprint:
        raise InvalidInput("Idempotency-Key was already used with a different request")
    if record.response is None:
        raise RequestInProgress("a request with this Idempotency-Key is still in progress")
    return record.response


async def idempotent_run(
    store: IdempotencyStore,
    runs: RunService,
    owner: str,
    key: str | None,
    scope: str,
    request: BaseModel | dict[str, Any],
    begin: Callable[[], Awaitable[str]],
) -> tuple[str, bool]:
    """Start a run once per key: its id, and whether this request was a retry of the one
    that started it (a stream retried with Last-Event-ID is a reconnect)."""
    started = False

    async def action() -> dict[str, Any]:
        nonlocal started
        run_id = await begin()
        started = True
        return {"runId": run_id}

    accepted = await idempotent(store, owner, key, scope, request, action)
    if not started and await runs.records.get_run(accepted["runId"], owner=owner) is None:
        # The run was deleted (with its conversation) since: its key is free again.
        await store.run_deleted(owner, accepted["runId"])
        accepted = await idempotent(store, owner, key, scope, request, action)
    return accepted["runId"], not started
