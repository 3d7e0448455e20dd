"""The text read out of an uploaded file, in SQL (``lumina_file_text``): one row per blob,
written once with the blob (the same bytes uploaded again reuse it) and gone with it (the
foreign key cascades)."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from lumina_app.domain import utcnow
from lumina_app.storage.files import FileText
from lumina_app.storage.sql.models import file_blobs as B
from lumina_app.storage.sql.models import file_texts as T
from lumina_app.storage.sql.models import files as F

MAX_IDS = 500  # file ids asked about at once


async def save_text(conn: AsyncConnection, blob_id: int, text: FileText) -> None:
    """The blob's text, unless it has one (inside the transaction that adds the file)."""
    have = sa.select(T.c.blob_id).where(T.c.blob_id == blob_id)
    if (await conn.execute(have)).first() is not None:
        return
    await conn.execute(
        sa.insert(T).values(
            blob_id=blob_id,
            status=text.status,
            text=text.text,
            chars=text.chars,
            pages=text.pages,
            note=(text.note or None) and text.note[:255],
            created_at=utcnow(),
        )
    )


async def text_of_blob(conn: AsyncConnection, owner: str, sha256: str) -> FileText | None:
    query = (
        sa.select(T.c.status, T.c.text, T.c.pages, T.c.note)
        .join(B, B.c.id == T.c.blob_id)
        .where(B.c.owner == owner, B.c.sha256 == sha256)
    )
    row = (await conn.execute(query)).first()
    return _text(row) if row is not None else None


async def texts_of_files(
    conn: AsyncConnection, owner: str, file_ids: Sequence[str]
) -> dict[str, FileText]:
    """By file id; another owner's ids and files without text are simply absent."""
    wanted = list(dict.fromkeys(file_ids))[:MAX_IDS]
    if not wanted:
        return {}
    query = (
        sa.select(F.c.file_id, T.c.status, T.c.text, T.c.pages, T.c.note)
        .join(T, T.c.blob_id == F.c.blob_id)
        .where(F.c.owner == owner, F.c.file_id.in_(wanted))
    )
    return {row.file_id: _text(row) for row in (await conn.execute(query)).all()}


def _text(row: sa.Row) -> FileText:
    return FileText(status=row.status, text=row.text or "", pages=row.pages, note=row.note)
