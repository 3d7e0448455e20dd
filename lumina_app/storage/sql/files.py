"""Uploaded files in SQL, so every instance over one database serves them: a blob per
owner and sha256, its bytes in rows of at most 512 KiB, and the file rows naming it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from lumina_app.storage.files import FileText, StoredFile
from lumina_app.storage.sql.conversation_queries import decode_cursor, encode_cursor
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.file_texts import save_text, text_of_blob, texts_of_files
from lumina_app.storage.sql.models import file_blobs as B
from lumina_app.storage.sql.models import file_chunks as K
from lumina_app.storage.sql.models import files as F


class FileStore:
    def __init__(self, db: SQLDatabase) -> None:
        self.db = db

    async def stored_bytes(self, owner: str) -> int:
        query = sa.select(sa.func.coalesce(sa.func.sum(B.c.size), 0)).where(B.c.owner == owner)
        return int(await self.db.scalar(query))

    async def has_blob(self, owner: str, sha256: str) -> bool:
        return await self.db.first(_blob_of(owner, sha256)) is not None

    async def add(
        self,
        file: StoredFile,
        chunks: Callable[[], AsyncIterator[bytes]],
        *,
        text: FileText | None = None,
    ) -> StoredFile:
        """Two uploads of the same new content at once: the second's blob insert (or a
        deletion racing its file row's key) fails, and it runs again, finding the blob."""
        for attempt in (1, 2):
            try:
                await self._add(file, chunks, text)
                return file
            except IntegrityError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def text_of(self, owner: str, sha256: str) -> FileText | None:
        async with self.db.connect() as conn:
            return await text_of_blob(conn, owner, sha256)

    async def texts(self, owner: str, file_ids: Sequence[str]) -> dict[str, FileText]:
        async with self.db.connect() as conn:
            return await texts_of_files(conn, owner, file_ids)

    async def _add(
        self,
        file: StoredFile,
        chunks: Callable[[], AsyncIterator[bytes]],
        text: FileText | None,
    ) -> None:
        async with self.db.begin() as conn:
            blob_id = (await conn.execute(_blob_of(file.owner, file.sha256))).scalar()
            if blob_id is None:
                blob = sa.insert(B).values(
                    owner=file.owner, sha256=file.sha256, size=file.size, created_at=file.created_at
                )
                blob_id = (await conn.execute(blob)).inserted_primary_key[0]
                n = 0
                async for piece in chunks():
                    await conn.execute(sa.insert(K).values(blob_id=blob_id, n=n, data=piece))
                    n += 1
            if text is not None:
                await save_text(conn, blob_id, text)
            await conn.execute(
                sa.insert(F).values(
                    file_id=file.id,
                    owner=file.owner,
                    blob_id=blob_id,
                    name=file.name,
                    media_type=file.media_type,
                    size=file.size,
                    sha256=file.sha256,
                    created_at=file.created_at,
                )
            )

    async def get(self, owner: str, file_id: str) -> StoredFile | None:
        query = sa.select(F).where(F.c.owner == owner, F.c.file_id == file_id)
        row = await self.db.first(query)
        return _stored(row) if row is not None else None

    async def read(self, owner: str, file_id: str) -> AsyncIterator[bytes]:
        blob = sa.select(F.c.blob_id).where(F.c.owner == owner, F.c.file_id == file_id)
        blob_id = await self.db.scalar(blob)
        n = 0
        while blob_id is not None:
            piece = sa.select(K.c.data).where(K.c.blob_id == blob_id, K.c.n == n)
            data = await self.db.scalar(piece)
            if data is None:
                return
            yield bytes(data)
            n += 1

    async def list(
        self, owner: str, *, limit: int, cursor: str | None
    ) -> tuple[list[StoredFile], str | None]:
        query = sa.select(F).where(F.c.owner == owner)
        if cursor:
            query = query.where(F.c.id < decode_cursor(cursor)[1])
        query = query.order_by(F.c.id.desc()).limit(limit + 1)
        rows = await self.db.rows(query)
        items = [_stored(r) for r in rows[:limit]]
        tail = rows[limit - 1] if len(rows) > limit else None
        return items, encode_cursor(tail.created_at, tail.id) if tail is not None else None

    async def delete(self, owner: str, file_id: str) -> bool:
        async with self.db.begin() as conn:
            where = sa.and_(F.c.owner == owner, F.c.file_id == file_id)
            blob_id = (await conn.execute(sa.select(F.c.blob_id).where(where))).scalar()
            if blob_id is None:
                return False
            await conn.execute(sa.delete(F).where(where))
            users = sa.select(sa.func.count()).select_from(F).where(F.c.blob_id == blob_id)
            if not (await conn.execute(users)).scalar_one():
                await conn.execute(sa.delete(K).where(K.c.blob_id == blob_id))
                await conn.execute(sa.delete(B).where(B.c.id == blob_id))
        return True

    async def delete_owner(self, owner: str) -> int:
        blobs = sa.select(B.c.id).where(B.c.owner == owner).scalar_subquery()
        async with self.db.begin() as conn:
            gone = (await conn.execute(sa.delete(F).where(F.c.owner == owner))).rowcount
            await conn.execute(sa.delete(K).where(K.c.blob_id.in_(blobs)))
            await conn.execute(sa.delete(B).where(B.c.owner == owner))
        return gone


def _blob_of(owner: str, sha256: str) -> sa.Select:
    return sa.select(B.c.id).where(B.c.owner == owner, B.c.sha256 == sha256)


def _stored(row: sa.Row) -> StoredFile:
    return StoredFile(
        id=row.file_id,
        owner=row.owner,
        name=row.name,
        media_type=row.media_type,
        size=row.size,
        sha256=row.sha256,
        created_at=row.created_at,
    )
