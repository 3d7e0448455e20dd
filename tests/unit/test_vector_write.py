"""The vector write replaces a message's earlier vector and skips a message gone meanwhile,
in one statement (#31), on every backend."""

import base64

import sqlalchemy as sa

from lumina_app.domain import Msg, new_turn_id
from lumina_app.storage.sql import recall_rows
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.models import message_vectors as V


async def stored(db: SQLDatabase) -> dict[int, tuple[int, str, bytes]]:
    async with db.connect() as conn:
        rows = (await conn.execute(sa.select(V))).all()
    return {r.message_id: (r.conversation_id, r.model, base64.b64decode(r.vector)) for r in rows}


async def test_a_vector_is_replaced_and_a_gone_message_skipped(engine) -> None:
    db = SQLDatabase(engine)
    store = SQLColdStore(db)
    conv = await store.create_conversation(agent_id="a")
    turn = new_turn_id()
    a, b = await store.append_messages(
        conv.id, [Msg.user("one", turn_id=turn), Msg.user("two", turn_id=turn)]
    )
    gone = b.id + 1000  # never stored: as if deleted between the embedding and the write
    await recall_rows.write_vectors(
        db,
        "m1",
        [(a.id, conv.id, b"\x01\x02"), (b.id, conv.id, b"\x03\x04"), (gone, conv.id, b"x")],
    )
    assert await stored(db) == {
        a.id: (conv.id, "m1", b"\x01\x02"),
        b.id: (conv.id, "m1", b"\x03\x04"),
    }
    await recall_rows.write_vectors(db, "m2", [(a.id, conv.id, b"\x05\x06\x07\x08")])
    assert await stored(db) == {
        a.id: (conv.id, "m2", b"\x05\x06\x07\x08"),
        b.id: (conv.id, "m1", b"\x03\x04"),
    }
