"""Lumina's Python client: ``Lumina`` (sync) and ``AsyncLumina`` (asyncio) over its REST
API; ``lumina_client.langchain`` and ``lumina_client.langgraph`` adapt it to those
frameworks (extras ``[langchain]``, ``[langgraph]``)."""

from lumina_client.async_client import AsyncLumina
from lumina_client.client import Lumina
from lumina_client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    LuminaConnectionError,
    LuminaError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServerError,
)
from lumina_client.models import (
    Answer,
    ChunkEvent,
    Conversation,
    DoneEvent,
    ErrorEvent,
    Hit,
    Memory,
    Message,
    Run,
    RunAccepted,
    RunContext,
    SessionEvent,
    StreamEvent,
    ToolCallEvent,
    ToolResultEvent,
)

__all__ = [
    "APIError",
    "Answer",
    "AsyncLumina",
    "AuthenticationError",
    "BadRequestError",
    "ChunkEvent",
    "ConflictError",
    "Conversation",
    "DoneEvent",
    "ErrorEvent",
    "Hit",
    "Lumina",
    "LuminaConnectionError",
    "LuminaError",
    "Memory",
    "Message",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "Run",
    "RunAccepted",
    "RunContext",
    "ServerError",
    "SessionEvent",
    "StreamEvent",
    "ToolCallEvent",
    "ToolResultEvent",
]
