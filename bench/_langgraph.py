"""The LangGraph anchor: what people pick for durable multi-turn agents, on the same
database as Lumina (SQLite file or PostgreSQL database), for bench/memory.py and
bench/scale.py.

A ``StateGraph`` over ``add_messages`` with one model node that does no I/O (it appends a
fixed answer), compiled with ``AsyncSqliteSaver`` or ``AsyncPostgresSaver``; one thread per
conversation; a turn is ``ainvoke({"messages": [question]})``; the last-20 load is
``aget_state(config).values["messages"][-20:]``. A stored history of ``size`` messages is
installed with one ``aupdate_state`` (one checkpoint holding them all), as if it had
grown turn by turn.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, TypedDict

import sqlalchemy as sa
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

# The tables each saver writes (bytes stored are measured over them, indexes included).
TABLES = {
    "sqlite": ("checkpoints", "writes"),
    "postgresql": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def build_graph(answer: str):
    """The graph, uncompiled: START -> model (no I/O) -> end."""

    async def model(state: State) -> dict:
        return {"messages": [AIMessage(answer)]}

    graph = StateGraph(State)
    graph.add_node("model", model)
    graph.add_edge(START, "model")
    return graph


def saver_url(sync_url: str) -> tuple[str, str]:
    """(dialect, what the saver's ``from_conn_string`` takes) for Lumina's sync URL."""
    url = sa.engine.make_url(sync_url)
    if url.get_backend_name() == "sqlite":
        return "sqlite", str(url.database)
    if url.get_backend_name() == "postgresql":
        plain = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return "postgresql", plain
    raise ValueError(f"no LangGraph checkpointer for {url.get_backend_name()}")


class LangGraph:
    """A compiled graph on a checkpointer over ``sync_url``'s database."""

    def __init__(self, graph, dialect: str, sync_url: str) -> None:
        self.graph = graph
        self.dialect = dialect
        self.sync_url = sync_url

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, sync_url: str, answer: str) -> AsyncIterator[LangGraph]:
        dialect, target = saver_url(sync_url)
        if dialect == "sqlite":
            from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver as Saver
        else:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver as Saver
        async with Saver.from_conn_string(target) as saver:
            await saver.setup()
            yield cls(build_graph(answer).compile(checkpointer=saver), dialect, sync_url)

    @staticmethod
    def config(thread: str) -> dict:
        return {"configurable": {"thread_id": thread}}

    async def fill(self, thread: str, texts: list[str]) -> dict:
        """``len(texts)`` stored messages (question first, alternating), one checkpoint;
        returns that checkpoint's config (see :meth:`turn`)."""
        msgs = [HumanMessage(t) if i % 2 == 0 else AIMessage(t) for i, t in enumerate(texts)]
        return await self.graph.aupdate_state(self.config(thread), {"messages": msgs})

    async def turn(self, thread: str, question: str, at: dict | None = None) -> None:
        """One turn on the thread's latest checkpoint, or from the checkpoint ``at`` (a
        fork: the history stays the size it was, whatever the number of timed turns)."""
        config = at or self.config(thread)
        await self.graph.ainvoke({"messages": [HumanMessage(question)]}, config)

    async def load(self, thread: str, n: int = 20) -> list[AnyMessage]:
        state = await self.graph.aget_state(self.config(thread))
        return state.values.get("messages", [])[-n:]


def stored_bytes(engine: sa.Engine, tables: tuple[str, ...]) -> int:
    """Bytes the database holds for ``tables`` and their indexes: SQLite pages (dbstat),
    PostgreSQL ``pg_total_relation_size`` (heap, TOAST, indexes)."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            names = ", ".join(f"'{t}'" for t in tables)
            query = f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN ({names}) "
            query += f"OR name IN (SELECT name FROM sqlite_master WHERE tbl_name IN ({names}))"
            return int(conn.exec_driver_sql(query).scalar())
        total = 0
        for table in tables:
            size = conn.exec_driver_sql(f"SELECT pg_total_relation_size('{table}')").scalar()
            total += int(size or 0)
        return total
