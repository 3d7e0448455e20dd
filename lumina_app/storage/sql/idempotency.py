"""Idempotency keys in SQL: claim a key, keep the claim alive while the request runs, then
record the response it got. A claim whose holder stopped keeping it alive for longer than a
lease (its process died) may be taken over by a retry. A record lives ``ttl`` seconds from
its request: older, it is never replayed and is swept; and it goes as soon as what its
response names (a run, a conversation) is deleted (``forget``)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from lumina_app.domain import ConversationInfo, utcnow
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import idempotency as I


@dataclass(slots=True)
class IdempotencyRecord:
    fingerprint: str
    response: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Claim:
    """A key held by this request: ``token`` tells it from a retry that took it over."""

    owner: str
    key: str
    token: str


_FORGET_BATCH = 50  # references per statement


class IdempotencyStore:
    def __init__(self, db: SQLDatabase, *, ttl: float = 24 * 3600, lease: float = 30.0) -> None:
        self.db = db
        self.ttl = timedelta(seconds=ttl)
        self.lease = lease  # a claim not renewed for this long is free (its holder died)

    async def get(self, owner: str, key: str) -> IdempotencyRecord | None:
        query = sa.select(I.c.fingerprint, I.c.response).where(
            I.c.owner == owner, I.c.key == key, I.c.created_at >= utcnow() - self.ttl
        )
        row = await self.db.first(query)
        return IdempotencyRecord(row.fingerprint, row.response) if row else None

    async def claim(
        self, owner: str, key: str, fingerprint: str, *, lease: float | None = None
    ) -> Claim | None:
        """The key for this request: new, or a claim on the same request whose holder has
        not shown it is alive for over ``lease`` seconds (default: the store's). None: done,
        or held by a live one."""
        lease = self.lease if lease is None else lease
        claim, now = Claim(owner, key, secrets.token_hex(16)), utcnow()
        try:
            async with self.db.begin() as conn:
                # The owner's expired records go first: this key's, if it is one of them,
                # is then free for this request as if never used.
                await conn.execute(
                    sa.delete(I).where(I.c.owner == owner, I.c.created_at < now - self.ttl)
                )
                await conn.execute(
                    sa.insert(I).values(
                        owner=owner,
                        key=key,
                        fingerprint=fingerprint,
                        response=None,
                        created_at=now,
                        alive_at=now,
                        claimed_by=claim.token,
                    )
                )
            return claim
        except IntegrityError:
            pass
        # One UPDATE that matches only a claim still stale: of two retries racing for it,
        # the second finds it fresh. A recorded response has no ``alive_at``: never taken.
        stale = sa.update(I).where(
            I.c.owner == owner,
            I.c.key == key,
            I.c.fingerprint == fingerprint,
            I.c.alive_at < now - timedelta(seconds=lease),
        )
        taken = await self.db.write(stale.values(alive_at=now, claimed_by=claim.token))
        return claim if taken.rowcount == 1 else None

    async def keep_alive(self, claim: Claim) -> bool:
        """Renew the claim's lease; False if a retry took it over meanwhile."""
        renewed = await self.db.write(_held(claim).values(alive_at=utcnow()))
        return renewed.rowcount == 1

    async def complete(self, claim: Claim, response: dict[str, Any]) -> None:
        await self.db.write(_held(claim).values(response=response, alive_at=None, claimed_by=None))

    async def release(self, claim: Claim) -> None:
        """The request failed: free the key so a retry can try again."""
        await self.db.write(sa.delete(I).where(*_holds(claim)))

    async def forget(self, refs: list[str], *, owner: str | None = None) -> int:
        """Delete the records whose response names any of ``refs`` (a run's or a
        conversation's id), the owner's only if given: a retry finds nothing to replay."""
        gone = 0
        text = sa.cast(I.c.response, sa.Text)
        for start in range(0, len(refs), _FORGET_BATCH):
            batch = refs[start : start + _FORGET_BATCH]
            named = sa.or_(*(text.contains(ref, autoescape=True) for ref in batch))
            query = sa.delete(I).where(named)
            if owner is not None:
                query = query.where(I.c.owner == owner)
            gone += (await self.db.write(query)).rowcount
        return gone

    async def conversation_deleted(self, conversation: ConversationInfo) -> None:
        """A delete hook: the records naming the conversation go with it."""
        await self.forget([conversation.uuid], owner=conversation.owner)

    async def run_deleted(self, owner: str, run_id: str) -> None:
        """The records naming the run (``run-<hex>``, or its response ``resp_<hex>``)."""
        await self.forget([run_id.removeprefix("run-")], owner=owner)

    async def sweep(self) -> int:
        """Delete every record past its ``ttl``; how many went."""
        swept = await self.db.write(sa.delete(I).where(I.c.created_at < utcnow() - self.ttl))
        return swept.rowcount


def _holds(claim: Claim) -> tuple[sa.ColumnElement[bool], ...]:
    return I.c.owner == claim.owner, I.c.key == claim.key, I.c.claimed_by == claim.token


def _held(claim: Claim) -> sa.Update:
    return sa.update(I).where(*_holds(claim))
