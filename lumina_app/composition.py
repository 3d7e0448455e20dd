"""The composition root: builds every part of the process from ``Settings`` once, hands the
services to the UI and the API, runs the background tasks, and closes it all at the end.

The UI and the API use the public services (``agents``, ``conversations``, ``runs``,
``health``, ``archive``, and for access ``auth``, ``signin``, ``accounts``, ``users``); the
other fields are the machinery behind them, there for the operator CLI and white-box tests.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from redis.asyncio import Redis
from redis.exceptions import RedisError

from lumina_app.agents.acp.cleanup import AcpCleanup
from lumina_app.agents.agent_embedders import AgentEmbedders
from lumina_app.agents.engine import ChatEngine
from lumina_app.agents.memory_extractor import MemoryExtractor
from lumina_app.agents.prompts import PromptVersions
from lumina_app.agents.providers import ProviderFactory
from lumina_app.agents.registry import AgentRegistry
from lumina_app.agents.run_cap import RunCap
from lumina_app.agents.sessions import SessionPool
from lumina_app.agents.summaries import SummaryKeeper
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
from lumina_app.storage.sql.database import SQLDatabase
from lumina_app.storage.sql.engine import create_engine
from lumina_app.storage.sql.files import FileStore
from lumina_app.storage.sql.idempotency import IdempotencyStore
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
    signin_slots: Slots  # sign-in attempts (runs and streams count through the hot window)
    streams: StreamCap  # open SSE streams per owner
    mirror: ArchiveMirror | None = None
    embeddings: EmbedWorker | None = None
    memories: MemoryService | None = None  # long-term memories (what agents know of people)
    permissions: AgentPermissions | None = None  # acp agents' permission requests
    live: LiveHub | None = None
    deletion: AccountDeletion | None = None  # an account and all it owns
    account_export: AccountExport | None = None  # all an account has, as one zip
    retention: Retention | None = None  # conversations past their time
    imports: ImportService | None = None  # other products' chat exports (#47)
    exchanges: ExchangeLog | None = None  # turns had elsewhere, stored without a run (MCP)
    files: FileService | None = None  # uploaded files (#48)
    sweeps: bool = True  # the server's periodic sweeps (a CLI command runs its own)
    _tasks: list[asyncio.Task] = field(default_factory=list)

    def start_background(self) -> None:
        """Listen for stops sent to this instance's runs; close runs of lost instances;
        checkpoint SQLite's write-ahead log."""
        self._tasks = [
            asyncio.create_task(self.chat.locks.listen_for_stops(self.chat.on_stop_request)),
            asyncio.create_task(self._sweep_orphans_forever()),
            asyncio.create_task(self._checkpoint_forever()),
            asyncio.create_task(self._sweep_idempotency_forever()),
        ]
        if self.sweeps:
            self._tasks.append(asyncio.create_task(self._sweep_retention_forever()))
        if self.embeddings is not None:
            self._tasks.append(asyncio.create_task(self.embeddings.run_forever()))
        if self.live is not None:
            self._tasks.append(asyncio.create_task(self.live.run_forever()))

    async def _checkpoint_forever(self, every: float = 1.0) -> None:
        """SQLite's write-ahead log is checkpointed here, off the event loop's thread."""
        if not self.db.is_sqlite:
            return
        while True:
            await asyncio.sleep(every)
            try:
                await self.db.checkpoint()
            except StoreUnavailable as exc:
                log.warning("SQLite checkpoint skipped: %s", exc)

    async def _sweep_idempotency_forever(self, every: float = 3600.0) -> None:
        """Idempotency records past their time go (owners who come back sweep their own)."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.idempotency.sweep()
            except StoreUnavailable as exc:
                log.warning("idempotency sweep skipped: %s", exc)

    async def _sweep_retention_forever(self) -> None:
        """Account deletions an interruption left half done are finished at start-up;
        conversations past their retention go then and every sweep interval."""
        while True:
            try:
                if self.deletion is not None:
                    await self.deletion.finish_pending()
                if self.retention is not None:
                    await self.retention.sweep()
            except (StoreUnavailable, RedisError, OSError) as exc:
                log.warning("retention sweep skipped: %s", exc)
            await asyncio.sleep(self.settings.retention_sweep_seconds)

    async def _sweep_orphans_forever(self) -> None:
        if not self.chat.locks.shared:
            return  # a lone process closed everything at start-up
        while True:
            await asyncio.sleep(self.settings.run_lease_seconds / 2)
            try:
                await self.chat.sweep_orphans()
            except (StoreUnavailable, RedisError, OSError) as exc:
                log.warning("orphan sweep skipped: %s", exc)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.imports is not None:
            await self.imports.close()
        await self.chat.shutdown()
        if self.runs.titles is not None:
            await self.runs.titles.close()
        await self.chat.summaries.close()
        if self.chat.extractor is not None:
            await self.chat.extractor.close()
        await self.tools.close()  # MCP servers stop after the runs that used them
        if self.mirror is not None:
            await self.mirror.close()
        await self.providers.close()
        if self.embeddings is not None:
            await self.embeddings.embedder.close()
            if isinstance(self.embeddings.choice, AgentEmbedders):
                await self.embeddings.choice.close()
        await self.events.close()
        await self.chat.locks.close()
        await self.streams.close()
        await self.signin_slots.close()
        await self.memory.close()
        await self.db.close()


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


def _hot_window(settings: Settings) -> HotWindow:
    if settings.redis_url:
        return RedisHotWindow(
            _redis(settings, socket_timeout=settings.redis_socket_timeout),
            prefix=settings.redis_prefix,
            window=settings.context_window,
            ttl_seconds=settings.hot_ttl_seconds,
            breaker=CircuitBreaker(cooldown=settings.redis_breaker_cooldown),
        )
    return LocalHotWindow(
        window=settings.context_window,
        max_conversations=settings.hot_max_conversations,
        max_chars=settings.hot_max_chars,
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


def _run_events(settings: Settings, hot: HotWindow) -> RunEventLog:
    """In process; with Redis, also copied to Redis Streams for resuming on any instance."""
    local = LocalRunEventLog(retention=settings.run_buffer_ttl_seconds)
    if not isinstance(hot, RedisHotWindow):
        return local
    block_ms = 5000
    return RedisRunEventLog(
        local=local,
        writer=hot.client,
        reader=_redis(settings, socket_timeout=block_ms / 1000 + 5),
        prefix=settings.redis_prefix,
        retention=settings.run_buffer_ttl_seconds,
        block_ms=block_ms,
        breaker=hot.breaker,
    )


def _live_hub(settings: Settings, hot: HotWindow) -> LiveHub:
    """Owners' live notices: through Redis Pub/Sub when there is one (every instance)."""
    if not isinstance(hot, RedisHotWindow):
        return LiveHub(LocalLiveBus())
    listener = _redis(settings, socket_timeout=None)
    return LiveHub(
        RedisLiveBus(hot.client, listener, prefix=settings.redis_prefix, breaker=hot.breaker)
    )


def _run_locks(settings: Settings, hot: HotWindow) -> RunLocks:
    """Shared through Redis when there is one, so several instances respect each other."""
    if not isinstance(hot, RedisHotWindow):
        return LocalRunLocks()
    return RedisRunLocks(
        hot.client,
        _redis(settings, socket_timeout=None),
        prefix=settings.redis_prefix,
        lease_ms=int(settings.run_lease_seconds * 1000),
        breaker=hot.breaker,
    )


def _signin_slots(settings: Settings) -> Slots:
    """Sign-in attempts, counted in Redis when there is one, so every worker and instance
    counts together. Its own client and breaker: a burst of sign-ins opens connections
    faster than the hot window's 200 ms connect timeout allows on a busy machine, and a
    slow count must not trip the hot window's breaker (a sign-in can wait a little)."""
    if not settings.redis_url:
        return LocalSlots()
    timeout = max(settings.redis_socket_timeout, _SLOTS_REDIS_TIMEOUT)
    return RedisSlots(
        _redis(settings, socket_timeout=timeout),
        prefix=settings.redis_prefix,
        breaker=CircuitBreaker(cooldown=settings.redis_breaker_cooldown),
    )


def _run_slots(settings: Settings, hot: HotWindow) -> Slots:
    """Runs and streams per owner, counted in Redis when there is one. Through the hot
    window's client and breaker, as the run locks are: every turn takes a slot, so a
    Redis that froze costs a turn one short socket timeout and then is skipped at once,
    not the sign-ins' 2 s wait per turn in flight (what a paused Redis cost before)."""
    if not isinstance(hot, RedisHotWindow):
        return LocalSlots()
    return RedisSlots(hot.client, prefix=settings.redis_prefix, breaker=hot.breaker)


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


async def open_services(settings: Settings, *, recover: bool = True) -> Services:
    """Build every part; with ``recover``, close runs a crash left open."""
    db = SQLDatabase(create_engine(settings.async_database_url))
    # Answer flushes of all runs within this window share a transaction; well inside the
    # flush rate cap (interval / 5), so a run's flushes never wait on each other.
    flush_window = min(0.05, settings.flush_interval_ms / 1000 / 5)
    hot = _hot_window(settings)
    slots = _signin_slots(settings)
    run_slots = _run_slots(settings, hot)
    # The write strategy, chosen once: inline on SQLite, one statement per phase on
    # PostgreSQL, a run_sync transaction elsewhere (storage/sql/write_paths.py).
    cold = SQLColdStore(db, write_path=write_paths.for_database(db), flush_window=flush_window)
    quotas = OwnerQuotas(
        db,
        max_conversations=settings.max_conversations_per_owner,
        max_messages_per_day=settings.max_messages_per_owner_per_day,
        max_stored_bytes=settings.max_stored_bytes_per_owner,
    )
    memory = MemoryManager(cold, hot, window=settings.context_window, quotas=quotas)
    idempotency = IdempotencyStore(db, ttl=settings.idempotency_ttl_seconds)
    memory.hooks.on_delete(idempotency.conversation_deleted)  # what is deleted is not replayed
    reads = MemoryReads.over(cold, db, window=settings.context_window)
    registry = AgentRegistry(settings.agents_dir)
    providers = ProviderFactory(settings)
    events = _run_events(settings, hot)
    records = RunStore(db)
    summaries = SummaryKeeper(
        memory, reads.lookup, reads.summaries, providers, window=settings.context_window
    )
    embeds = embedder(settings)
    retriever = Retriever(db, embeds)
    embeddings = None
    if embeds is not None:  # agents may choose their own embedder (config.json "embeddings")
        choice = AgentEmbedders(registry, embeds, timeout=settings.embeddings_timeout)
        embeddings = EmbedWorker(db, embeds, choice=choice)
        retriever.choice = choice
    long_term = LongTermMemory(db, embeds, max_per_owner=settings.max_memories_per_owner)
    # what was learnt in a deleted conversation or message stays, marked "source deleted"
    sources = DeletedSources(db)
    memory.hooks.on_delete(sources.conversation_deleted)
    memory.hooks.on_rows_removed(sources.rows_removed)
    if embeddings is not None:
        memory.hooks.on_final(embeddings.on_final)
        retriever.on_missing = embeddings.due
    tools = ToolCatalog(
        start_timeout=settings.mcp_start_timeout_seconds,
        retry_seconds=settings.mcp_retry_seconds,
        compute=ComputePool(workers=settings.tool_workers, deadline=settings.tool_cpu_seconds),
        recall=Recall(reads.lookup, retriever),
        memories=MemoryTools(long_term),
    )
    message_files, file_store = MessageFileStore(db), FileStore(db)
    chat = ChatEngine(
        settings=settings,
        memory=memory,
        lookup=reads.lookup,
        context=reads.context,
        runs=records,
        registry=registry,
        providers=providers,
        sessions=SessionPool(
            max_size=settings.session_pool_size,
            idle_seconds=settings.session_idle_seconds,
            max_chars=settings.session_pool_chars,
        ),
        events=events,
        locks=_run_locks(settings, hot),
        prompts=PromptVersions(PromptStore(db)),
        summaries=summaries,
        tools=tools,
        cap=RunCap(
            run_slots,
            limit=settings.max_active_runs_per_owner,
            lease_seconds=settings.run_lease_seconds,
        ),
        extractor=MemoryExtractor(long_term, providers),
        links=message_files,
        files=file_store,
    )
    archive = ArchiveService(
        memory,
        reads.lookup,
        reads.archive,
        settings.data_dir,
        limits=ImportLimits.from_settings(settings),
        memories=long_term,
    )
    chat.sessions.on_drop.append(providers.acp.forget)  # acp agents: their process too
    memory.hooks.on_delete(AcpCleanup(providers.acp, registry).deleted)  # and their files
    mirror = ArchiveMirror(archive) if settings.archive_mirror else None
    if mirror is not None:
        mirror.attach()
    agents = AgentService(registry, settings, tools)
    live = _live_hub(settings, hot)
    auth, signin, accounts, users = _access(settings, db, slots, live)
    conversations = ConversationService(
        memory, reads.lookup, agents, archive, reads.conversations, live
    )
    titles = Titles(conversations, timeout=settings.title_timeout_seconds)
    attachments = Attachments(
        message_files,
        max_files=settings.max_files_per_message,
        max_bytes=settings.max_message_file_bytes,
    )
    runs = RunService(chat, records, reads.lookup, reads.runs, live, titles, attachments)
    gateway = OpenAIGateway(
        agents,
        runs,
        memory,
        reads.lookup,
        reads.gateway,
        caps=InputCaps(settings.gateway_max_messages, settings.max_task_chars),
    )
    services = Services(
        settings=settings,
        agents=agents,
        conversations=conversations,
        runs=runs,
        permissions=AgentPermissions(chat),
        health=HealthService(memory),
        search=SearchService(reads.lookup, reads.search),
        recall=RecallService(reads.lookup, retriever),
        auth=auth,
        signin=signin,
        accounts=accounts,
        users=users,
        archive=archive,
        idempotency=idempotency,
        gateway=gateway,
        responses=ResponsesService(
            gateway,
            runs,
            memory,
            reads.lookup,
            reads.runs,
            reads.conversations,
            ImageLimits(
                settings.llm_provider,
                settings.responses_max_images,
                settings.responses_max_image_chars,
            ),
        ),
        openai_conversations=OpenAIConversations(
            memory, reads.lookup, agents, runs, reads.conversations, reads.gateway, gateway.caps
        ),
        db=db,
        memory=memory,
        reads=reads,
        registry=registry,
        providers=providers,
        chat=chat,
        events=events,
        tools=tools,
        signin_slots=slots,
        streams=StreamCap(run_slots, lease_seconds=settings.run_lease_seconds),
        mirror=mirror,
        embeddings=embeddings,
        memories=MemoryService(long_term, agents),
        live=live,
        imports=ImportService(
            archive,
            agents,
            long_term,
            max_bytes=settings.import_max_bytes,
            extractor=chat.extractor,
            on_stored=(lambda c: embeddings.due(c.id)) if embeddings is not None else None,
        ),
        exchanges=ExchangeLog(memory, conversations, runs, chat.extractor, gateway.caps),
    )
    purge = ConversationPurge(memory, reads.conversations, archive)
    services.retention = Retention(
        purge, reads.conversations, registry, default_days=settings.retention_days
    )
    services.files = FileService(
        file_store,
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
    archive.files = ArchiveFileStore(services.files)
    gateway.files = GatewayFiles(services.files, agents, default_provider=settings.llm_provider)
    services.account_export = AccountExport(
        reads.conversations, archive, accounts, long_term, services.files
    )
    services.deletion = AccountDeletion(
        users=UserStore(db),
        auth=auth,
        passwords=Passwords(min_length=settings.password_min_length),
        audit=AuditLog(AuditStore(db)),
        purge=purge,
        archive=archive,
        live=live,
        files=services.files,
        forget_owner=[chat.cap.forget, services.streams.forget, signin.limits.forget],
    )
    metric_hooks.install(
        run_observers=chat.driver.observers,
        window_listeners=memory.stats.listeners,
        breaker_listeners=hot.breaker.listeners if isinstance(hot, RedisHotWindow) else None,
        summary_hooks=summaries.on_written,
        engines=db.engines,
        agents=[agent.id for agent in await asyncio.to_thread(registry.list)],
        tools=[*BUILTINS, RECALL],
        memory_hooks=long_term.on_changed,
        extraction_failure_hooks=chat.extractor.on_failed,
    )
    if recover:
        await chat.recover()
    services.sweeps = recover
    services.start_background()
    return services


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
