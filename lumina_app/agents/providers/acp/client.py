"""Lumina's side of one ACP connection: the agent's ``session/update`` stream turned into
Lumina's provider events, its permission requests answered by the agent's policy, and its
file reads and writes confined to the conversation's folder."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    WriteTextFileResponse,
)

from lumina_app.agents.definitions.acp_config import Permissions
from lumina_app.agents.providers.acp.files import AgentFiles, FileRefused
from lumina_app.domain import TextDelta, ThinkingDelta, ToolCallFinished, ToolCallRequested, Usage

log = logging.getLogger(__name__)

READ_KINDS = frozenset({"read", "search", "think"})  # what "allow-reads" lets through
_RESULT_CHARS = 16_000

AcpItem = TextDelta | ThinkingDelta | Usage | ToolCallRequested | ToolCallFinished


@dataclass(slots=True)
class PermissionRequest:
    """A ``session/request_permission`` waiting for the person (policy ``ask``)."""

    request_id: str
    call_id: str
    title: str
    options: list[dict[str, str]]
    answer: asyncio.Future[str | None] = field(default_factory=asyncio.Future)

    def wire(self) -> dict[str, Any]:
        return {
            "requestId": self.request_id,
            "callId": self.call_id,
            "title": self.title,
            "options": self.options,
        }


# Called with a waiting request; returns once it is published (policy ``ask``).
AskHook = Callable[[PermissionRequest], Awaitable[None]]


class LuminaClient:
    """The ``acp.Client`` of one agent process (one conversation): updates go to the
    ``sink`` of the prompt in flight; with no prompt in flight (a ``session/load``
    replaying history) they are dropped."""

    def __init__(
        self,
        folder: Path,
        permissions: Permissions,
        *,
        files: AgentFiles,
        ask_timeout: float = 120.0,
        may_ask: Callable[[], str | None] | None = None,
    ) -> None:
        self.folder = folder.resolve()
        self.permissions = permissions
        self.files = files
        self.ask_timeout = ask_timeout
        # None when another prompt may wait for the person, else why not (a share used up)
        self.may_ask = may_ask
        self.sink: asyncio.Queue[AcpItem] | None = None
        self.on_ask: AskHook | None = None
        self.pending: dict[str, PermissionRequest] = {}
        self._calls: dict[str, tuple[str, float]] = {}  # call id → (title, started)

    # -- session/update ------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        sink = self.sink
        if sink is None:
            return  # replayed history (session/load) or an update after the turn ended
        for item in self._translate(update):
            sink.put_nowait(item)

    def _translate(self, update: Any) -> list[AcpItem]:
        if isinstance(update, AgentMessageChunk):
            text = _text(update.content)
            return [TextDelta(text)] if text else []
        if isinstance(update, AgentThoughtChunk):
            text = _text(update.content)
            return [ThinkingDelta(text)] if text else []
        if isinstance(update, ToolCallStart):
            self._calls[update.tool_call_id] = (update.title, time.monotonic())
            items: list[AcpItem] = [
                ToolCallRequested(update.tool_call_id, update.title, _json(update.raw_input))
            ]
            if update.status in ("completed", "failed"):
                items.append(self._finished(update.tool_call_id, update))
            return items
        if isinstance(update, ToolCallProgress):
            if update.status in ("completed", "failed"):
                return [self._finished(update.tool_call_id, update)]
            if update.title and update.tool_call_id in self._calls:
                self._calls[update.tool_call_id] = (
                    update.title,
                    self._calls[update.tool_call_id][1],
                )
            return []
        if isinstance(update, UsageUpdate):
            return [Usage(prompt_tokens=update.used, completion_tokens=0)]
        return []  # plans, modes, commands: not part of a Lumina answer

    def _finished(self, call_id: str, update: ToolCallStart | ToolCallProgress) -> ToolCallFinished:
        title, started = self._calls.pop(call_id, (update.title or call_id, time.monotonic()))
        parts = [_text(getattr(c, "content", None)) for c in update.content or []]
        content = "".join(p for p in parts if p) or _json(update.raw_output)
        elapsed = round((time.monotonic() - started) * 1000)
        return ToolCallFinished(
            call_id, title, content[:_RESULT_CHARS], update.status == "failed", elapsed
        )

    # -- session/request_permission ------------------------------------------------------

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        allow = _pick(options, "allow_once", "allow_always")
        reject = _pick(options, "reject_once", "reject_always")
        if self.permissions == "allow-all":
            chosen = allow
        elif self.permissions == "deny":
            chosen = reject
        elif self.permissions == "allow-reads":
            chosen = allow if tool_call.kind in READ_KINDS else reject
        else:
            chosen = await self._ask(tool_call, options, reject)
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen)
        )

    async def _ask(
        self, tool_call: ToolCallUpdate, options: list[PermissionOption], reject: str | None
    ) -> str | None:
        """Policy ``ask``: the person chooses (UI or API) within ``ask_timeout``; no answer
        in time, or nobody to ask, is the reject option."""
        if self.on_ask is None:
            return reject
        refusal = self.may_ask() if self.may_ask is not None else None
        if refusal is not None:  # the owner's share of waiting prompts is used up
            log.info("permission request of %s rejected: %s", tool_call.tool_call_id, refusal)
            if self.sink is not None:
                title = f"permission: {tool_call.title or tool_call.tool_call_id}"
                self.sink.put_nowait(ToolCallFinished("perm-refused", title, refusal, True, 0))
            return reject
        request = PermissionRequest(
            request_id="perm-" + secrets.token_hex(6),
            call_id=tool_call.tool_call_id,
            title=tool_call.title or self._calls.get(tool_call.tool_call_id, ("",))[0],
            options=[{"optionId": o.option_id, "name": o.name, "kind": o.kind} for o in options],
        )
        self.pending[request.request_id] = request
        began = time.monotonic()
        chosen, timed_out = reject, False
        try:
            await self.on_ask(request)
            async with asyncio.timeout(self.ask_timeout):
                chosen = await request.answer
        except TimeoutError:
            log.info(
                "permission %s not answered in %.0f s: rejected",
                request.request_id,
                self.ask_timeout,
            )
            chosen, timed_out = reject, True
        finally:
            self.pending.pop(request.request_id, None)
            self._decided(request, chosen, reject, began, timed_out)
        return chosen

    def _decided(
        self,
        request: PermissionRequest,
        chosen: str | None,
        reject: str | None,
        began: float,
        timed_out: bool,
    ) -> None:
        """The request's card gets its result: which option, or that none was chosen."""
        if self.sink is None:
            return
        names = {o["optionId"]: o["name"] for o in request.options}
        content = f"chose {names.get(chosen, chosen)!s}" if chosen else "cancelled"
        if timed_out:
            content = f"no answer in {self.ask_timeout:.0f} s: {content}"
        self.sink.put_nowait(
            ToolCallFinished(
                request.request_id,
                f"permission: {request.title}",
                content,
                chosen in (None, reject),
                round((time.monotonic() - began) * 1000),
            )
        )

    def answer(self, request_id: str, option_id: str | None) -> bool:
        """The person's choice (None = cancel); False if no such request is waiting."""
        request = self.pending.get(request_id)
        if request is None or request.answer.done():
            return False
        if option_id is not None and option_id not in {o["optionId"] for o in request.options}:
            raise ValueError(f"unknown option {option_id!r}")
        request.answer.set_result(option_id)
        return True

    # -- fs/* ----------------------------------------------------------------------------

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        if self.permissions == "deny":
            raise _refused(path, "file reads are denied")
        try:
            data = await self.files.read(self.folder, path)
        except FileRefused as exc:
            raise _refused(path, exc.reason) from exc
        except OSError as exc:
            raise _refused(path, exc.strerror or str(exc)) from exc
        text = data.decode("utf-8", "replace")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : start + limit if limit is not None else None])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        if self.permissions in ("deny", "allow-reads"):
            raise _refused(path, "file writes are denied")
        try:
            await self.files.write(self.folder, path, content.encode("utf-8", "replace"))
        except FileRefused as exc:
            raise _refused(path, exc.reason) from exc
        except OSError as exc:
            raise _refused(path, exc.strerror or str(exc)) from exc
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


def _refused(path: str, reason: str) -> RequestError:
    """The agent's JSON-RPC error: invalid params, the reason as its message."""
    return RequestError(-32602, f"{reason}: {path}", {"path": path, "reason": reason})


def _pick(options: list[PermissionOption], *kinds: str) -> str | None:
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option.option_id
    return None


def _text(block: Any) -> str:
    if block is None:
        return ""
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    inner = getattr(block, "content", None)  # a tool call's {type: content, content: block}
    if inner is not None and inner is not block:
        return _text(inner)
    return ""


def _json(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)
