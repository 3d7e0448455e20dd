"""The composition root: builds every part of the process from ``Settings`` once, hands the
services to the UI and the API, runs the background tasks, and closes it all at the end.

The UI and the API use the public services (``agents``, ``conversations``, ``runs``,
``health``, ``archive``, and for access ``auth``, ``signin``, ``accounts``, ``users``); the
other fields are the machinery behind them, there for the operator CLI and white-box tests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

from redis.asyncio import Redis
from redis.exceptions import RedisError

from lumina_app.agents.after_run.memory_extractor import MemoryExtractor
from lumina_app.agents.after_run.summaries import SummaryKeeper
from lumina_app.agents.definitions.agent_embedders import AgentEmbedders
from lumina_app.agents.definitions.prompts import PromptVersions
from lumina_app.agents.definitions.registry import AgentRegistry
from lumina_app.agents.providers.acp.cleanup import AcpCleanup
from lumina_app.agents.providers.factory import ProviderFactory
from lumina_app.agents.run.engine import ChatEngine
from lumina_app.agents.run.run_cap import RunCap
from lumina_app.agents.run.sessions import SessionPool
from lumina_app.agents.tools.builtin import BUILTINS
from lumina_app.agents.tools.catalog import ToolCatalog
from lumina_app.agents.tools.memories import MemoryTools
from lumina_app.agents.tools.recall import NAME as RECALL
from lumina_app.agents.tools.recall import Recall
from lumina_app.agents.tools.sandbox import ComputePool
from lumina_app.archive.limits import ImportLimits
from lumina_app.archive.mirror import ArchiveMirror
from lumina_app.archive.service import ArchiveService
from lumina_app.domain import StoreUnavailable
from lumina_app.memory import MemoryManager, MemoryReads
from lumina_app.memory.long_term import LongTermMemory
from lumina_app.memory.memory_sources import DeletedSources
from lumina_app.observability import hooks as metric_hooks
from lumina_app.recall.embedders import Embedder, LocalEmbedder, OpenAIEmbedder
from lumina_app.recall.file_passages import FilePassages
from lumina_app.recall.retriever import Retriever
from lumina_app.recall.worker import EmbedWorker
from lumina_app.services.account_deletion import AccountDeletion
from lumina_app.services.account_export import AccountExport
from lumina_app.services.accounts import AccountService
from lumina_app.services.agent_permissions import AgentPermissions
from lumina_app.services.agents import AgentService
from lumina_app.services.archive_files import ArchiveFileStore
from lumina_app.services.attachments import Attachments
from lumina_app.services.audit import AuditLog
from lumina_app.services.auth import AuthService
from lumina_app.services.conversations import ConversationService
from lumina_app.services.exchanges import ExchangeLog
from lumina_app.services.file_text import PdfLimits, TextReader
from lumina_app.services.files import FileService
from lumina_app.services.gateway_files import GatewayFiles
from lumina_app.services.health import HealthService
from lumina_app.services.imports import ImportService
from lumina_app.services.input_caps import InputCaps
from lumina_app.services.live import LiveHub
from lumina_app.services.memories import MemoryService
from lumina_app.services.openai_conversations import OpenAIConversations
from lumina_app.services.openai_gateway import OpenAIGateway
from lumina_app.services.passwords import Passwords
from lumina_app.services.purge import ConversationPurge
from lumina_app.services.recall import RecallService
from lumina_app.services.responses import ImageLimits, ResponsesService
from lumina_app.services.retention import Retention
from lumina_app.services.runs import RunService
from lumina_app.services.search import SearchService
from lumina_app.services.signin import SignInService
from lumina_app.services.signin_limits import SignInLimits
from lumina_app.services.stream_cap import StreamCap
from lumina_app.services.titles import Titles
from lumina_app.services.users import UserAdminService
from lumina_app.settings import Settings
from lumina_app.storage.hot_window import HotWindow
from lumina_app.storage.local.hot_window import LocalHotWindow
from lumina_app.storage.local.live_bus import LocalLiveBus
from lumina_app.storage.local.run_events import LocalRunEventLog
from lumina_app.storage.local.run_locks import LocalRunLocks
from lumina_app.storage.local.slots import LocalSlots
from lumina_app.storage.redis.circuit_breaker import CircuitBreaker
from lumina_app.storage.redis.client import create_redis_client
from lumina_app.storage.redis.hot_window import RedisHotWindow
from lumina_app.storage.redis.live_bus import RedisLiveBus
from lumina_app.storage.redis.run_events import RedisRunEventLog
from lumina_app.storage.redis.run_locks import RedisRunLocks
from lumina_app.storage.redis.slots import RedisSlots
from lumina_app.storage.run_events import RunEventLog
from lumina_app.storage.run_locks import RunLocks
from lumina_app.storage.slots import Slots
from lumina_app.storage.sql import write_paths
from lumina_app.storage.sql.api_keys import ApiKeyStore
from lumina_app.storage.sql.audit import AuditStore
from lumina_app.storage.sql.claims import ClaimStore
from lumina_app.storage.sql.cold_store import SQLColdStore
from lumina_app.storage.sql.conversation_queries import ConversationQueries
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.files import FileStore
from lumina_app.storage.sql.idempotency import IdempotencyStore as IdempotencyStore
from lumina_app.storage.sql.message_files import MessageFileStore
from lumina_app.storage.sql.prompts import PromptStore
from lumina_app.storage.sql.quotas import OwnerQuotas
from lumina_app.storage.sql.runs import RunStore
from lumina_app.storage.sql.schema_state import alembic_config as alembic_config
from lumina_app.storage.sql.schema_state import schema_state as schema_state
from lumina_app.storage.sql.sessions import SessionStore
from lumina_app.storage.sql.users import UserStore

log = logging.getLogger(__name__)


@dataclass
class Services:
    settings: Settings
    # what the UI and the API call
    agents: AgentService
    conversations: ConversationService
    runs: RunService
    health: HealthService
    search: SearchService
    recall: RecallService
    auth: AuthService
    signin: SignInService
    accounts: AccountService
    users: UserAdminService
    archive: ArchiveService
    idempotency: IdempotencyStore
    gateway: OpenAIGateway
    responses: ResponsesService
    openai_conversations: OpenAIConversations
    # the machinery behind them
    db: SQLDatabase
    memory: MemoryManager
    reads: MemoryReads  # the repositories handed to the services above
    registry: AgentRegistry
    providers: ProviderFactory
    chat: ChatEngine
    events: RunEventLog
    tools: ToolCatalog
    streams: StreamCap  # open SSE streams per owner
    memories: MemoryService  # long-term memories (what agents know of people)
    permissions: AgentPermissions  # acp agents' permission requests
    live: LiveHub
    mirror: ArchiveMirror | None = None
    embeddings: EmbedWorker | None = None
    # the data's life cycle, set by _lifecycle once the services above are built
    deletion: AccountDeletion = field(init=False)  # an account and all it owns
    account_export: AccountExport = field(init=False)  # all an account has, as one zip
    retention: Retention = field(init=False)  # conversations past their time
    imports: ImportService = field(init=False)  # other products' chat exports (#47)
    exchanges: ExchangeLog = field(init=False)  # turns had elsewhere, stored without a run (MCP)
    files: FileService = field(init=False)  # uploaded files (#48)
    sweeps: bool = True  # the server's periodic sweeps (a CLI command runs its own)
    _tasks: list[asyncio.Task] = field(default_factory=list)
    _stack: AsyncExitStack = field(default_factory=AsyncExitStack)

    def start_background(self) -> None:
        """Listen for stops sent to this instance's runs; close runs of lost instances;
        checkpoint SQLite's write-ahead log; sweep idempotency records past their time
        (owners who come back sweep their own)."""
        away = (StoreUnavailable, RedisError, OSError)
        loops = [
            _every(3600.0, self.idempotency.sweep, "idempotency sweep", (StoreUnavailable,)),
        ]
        if self.chat.locks.shared:  # a lone process closed everything at start-up
            lease = self.settings.run_lease_seconds
            loops.append(_every(lease / 2, self.chat.sweep_orphans, "orphan sweep", away))
        if self.db.is_sqlite:  # checkpointed here, off the event loop's thread
            loops.append(_every(1.0, self.db.checkpoint, "SQLite checkpoint", (StoreUnavailable,)))
        if self.sweeps:
            every = self.settings.retention_sweep_seconds
            loops.append(_every(every, self._sweep_retention, "retention sweep", away, now=True))
        if self.embeddings is not None:
            loops.append(self.embeddings.run_forever())
        loops.append(self.live.run_forever())
        listening = self.chat.locks.listen_for_stops(self.chat.on_stop_request)
        self._tasks = [asyncio.create_task(loop) for loop in (listening, *loops)]

    async def _sweep_retention(self) -> None:
        """Account deletions an interruption left half done are finished at start-up;
        conversations past their retention go then and every sweep interval."""
        await self.deletion.finish_pending()
        await self.retention.sweep()

    async def close(self) -> None:
        """Stop the background tasks, then close every part in the reverse of the order it
        was built (each builder below registered its own closing on one exit stack)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._stack.aclose()


async def _every(
    seconds: float,
    action: Callable[[], Awaitable[object]],
    what: str,
    skipped: tuple[type[BaseException], ...],
    *,
    now: bool = False,
) -> None:
    """``action`` every ``seconds`` (first at once with ``now``), for good; a failure of
    one of the ``skipped`` kinds is logged as a skipped round."""
    if not now:
        await asyncio.sleep(seconds)
    while True:
        try:
            await action()
        except skipped as exc:
            log.warning("%s skipped: %s", what, exc)
        await asyncio.sleep(seconds)


_SLOTS_REDIS_TIMEOUT = 2.0  # seconds


def _redis(settings: Settings, *, socket_timeout: float | None) -> Redis:
    """A Redis client whose pool is capped by the settings (a slow-client wave waits for
    a connection instead of leaving one open per client it held), its connections named
    by the key prefix in ``CLIENT LIST``."""
    assert settings.redis_url
    return create_redis_client(
        settings.redis_url,
        socket_timeout=socket_timeout,
        max_connections=settings.redis_max_connections,
        pool_timeout=settings.redis_pool_timeout_seconds,
        name=_client_name(settings.redis_prefix),
    )


def _client_name(prefix: str) -> str:
    """CLIENT SETNAME takes no spaces or newlines."""
    return "".join(c if c.isprintable() and not c.isspace() else "_" for c in prefix) or "lumina"


@dataclass(frozen=True)
class _Shared:
    """The parts several instances share through Redis when there is one, or keep in
    process when there is not: decided once, in :func:`_shared`."""

    window: HotWindow  # the hot tier
    run_slots: Slots  # runs and open streams per owner
    signin_slots: Slots  # sign-in attempts
    events: RunEventLog
    locks: RunLocks
    live: LiveHub
    breaker: CircuitBreaker | None = None  # the hot window's, for the metrics


def _shared(settings: Settings, stack: AsyncExitStack) -> _Shared:
    """The one decision about Redis; each part's closing goes on the stack (closed after
    everything built later: runs end before their locks and slots go)."""
    shared = _through_redis(settings) if settings.redis_url else _in_process(settings)
    for part in (shared.window, shared.signin_slots, shared.locks, shared.events):
        stack.push_async_callback(part.close)
    return shared


def _in_process(settings: Settings) -> _Shared:
    return _Shared(
        window=LocalHotWindow(
            window=settings.context_window,
            max_conversations=settings.hot_max_conversations,
            max_chars=settings.hot_max_chars,
        ),
        run_slots=LocalSlots(),
        signin_slots=LocalSlots(),
        events=LocalRunEventLog(retention=settings.run_buffer_ttl_seconds),
        locks=LocalRunLocks(),
        live=LiveHub(LocalLiveBus()),
    )


def _through_redis(settings: Settings) -> _Shared:
    """Every instance sees the same window, run locks, run events (resumed on any
    instance), slots and live notices.

    Runs and streams are counted through the hot window's client and breaker, as the run
    locks are: every turn takes a slot, so a Redis that froze costs a turn one short socket
    timeout and then is skipped at once. Sign-ins have their own client and breaker: a
    burst of sign-ins opens connections faster than the hot window's 200 ms connect timeout
    allows on a busy machine, and a slow count must not trip the hot window's breaker."""
    prefix, block_ms = settings.redis_prefix, 5000
    hot = RedisHotWindow(
        _redis(settings, socket_timeout=settings.redis_socket_timeout),
        prefix=prefix,
        window=settings.context_window,
        ttl_seconds=settings.hot_ttl_seconds,
        breaker=CircuitBreaker(cooldown=settings.redis_breaker_cooldown),
    )
    slow_ok = max(settings.redis_socket_timeout, _SLOTS_REDIS_TIMEOUT)
    return _Shared(
        window=hot,
        run_slots=RedisSlots(hot.client, prefix=prefix, breaker=hot.breaker),
        signin_slots=RedisSlots(
            _redis(settings, socket_timeout=slow_ok),
            prefix=prefix,
            breaker=CircuitBreaker(cooldown=settings.redis_breaker_cooldown),
        ),
        events=RedisRunEventLog(
            local=LocalRunEventLog(retention=settings.run_buffer_ttl_seconds),
            writer=hot.client,
            reader=_redis(settings, socket_timeout=block_ms / 1000 + 5),
            prefix=prefix,
            retention=settings.run_buffer_ttl_seconds,
            block_ms=block_ms,
            breaker=hot.breaker,
        ),
        locks=RedisRunLocks(
            hot.client,
            _redis(settings, socket_timeout=None),
            prefix=prefix,
            lease_ms=int(settings.run_lease_seconds * 1000),
            breaker=hot.breaker,
        ),
        live=LiveHub(
            RedisLiveBus(
                hot.client,
                _redis(settings, socket_timeout=None),
                prefix=prefix,
                breaker=hot.breaker,
            )
        ),
        breaker=hot.breaker,
    )


def embedder(settings: Settings) -> Embedder | None:
    """Recall's semantic half as configured (None: lexical ranking only)."""
    if settings.embeddings_provider == "off":
        return None
    if settings.embeddings_provider == "openai":
        assert settings.embeddings_base_url and settings.embeddings_model  # settings checks it
        return OpenAIEmbedder(
            settings.embeddings_base_url,
            settings.embeddings_model,
            api_key=settings.embeddings_api_key,
            timeout=settings.embeddings_timeout,
        )
    return LocalEmbedder()


@dataclass(frozen=True)
class _Store:
    """The database, the shared parts, and the memory over them."""

    db: SQLDatabase
    shared: _Shared
    memory: MemoryManager
    reads: MemoryReads
    idempotency: IdempotencyStore
    files: FileStore  # uploaded files
    message_files: MessageFileStore  # which files a message carries


def _store(settings: Settings, stack: AsyncExitStack) -> _Store:
    db = SQLDatabase(create_engine(settings.async_database_url))
    stack.push_async_callback(db.close)  # closed last
    shared = _shared(settings, stack)  # the hot window closes with it (memory's hot tier)
    # Answer flushes of all runs within this window share a transaction; well inside the
    # flush rate cap (interval / 5), so a run's flushes never wait on each other.
    flush_window = min(0.05, settings.flush_interval_ms / 1000 / 5)
    # The write strategy, chosen once: inline on SQLite, one statement per phase on
    # PostgreSQL, a run_sync transaction elsewhere (storage/sql/write_paths.py).
    cold = SQLColdStore(db, write_path=write_paths.for_database(db), flush_window=flush_window)
    quotas = OwnerQuotas(
        db,
        max_conversations=settings.max_conversations_per_owner,
        max_messages_per_day=settings.max_messages_per_owner_per_day,
        max_stored_bytes=settings.max_stored_bytes_per_owner,
    )
    window = settings.context_window
    return _Store(
        db=db,
        shared=shared,
        memory=MemoryManager(
            cold, shared.window, window=window, queries=ConversationQueries(db), quotas=quotas
        ),
        reads=MemoryReads.over(cold, db, window=settings.context_window),
        idempotency=IdempotencyStore(
            db, ttl=settings.idempotency_ttl_seconds, lease=settings.idempotency_lease_seconds
        ),
        files=FileStore(db),
        message_files=MessageFileStore(db),
    )


@dataclass(frozen=True)
class _Recall:
    """Finding things again: recall's ranking, the embeddings worker, long-term memories."""

    retriever: Retriever
    embeddings: EmbedWorker | None
    long_term: LongTermMemory


def _recall(
    settings: Settings, stack: AsyncExitStack, db: SQLDatabase, registry: AgentRegistry
) -> _Recall:
    embeds = embedder(settings)
    retriever = Retriever(db, embeds)
    embeddings = None
    if embeds is not None:  # agents may choose their own embedder (config.json "embeddings")
        choice = AgentEmbedders(registry, embeds, timeout=settings.embeddings_timeout)
        embeddings = EmbedWorker(db, embeds, choice=choice)
        retriever.choice = choice
        stack.push_async_callback(choice.close)
        stack.push_async_callback(embeds.close)
    long_term = LongTermMemory(db, embeds, max_per_owner=settings.max_memories_per_owner)
    return _Recall(retriever, embeddings, long_term)


def _engine(
    settings: Settings,
    stack: AsyncExitStack,
    store: _Store,
    registry: AgentRegistry,
    providers: ProviderFactory,
    recall: _Recall,
) -> ChatEngine:
    """The run engine with its tools, summaries and memory extraction. Its own shutdown
    is pushed last of all by :func:`open_services` (runs end first)."""
    memory, reads, window = store.memory, store.reads, settings.context_window
    summaries = SummaryKeeper(memory, reads.lookup, reads.summaries, providers, window=window)
    stack.push_async_callback(summaries.close)
    tools = ToolCatalog(
        start_timeout=settings.mcp_start_timeout_seconds,
        retry_seconds=settings.mcp_retry_seconds,
        compute=ComputePool(workers=settings.tool_workers, deadline=settings.tool_cpu_seconds),
        recall=Recall(reads.lookup, recall.retriever),
        memories=MemoryTools(recall.long_term),
    )
    stack.push_async_callback(tools.close)  # MCP servers stop after the runs that used them
    extractor = MemoryExtractor(recall.long_term, providers)
    stack.push_async_callback(extractor.close)
    return ChatEngine(
        settings=settings,
        memory=memory,
        lookup=reads.lookup,
        context=reads.context,
        runs=RunStore(store.db),
        registry=registry,
        providers=providers,
        sessions=SessionPool(
            max_size=settings.session_pool_size,
            idle_seconds=settings.session_idle_seconds,
            max_chars=settings.session_pool_chars,
        ),
        events=store.shared.events,
        locks=store.shared.locks,
        prompts=PromptVersions(PromptStore(store.db)),
        summaries=summaries,
        tools=tools,
        cap=RunCap(
            store.shared.run_slots,
            limit=settings.max_active_runs_per_owner,
            lease_seconds=settings.run_lease_seconds,
        ),
        extractor=extractor,
        links=store.message_files,
        files=store.files,
    )


def _access(
    settings: Settings, db: SQLDatabase, slots: Slots, live: LiveHub
) -> tuple[AuthService, SignInService, AccountService, UserAdminService]:
    """Who may call (auth), signing in, one's own account, managing accounts."""
    sessions, users, keys = SessionStore(db), UserStore(db), ApiKeyStore(db)
    audit = AuditLog(AuditStore(db))
    passwords = Passwords(min_length=settings.password_min_length)
    auth = AuthService(settings, sessions, users, keys, audit)
    limits = SignInLimits(
        slots,
        per_address=settings.signin_attempts_per_minute,
        per_user=settings.signin_attempts_per_user_per_minute,
    )
    return (
        auth,
        SignInService(settings, auth, users, sessions, passwords, audit, limits),
        AccountService(auth, users, sessions, keys, passwords, audit),
        UserAdminService(auth, users, sessions, keys, passwords, audit, ClaimStore(db), live),
    )


async def _after_turn_and_delete(services: Services, store: _Store, recall: _Recall) -> None:
    """What follows a run's start and end, a final message and a delete, listed in one
    place: the engine, the memory manager and the driver only emit (``on_run_started``,
    ``on_run_ended``, ``hooks``, ``observers``); nothing subscribes itself."""
    memory, chat, registry = store.memory, services.chat, services.registry
    hooks, acp = memory.hooks, services.providers.acp
    # a run accepted: the owner's open pages are told; a new conversation gets its title
    chat.on_run_started += [services.live.run_accepted, services.runs.titles.run_accepted]
    # a run ended: the summary catches up; what the turn says about the person is learnt
    chat.on_run_ended += [chat.summaries.after_run, chat.extractor.after_run]
    chat.summaries.on_written.append(chat.sessions.set_summary)  # a warm session's summary
    chat.sessions.on_drop.append(acp.forget)  # a dropped session: an acp agent's process
    # a final message: embedded for recall; mirrored on disk
    if recall.embeddings is not None:
        hooks.on_final(recall.embeddings.on_final)
        recall.retriever.on_missing = recall.embeddings.due
    # a delete, in this order: what is deleted is not replayed; what was learnt from it
    # stays, marked "source deleted"; the engine forgets it (its run, buffers, session);
    # its archive folder, an acp agent's files and the mirror's queue go
    hooks.on_delete(store.idempotency.conversation_deleted)
    sources = DeletedSources(store.db)
    hooks.on_delete(sources.conversation_deleted)
    hooks.on_rows_removed(sources.rows_removed)
    hooks.on_delete(chat.forget_conversation)
    hooks.on_runs_deleted(chat.drop_run_buffers)
    hooks.on_rows_removed(chat.drop_session)
    hooks.on_delete(services.archive.remove)
    hooks.on_delete(AcpCleanup(acp, registry).deleted)
    if (mirror := services.mirror) is not None:
        hooks.on_final(mirror.on_final)
        hooks.on_delete(mirror.on_delete)
        hooks.on_rows_removed(mirror.on_rows_removed)
    # metrics: runs' events, window reads, Redis's breaker, summaries, memories
    metric_hooks.install(
        run_observers=chat.driver.observers,
        window_listeners=memory.stats.listeners,
        breaker_listeners=store.shared.breaker.listeners if store.shared.breaker else None,
        summary_hooks=chat.summaries.on_written,
        engines=store.db.engines,
        agents=[agent.id for agent in await asyncio.to_thread(registry.list)],
        tools=[*BUILTINS, RECALL],
        memory_hooks=recall.long_term.on_changed,
        extraction_failure_hooks=chat.extractor.on_failed,
    )


async def open_services(settings: Settings, *, recover: bool = True) -> Services:
    """Build every part, subsystem by subsystem; with ``recover``, close runs a crash left
    open. Each builder puts its parts' closing on one exit stack, so :meth:`Services.close`
    undoes them in reverse, and a failure half way closes what was already opened."""
    stack = AsyncExitStack()
    try:
        services = await _open(settings, stack)
    except BaseException:
        await stack.aclose()
        raise
    if recover:
        await services.chat.recover()
    services.sweeps = recover
    services.start_background()
    return services


async def _open(settings: Settings, stack: AsyncExitStack) -> Services:
    store = _store(settings, stack)
    memory, reads, db, live = store.memory, store.reads, store.db, store.shared.live
    registry = AgentRegistry(settings.agents_dir)
    providers = ProviderFactory(settings)
    stack.push_async_callback(providers.close)
    recall = _recall(settings, stack, db, registry)
    chat = _engine(settings, stack, store, registry, providers, recall)
    archive, mirror = _archive(settings, stack, store, recall.long_term)
    agents = AgentService(registry, settings, chat.tools)
    auth, signin, accounts, users = _access(settings, db, store.shared.signin_slots, live)
    conversations = ConversationService(
        memory, reads.lookup, agents, archive, reads.conversations, live
    )
    runs = _runs(settings, stack, store, chat, conversations)
    gateway, responses, openai_conversations = _openai_doors(settings, store, agents, runs)
    streams = StreamCap(
        store.shared.run_slots,
        limit=settings.max_streams_per_owner,
        lease_seconds=settings.run_lease_seconds,
    )
    stack.push_async_callback(streams.close)
    services = Services(
        settings=settings,
        agents=agents,
        conversations=conversations,
        runs=runs,
        permissions=AgentPermissions(chat),
        health=HealthService(memory),
        search=SearchService(reads.lookup, reads.search),
        recall=RecallService(reads.lookup, recall.retriever, FilePassages(db)),
        auth=auth,
        signin=signin,
        accounts=accounts,
        users=users,
        archive=archive,
        idempotency=store.idempotency,
        gateway=gateway,
        responses=responses,
        openai_conversations=openai_conversations,
        db=db,
        memory=memory,
        reads=reads,
        registry=registry,
        providers=providers,
        chat=chat,
        events=store.shared.events,
        tools=chat.tools,
        streams=streams,
        mirror=mirror,
        embeddings=recall.embeddings,
        memories=MemoryService(recall.long_term, agents),
        live=live,
        _stack=stack,
    )
    _lifecycle(services, settings, store, recall)
    await _after_turn_and_delete(services, store, recall)
    # closed first (last in, first out): the runs end, then the imports, before anything
    # they write through goes
    stack.push_async_callback(chat.shutdown)
    stack.push_async_callback(services.imports.close)
    return services


def _runs(
    settings: Settings,
    stack: AsyncExitStack,
    store: _Store,
    chat: ChatEngine,
    conversations: ConversationService,
) -> RunService:
    """Runs as the doors start them: the files a send names checked first; titles."""
    titles = Titles(conversations, timeout=settings.title_timeout_seconds)
    stack.push_async_callback(titles.close)
    attachments = Attachments(
        store.message_files,
        max_files=settings.max_files_per_message,
        max_bytes=settings.max_message_file_bytes,
    )
    reads, live = store.reads, store.shared.live
    return RunService(chat, chat.runs, reads.lookup, reads.runs, live, titles, attachments)


def _archive(
    settings: Settings, stack: AsyncExitStack, store: _Store, long_term: LongTermMemory
) -> tuple[ArchiveService, ArchiveMirror | None]:
    """The archive (export and import) and, when configured, its mirror on disk."""
    reads = store.reads
    archive = ArchiveService(
        store.memory,
        reads.lookup,
        reads.archive,
        settings.data_dir,
        limits=ImportLimits.from_settings(settings),
        memories=long_term,
    )
    mirror = ArchiveMirror(archive) if settings.archive_mirror else None
    if mirror is not None:
        stack.push_async_callback(mirror.close)
    return archive, mirror


def _openai_doors(
    settings: Settings, store: _Store, agents: AgentService, runs: RunService
) -> tuple[OpenAIGateway, ResponsesService, OpenAIConversations]:
    """The OpenAI-compatible doors: chat completions, Responses, Conversations."""
    memory, reads = store.memory, store.reads
    gateway = OpenAIGateway(
        agents,
        runs,
        memory,
        reads.lookup,
        reads.gateway,
        caps=InputCaps(settings.gateway_max_messages, settings.max_task_chars),
    )
    images = ImageLimits(
        settings.llm_provider, settings.responses_max_images, settings.responses_max_image_chars
    )
    return (
        gateway,
        ResponsesService(
            gateway, runs, memory, reads.lookup, reads.runs, reads.conversations, images
        ),
        OpenAIConversations(
            memory, reads.lookup, agents, runs, reads.conversations, reads.gateway, gateway.caps
        ),
    )


def _lifecycle(services: Services, settings: Settings, store: _Store, recall: _Recall) -> None:
    """The data's life cycle: imports, turns had elsewhere, retention, the account's
    export, the account's deletion."""
    db, archive, chat, long_term = store.db, services.archive, services.chat, recall.long_term
    embeddings = recall.embeddings
    services.files = FileService(
        store.files,
        max_bytes=settings.max_file_bytes,
        max_bytes_per_owner=settings.max_file_bytes_per_owner,
        reader=TextReader(
            max_chars=settings.max_file_text_chars,
            pdf=PdfLimits(
                seconds=settings.pdf_timeout_seconds,
                memory_bytes=settings.pdf_max_memory_bytes,
                pages=settings.pdf_max_pages,
                chars=settings.pdf_max_chars,
                workers=settings.pdf_workers,
            ),
        ),
    )
    services.imports = ImportService(
        archive,
        services.agents,
        long_term,
        max_bytes=settings.import_max_bytes,
        extractor=chat.extractor,
        on_stored=(lambda c: embeddings.due(c.id)) if embeddings is not None else None,
    )
    services.exchanges = ExchangeLog(
        store.memory, services.conversations, services.runs, chat.extractor, services.gateway.caps
    )
    purge = ConversationPurge(store.memory, store.reads.conversations, archive)
    services.retention = Retention(
        purge, store.reads.conversations, services.registry, default_days=settings.retention_days
    )
    archive.files = ArchiveFileStore(services.files)
    services.gateway.files = GatewayFiles(
        services.files, services.agents, default_provider=settings.llm_provider
    )
    services.openai_conversations.files = services.gateway.files
    services.account_export = AccountExport(
        store.reads.conversations, archive, services.accounts, long_term, services.files
    )
    services.deletion = AccountDeletion(
        users=UserStore(db),
        auth=services.auth,
        passwords=Passwords(min_length=settings.password_min_length),
        audit=AuditLog(AuditStore(db)),
        purge=purge,
        archive=archive,
        live=services.live,
        files=services.files,
        forget_owner=[chat.cap.forget, services.streams.forget, services.signin.limits.forget],
    )


_current: Services | None = None


def install(services: Services | None) -> None:
    """Hand the opened services to the UI and the API (the lifespan does this)."""
    global _current
    _current = services


def current() -> Services:
    """The services the app's lifespan opened."""
    if _current is None:
        raise RuntimeError("Lumina services are not open (the app's lifespan has not run)")
    return _current
