"""The trust boundary at the door, for everything the app serves (the API, the UI's socket,
its pages): the Host a request names, the Origin a browser says it comes from, and the
cross-site rule for state changes (docs/SECURITY.md).

* **Host** must be one this deployment answers to (the loopback names, ``LUMINA_HOST``,
  ``LUMINA_ALLOWED_HOSTS``): a rebound DNS name pointing a page at this machine is refused.
* **Origin**, when a browser sends one, must be this app's own (same host and port) or in
  ``LUMINA_ALLOWED_ORIGINS`` — for the API and for the socket's handshake alike.
* **State changes** under ``/api/`` and ``/v1/`` that a browser sends on ambient
  credentials (the session cookie, or a loopback address) must not be "simple" requests: a
  POST needs a JSON body or an ``X-Requested-With`` header, which a page on another site
  cannot send without the browser asking this server first (PUT, PATCH and DELETE are always
  asked about). A bearer key is not ambient; a script or curl is not a browser: they need
  neither.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lumina_app.settings import Settings, get_settings

# The one state-changing method a foreign page can send without the browser asking first
# (PUT, PATCH and DELETE are always preflighted, and the preflight is refused).
SIMPLE_UNSAFE = "POST"
GUARDED_PREFIXES = ("/api/", "/v1/")
# A browser sends at least one of these with every POST (Origin always, per the Fetch
# standard); a script or curl sends none, and so cannot be a page riding on credentials.
_BROWSER_MARKERS = (b"origin", b"referer", b"sec-fetch-site", b"cookie")
_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


def host_name(host: str) -> str:
    """The name part of a Host header or netloc (``[::1]:3000`` → ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class TrustPolicy:
    """The decisions, as plain functions of headers (tested on their own)."""

    def __init__(self, settings: Settings) -> None:
        self.hosts = settings.allowed_host_names
        self.origins = frozenset(settings.allowed_origin_list)

    def host_refusal(self, host: str | None) -> str | None:
        if self.hosts is None:
            return None
        if not host:
            return "the request names no Host"
        if host_name(host) not in self.hosts:
            return f"host {host!r} is not served here (LUMINA_ALLOWED_HOSTS)"
        return None

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        """The app's own origin (same host and port as the Host header), or a listed one."""
        origin = origin.strip().lower().rstrip("/")
        if origin in self.origins:
            return True
        parts = urlsplit(origin)
        return bool(host) and parts.scheme in ("http", "https") and parts.netloc == host.lower()

    def refusal(self, method: str, path: str, headers: dict[bytes, bytes]) -> str | None:
        """Why this request may not come in, or None."""
        host = _text(headers.get(b"host"))
        reason = self.host_refusal(host)
        if reason:
            return reason
        origin = _text(headers.get(b"origin"))
        if origin is not None and not self.origin_allowed(origin, host):
            return f"requests from {origin!r} are not allowed (LUMINA_ALLOWED_ORIGINS)"
        if method != SIMPLE_UNSAFE or not path.startswith(GUARDED_PREFIXES):
            return None
        if b"authorization" in headers:
            return None  # a bearer key: nothing a foreign page could send on its own
        if origin is None:
            referer = _text(headers.get(b"referer"))
            if referer and not self.origin_allowed(_origin_of(referer), host):
                return "a state change referred by another site is refused"
        if not any(marker in headers for marker in _BROWSER_MARKERS):
            return None  # not a browser (curl, a script): no page can have sent it
        content_type = (_text(headers.get(b"content-type")) or "").split(";")[0].strip().lower()
        if content_type == "application/json" or content_type.endswith("+json"):
            return None
        if b"x-requested-with" in headers:
            return None
        return (
            "a state change needs a JSON body (Content-Type: application/json), an "
            "X-Requested-With header or a bearer key: a page on another site cannot send those"
        )


class GuardMiddleware:
    """ASGI middleware applying :class:`TrustPolicy` to every HTTP request and websocket
    handshake, and adding headers that keep responses from being sniffed or framed."""

    def __init__(self, app: ASGIApp, *, settings: Settings | None = None) -> None:
        self.app = app
        self._settings = settings
        self._policy: TrustPolicy | None = None

    @property
    def policy(self) -> TrustPolicy:
        """Built on first use: importing the app must not read settings."""
        if self._policy is None:
            self._policy = TrustPolicy(self._settings or get_settings())
        return self._policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        method = scope.get("method", "GET")
        reason = self.policy.refusal(method, scope.get("path", ""), headers)
        if reason is not None:
            if kind == "websocket":
                await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
            else:
                await _refuse(send, reason)
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


async def _refuse(send: Send, reason: str) -> None:
    body = orjson.dumps({"error": {"code": "forbidden", "message": reason}})
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *_SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _text(value: bytes | None) -> str | None:
    return value.decode("latin-1") if value is not None else None


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def socket_origin_allowed(origin: str | None, environ: dict) -> bool:
    """Engine.IO's own Origin check for the UI socket, on the same rule (the guard has
    already refused a foreign Origin before the handshake reaches it)."""
    if origin is None:
        return True
    host = environ.get("HTTP_HOST")
    return TrustPolicy(get_settings()).origin_allowed(origin, host)
