"""The memory layer's read repositories, one per consumer (and the conversation lookup
they share), built once over the cold store by the composition root, which hands each
service its own."""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.memory.archive_rows import ArchiveRows
from lumina_app.memory.context_reads import ContextReads
from lumina_app.memory.conversation_lookup import ConversationLookup
from lumina_app.memory.conversation_reads import ConversationReads
from lumina_app.memory.gateway_history import GatewayHistory
from lumina_app.memory.run_inspection import RunInspection
from lumina_app.memory.search_reads import SearchReads
from lumina_app.memory.summary_store import SummaryStore
from lumina_app.storage.cold_store import ColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase


@dataclass(frozen=True, slots=True)
class MemoryReads:
    lookup: ConversationLookup  # a conversation by id, and the one visibility rule
    conversations: ConversationReads
    search: SearchReads
    gateway: GatewayHistory
    archive: ArchiveRows
    runs: RunInspection
    summaries: SummaryStore
    context: ContextReads

    @classmethod
    def over(cls, cold: ColdStore, db: SQLDatabase, *, window: int) -> MemoryReads:
        """Every repository over the reads of ``db`` (``ConversationQueries`` and queries of
        their own); the context's window reads also over ``cold``;
        ``window`` is N, the hot window's size, which a run's context reads also use."""
        queries = ConversationQueries(db)
        return cls(
            lookup=ConversationLookup(queries),
            conversations=ConversationReads(queries, db),
            search=SearchReads(db),
            gateway=GatewayHistory(db),
            archive=ArchiveRows(queries, db),
            runs=RunInspection(queries, db),
            summaries=SummaryStore(queries),
            context=ContextReads(cold, queries, window=window),
        )
