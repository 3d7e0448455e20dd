"""Domain errors; the API maps each to one HTTP status in one place."""

from __future__ import annotations


class LuminaError(Exception):
    """Base of every error Lumina raises on purpose."""

    code = "error"


class NotFound(LuminaError):
    code = "not_found"


class ConversationNotFound(NotFound):
    def __init__(self, conversation_uuid: str) -> None:
        super().__init__(f"conversation {conversation_uuid!r} not found")


class MessageNotFound(NotFound):
    """No such message where it was looked for (e.g. no question at that seq)."""


class AgentNotFound(NotFound):
    def __init__(self, agent_id: str) -> None:
        super().__init__(f"agent {agent_id!r} not found")


class RunNotFound(NotFound):
    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} not found")


class AgentUnavailable(LuminaError):
    """The agent's folder exists but its definition is broken."""

    code = "agent_unavailable"


class ConversationBusy(LuminaError):
    """A run is already active on the conversation; carries its id."""

    code = "conversation_busy"

    def __init__(self, conversation_uuid: str, run_id: str) -> None:
        super().__init__(f"conversation {conversation_uuid!r} is busy with run {run_id!r}")
        self.run_id = run_id


class RequestInProgress(LuminaError):
    """The same idempotent request is still being served."""

    code = "in_progress"


class InvalidInput(LuminaError):
    code = "invalid_input"


class InputTooLarge(InvalidInput):
    code = "too_large"


class UnsupportedFileType(InvalidInput):
    """An upload whose bytes are none of the accepted types (docs/FILES.md): a 415."""

    code = "unsupported_media_type"


class FileRefused(InvalidInput):
    """A file whose reading passes a limit (a PDF bomb, too many pages, too slow): a 422
    with nothing stored (docs/FILES.md)."""

    code = "file_refused"


class StoreUnavailable(LuminaError):
    """The system of record (SQL) cannot be reached; nothing was acknowledged."""

    code = "store_unavailable"


class NotAuthenticated(LuminaError):
    """No valid credentials: a bearer key or a signed-in session is needed."""

    code = "unauthorized"


class AccessDenied(LuminaError):
    """The caller is known (or its address is) but may not come in this way."""

    code = "forbidden"


class TooManyAttempts(LuminaError):
    """Too many failed sign-ins from one address or for one account; try again later."""

    code = "rate_limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TooManyStreams(LuminaError):
    """The caller already has as many streams open as one owner may; nothing was started."""

    code = "too_many_streams"
    retry_after = 5  # seconds: streams end as their answers do

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"at most {limit} streams may be open at once per caller; close one or retry later"
        )


class TooManyRuns(LuminaError):
    """The owner already has as many runs going as one owner may; nothing was started."""

    code = "too_many_runs"
    retry_after = 5  # seconds: runs end as their answers do

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"at most {limit} runs may go at once per owner; wait for one to end and retry"
        )


class QuotaExceeded(LuminaError):
    """An owner's quota (``setting``) would be passed: nothing was stored."""

    code = "quota_exceeded"

    def __init__(self, message: str, *, setting: str, limit: int, retry_after: int | None) -> None:
        super().__init__(f"{message}; the limit is {limit} ({setting})")
        self.retry_after = retry_after


class StoredBytesExceeded(QuotaExceeded):
    """An owner's stored text reached ``LUMINA_MAX_STORED_BYTES_PER_OWNER``: a 413, since
    waiting frees nothing (deleting does)."""


class UsernameTaken(LuminaError):
    """An account with that username already exists."""

    code = "conflict"

    def __init__(self, username: str) -> None:
        super().__init__(f"the username {username!r} is taken")


class UserNotFound(NotFound):
    def __init__(self, username: str) -> None:
        super().__init__(f"user {username!r} not found")


class KeyNotFound(NotFound):
    def __init__(self, key_id: int) -> None:
        super().__init__(f"API key {key_id} not found")


class SessionNotFound(NotFound):
    def __init__(self, session_id: int) -> None:
        super().__init__(f"session {session_id} not found")
