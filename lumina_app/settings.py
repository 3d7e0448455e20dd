"""Lumina's settings: one pydantic-settings class, read once, env prefix ``LUMINA_``."""

from __future__ import annotations

import ipaddress
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

_SYNC_TO_ASYNC_DRIVER = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+pysqlite": "sqlite+aiosqlite",
    "mysql": "mysql+aiomysql",
    "mysql+pymysql": "mysql+aiomysql",
    "mariadb": "mysql+aiomysql",
    "mariadb+pymysql": "mysql+aiomysql",
    "postgresql": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


class SettingsError(RuntimeError):
    """A setting has a bad value; the message names the variable."""


class Settings(BaseSettings):
    """Every knob Lumina has. Names are the contract in ARCHITECTURE.md § Settings."""

    model_config = SettingsConfigDict(env_prefix="LUMINA_", extra="ignore")

    database_url: str = "sqlite:///data/lumina.db"
    redis_url: str | None = None
    redis_prefix: str = "lumina"
    redis_socket_timeout: float = Field(0.2, gt=0)
    redis_breaker_cooldown: float = Field(2.0, gt=0)
    # Connections each of a worker's Redis clients may open (docs/OPERATIONS.md); past that
    # a command waits up to redis_pool_timeout_seconds for one, then counts as Redis away.
    redis_max_connections: int = Field(128, ge=2)
    redis_pool_timeout_seconds: float = Field(2.0, gt=0)
    hot_ttl_seconds: int = Field(7 * 24 * 3600, ge=1)
    hot_max_conversations: int = Field(10_000, ge=1)
    # the in-process window's text in all (no Redis): beyond it the least recent go
    hot_max_chars: int = Field(50_000_000, ge=1)
    context_window: int = Field(20, ge=1, le=1000)
    data_dir: Path = Path("./data")
    llm_provider: str = "demo"
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_model: str | None = None
    llm_timeout: float = Field(60.0, gt=0)
    title_timeout_seconds: float = Field(15.0, gt=0)  # a new conversation's title proposal
    demo_delay_ms: float = Field(30.0, ge=0)
    # recall's semantic half: ``local`` (weights inside the wordllama wheel, offline),
    # ``openai`` (any /v1/embeddings server at embeddings_base_url), or ``off``
    embeddings_provider: Literal["local", "openai", "off"] = "local"
    embeddings_base_url: str | None = None
    embeddings_api_key: str | None = None
    embeddings_model: str | None = None
    embeddings_timeout: float = Field(30.0, gt=0)
    api_keys: str | None = None
    max_task_chars: int = Field(32_000, ge=1)
    max_body_bytes: int = Field(256 * 1024, ge=1024)
    # How deep a JSON body may nest ([ and {), counted as it arrives, before any parsing:
    # deeper is a 422 (400 at the OpenAI doors), never a parser's or serializer's 500.
    max_json_depth: int = Field(64, ge=8, le=200)
    # Messages one /v1/chat/completions request may bring (its history and the new one);
    # each of them is held to max_task_chars like the new one (docs/SECURITY.md).
    gateway_max_messages: int = Field(1000, ge=2, le=10_000)
    # Image input of the Responses API (a vision agent's): images in one request, and the
    # characters of each one's image_url (a data: URL is its bytes in base64; the body cap
    # max_body_bytes still bounds the request). More is a 413.
    responses_max_images: int = Field(8, ge=1, le=64)
    responses_max_image_chars: int = Field(200_000, ge=1024)
    session_idle_seconds: float = Field(1800.0, gt=0)
    session_pool_size: int = Field(1000, ge=1)
    # the characters the warm sessions hold in all (their messages' text): ~50-100 MB
    session_pool_chars: int = Field(50_000_000, ge=1)
    flush_interval_ms: float = Field(250.0, ge=0)
    flush_chars: int = Field(200, ge=1)
    cancel_on_disconnect: bool = False
    run_lease_seconds: float = Field(10.0, gt=0)
    run_buffer_ttl_seconds: int = Field(300, ge=1)
    sse_keepalive_seconds: float = Field(15.0, gt=0)
    sse_send_timeout_seconds: float = Field(30.0, gt=0)
    archive_mirror: bool = False
    # Conversations untouched this many days are deleted by the sweep (an agent's
    # config.json "retentionDays" overrides it); 0 keeps them forever.
    retention_days: int = Field(0, ge=0)
    retention_sweep_seconds: float = Field(3600.0, gt=0)  # how often the server sweeps
    log_format: Literal["text", "json"] = "text"  # json: one object per line, with run ids
    mcp_start_timeout_seconds: float = Field(20.0, gt=0)  # an MCP server's start-up
    mcp_retry_seconds: float = Field(30.0, ge=0)  # before starting a failed server again
    # "provider": "acp" agents: one agent process per active conversation (docs/ACP.md)
    acp_max_processes: int = Field(16, ge=1)  # live at once (least recently used ends first)
    acp_idle_seconds: float = Field(600.0, gt=0)  # an idle process ends after this
    acp_max_starting: int = Field(2, ge=1)  # processes starting at once
    acp_start_timeout_seconds: float = Field(30.0, gt=0)  # to initialize and open a session
    acp_permission_timeout_seconds: float = Field(120.0, gt=0)  # "ask": then rejected
    # Fair shares: busy agent processes and waiting permission prompts per owner (unset: a
    # quarter of acp_max_processes, at least 1; prompts: as many as processes).
    acp_max_per_owner: int | None = Field(None, ge=1)
    acp_max_asks_per_owner: int | None = Field(None, ge=1)
    acp_file_timeout_seconds: float = Field(10.0, gt=0)  # one fs/* call of an agent
    acp_max_file_bytes: int = Field(4 * 1024 * 1024, ge=1)  # one fs/* read or write
    # Built-ins whose cost depends on their input (the calculator) run in worker processes
    # (per server process), killed after tool_cpu_seconds or the agent's toolTimeoutSeconds.
    tool_workers: int = Field(2, ge=1, le=64)
    tool_cpu_seconds: float = Field(5.0, gt=0)

    # -- the trust boundary (docs/SECURITY.md) ------------------------------------------
    host: str = "127.0.0.1"
    trust_loopback: bool = True
    allowed_origins: str | None = None
    allowed_hosts: str | None = None
    session_ttl_hours: float = Field(14 * 24, gt=0)
    signin_attempts_per_minute: int = Field(10, ge=1)  # sign-in attempts per address
    signin_attempts_per_user_per_minute: int = Field(10, ge=1)  # ... and per username
    password_min_length: int = Field(12, ge=8, le=256)

    # -- connection and stream limits (docs/SECURITY.md) --------------------------------
    header_read_timeout_seconds: float = Field(10.0, gt=0)  # also the idle keep-alive timeout
    max_connections: int = Field(4096, ge=16)  # open connections per worker process
    connection_reserve: int = Field(64, ge=1)  # of those, kept for health checks
    max_streams_per_owner: int = Field(32, ge=1)  # open SSE streams per owner per worker
    body_read_timeout_seconds: float = Field(10.0, gt=0)  # a whole request body, or 408
    # Requests in flight per client address per worker (streams, websockets, bodies still
    # arriving), or 429; 0 = no cap (behind a proxy every client has the proxy's address).
    max_requests_per_address: int = Field(256, ge=0)
    # Runs going at once per owner, every way a run starts; with Redis across instances.
    max_active_runs_per_owner: int = Field(16, ge=1)

    # -- archive import limits (docs/ARCHIVE.md) ----------------------------------------
    import_max_file_bytes: int = Field(64 * 1024**2, ge=1024)
    import_max_zip_bytes: int = Field(1024**3, ge=1024)
    import_max_zip_members: int = Field(100_000, ge=1)
    # Another product's chat export (docs/IMPORTS.md): the upload, and its conversations
    # file once unzipped; over it, 413 and nothing imported.
    import_max_bytes: int = Field(128 * 1024**2, ge=1024)
    # One uploaded file (POST /api/v1/files, docs/FILES.md): over it, 413 and nothing
    # stored. Its request may carry this much plus the multipart framing.
    max_file_bytes: int = Field(20 * 1024**2, ge=1024)
    # The text read out of a file at upload (docs/FILES.md): kept up to this many
    # characters (the rest cut, noted). A PDF is read in a worker process within a wall
    # clock, an address space, a page count and a count of characters produced: past any,
    # the upload is a 422 and nothing is stored. At most ``pdf_workers`` run at once.
    max_file_text_chars: int = Field(2_000_000, ge=1000)
    pdf_timeout_seconds: float = Field(20.0, gt=0)
    pdf_max_memory_bytes: int = Field(768 * 1024**2, ge=128 * 1024**2)
    pdf_max_pages: int = Field(500, ge=1)
    pdf_max_chars: int = Field(5_000_000, ge=1000)
    pdf_workers: int = Field(2, ge=1)
    # Files one message may carry (``files`` on a send, docs/FILES.md), and their bytes
    # together: over either, 413 and nothing stored.
    max_files_per_message: int = Field(10, ge=1, le=100)
    max_message_file_bytes: int = Field(50 * 1024**2, ge=1024)
    # What a context carries of files (docs/FILES.md, "To the model"): images a vision
    # agent is sent (the newest questions' first; older ones as ``[image: name]``), and
    # the tokens of file text for an agent without ``memory.contextTokens``.
    max_images_per_context: int = Field(8, ge=0, le=100)
    max_context_image_bytes: int = Field(5 * 1024**2, ge=1024)  # larger: ``[image: name]``
    file_context_tokens: int = Field(16_000, ge=0)

    # -- idempotency keys ---------------------------------------------------------------
    idempotency_lease_seconds: float = Field(30.0, gt=0)
    # A recorded response is replayed for this long after its request, then forgotten
    # (swept by the server as the owner sends keys, and by ``python -m lumina_app sweep``).
    idempotency_ttl_seconds: int = Field(24 * 3600, ge=60)

    # -- quotas per owner (docs/SECURITY.md; 0 = no quota) --------------------------------
    # Conversations an owner may have at once, and messages stored in an owner's
    # conversations in any 24 hours (questions, answers, imported or added history); past
    # either, whatever would create more is refused with a 429 naming the limit.
    max_conversations_per_owner: int = Field(0, ge=0)
    max_messages_per_owner_per_day: int = Field(0, ge=0)
    # The bytes of text (UTF-8) stored in an owner's messages: at or past it, new input is
    # refused with a 413 naming the limit (an answer already streaming still ends).
    max_stored_bytes_per_owner: int = Field(0, ge=0)
    # The bytes of the files an owner keeps (each distinct content counted once): an
    # upload that would pass it is a 413 naming the limit. 0 = no limit.
    max_file_bytes_per_owner: int = Field(1024**3, ge=0)
    # Long-term memories an owner may keep (current ones and their history; forgotten ones
    # not counted), whoever adds them (REST, the Memory page, tools, MCP, the extractor,
    # imports): past it, a 429 / a tool error naming the limit. 0 = no limit.
    max_memories_per_owner: int = Field(5000, ge=0)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        try:
            url = make_url(value)
        except ArgumentError as exc:
            raise ValueError(f"malformed database URL {value!r}") from exc
        if url.drivername not in _SYNC_TO_ASYNC_DRIVER:
            known = ", ".join(sorted(_SYNC_TO_ASYNC_DRIVER))
            raise ValueError(f"unsupported driver {url.drivername!r} (use one of: {known})")
        return value

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError(f"expected redis://host:port/db, got {value!r}")
        return value

    @field_validator("llm_provider")
    @classmethod
    def _check_provider(cls, value: str) -> str:
        if value not in ("demo", "openai"):
            raise ValueError(f"unknown provider {value!r} (use demo or openai)")
        return value

    @model_validator(mode="after")
    def _check_embeddings(self) -> Settings:
        if self.embeddings_provider == "openai" and not (
            self.embeddings_base_url and self.embeddings_model
        ):
            raise ValueError(
                "LUMINA_EMBEDDINGS_PROVIDER=openai needs LUMINA_EMBEDDINGS_BASE_URL and "
                "LUMINA_EMBEDDINGS_MODEL"
            )
        return self

    @field_validator("host")
    @classmethod
    def _check_host(cls, value: str) -> str:
        value = value.strip()
        if not value or any(c in value for c in "/ @"):
            raise ValueError(f"expected an address or host name to listen on, got {value!r}")
        return value

    @field_validator("allowed_origins")
    @classmethod
    def _check_origins(cls, value: str | None) -> str | None:
        for origin in _split(value):
            scheme, sep, rest = origin.partition("://")
            if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
                raise ValueError(f"an origin is scheme://host[:port], got {origin!r}")
        return value

    @property
    def host_is_loopback(self) -> bool:
        """Whether the server listens on this machine only."""
        return is_loopback_name(self.host)

    @property
    def allowed_host_names(self) -> frozenset[str] | None:
        """Host header names requests may carry (port ignored); None: any (``*``)."""
        extra = {h.lower() for h in _split(self.allowed_hosts)}
        if "*" in extra:
            return None
        names = {"localhost", "127.0.0.1", "::1"} | extra
        if self.host not in ("0.0.0.0", "::", "[::]"):  # a wildcard listens on every name
            names.add(self.host.lower().strip("[]"))
        return frozenset(names)

    @property
    def allowed_origin_list(self) -> tuple[str, ...]:
        """Origins besides the app's own that may call it from a browser (CORS, socket)."""
        return tuple(o.rstrip("/").lower() for o in _split(self.allowed_origins))

    @property
    def async_database_url(self) -> str:
        """The same database through its asyncio driver (the app is async all the way)."""
        url = make_url(self.database_url)
        url = url.set(drivername=_SYNC_TO_ASYNC_DRIVER[url.drivername])
        if url.get_backend_name() == "mysql" and "charset" not in url.query:
            url = url.update_query_dict({"charset": "utf8mb4"})
        return url.render_as_string(hide_password=False)

    @property
    def agents_dir(self) -> Path:
        return self.data_dir / "agents"

    @property
    def api_key_map(self) -> dict[str, str]:
        """``{key: owner}`` from ``owner:key,owner:key``."""
        pairs: dict[str, str] = {}
        for item in _split(self.api_keys):
            owner, _, key = item.partition(":")
            if not owner or not key:
                raise SettingsError("LUMINA_API_KEYS: each entry must be owner:key")
            pairs[key] = owner
        return pairs


def _split(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def is_loopback_name(host: str | None) -> bool:
    """127.0.0.0/8, ::1 and ``localhost`` (what a same-machine client connects from or to)."""
    if not host:
        return False
    name = host.strip("[]").split("%")[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def load_settings(**overrides: object) -> Settings:
    """Build settings, turning a validation error into one line naming the variable."""
    try:
        settings = Settings(**overrides)
        settings.api_key_map  # noqa: B018 - validate eagerly
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "LUMINA_" + str(first["loc"][0]).upper() if first["loc"] else "LUMINA_*"
        raise SettingsError(f"{name}: {first['msg']}") from None
    return settings


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return load_settings()


def secret_from_environment(name: str) -> str | None:
    """A key an agent's config.json names by variable (``"apiKeyEnv"``), read when the
    agent is loaded, so the key itself never sits in the agent's folder."""
    return os.environ.get(name) or None
