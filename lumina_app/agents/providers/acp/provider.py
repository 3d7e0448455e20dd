"""The ``acp`` provider: a run's prompt goes to the conversation's agent process.

``prepare`` (at accept, before the turn is committed) takes the conversation's session
from the pool and says which scenario it is: B, the live process, gets only the new
message; A, a new conversation, the system prompt and the message; C, a new process for a
conversation with history, the message after ``session/resume`` or ``session/load``, or
else Lumina's stored context (prompt, summary, window) injected as text. ``stream``
sends the prompt (its text, then a vision agent's images as image blocks) and turns the
agent's updates into provider events; a stop is
``session/cancel``; a process that dies is a failed run with what streamed kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import acp

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.providers.acp.client import PermissionRequest
from lumina_app.agents.providers.acp.pool import AcpPool, Opened, PoolFull
from lumina_app.agents.providers.acp.process import AgentStartError
from lumina_app.domain import (
    ChatMessage,
    Finish,
    LLMEvent,
    ProviderError,
    Scenario,
    ToolCallFinished,
    ToolCallRequested,
    Usage,
)

_CANCEL_GRACE = 3.0  # seconds an agent gets to end its turn after session/cancel
_SCENARIO = {
    "live": Scenario.CONTINUE,
    "new": Scenario.NEW,
    "resume": Scenario.RESUME,
    "load": Scenario.RESUME,
    "inject": Scenario.RESUME,
}
PERMISSION_TOOL = "permission"

AcpEvent = LLMEvent | ToolCallRequested | ToolCallFinished
_SESSION_HOLDS = ("live", "resume", "load")  # modes where the agent's session has the history


def prompt_text(messages: Sequence[ChatMessage], mode: str) -> str:
    """What the agent is sent: the new message alone when its session holds the context
    (live, resumed, loaded); with the system prompt for a new conversation; the whole
    context as a transcript when a new session must be given the history."""
    if not messages:
        return ""
    message = _text(messages[-1])
    if mode in _SESSION_HOLDS:
        return message
    system = [_text(m) for m in messages[:-1] if m["role"] == "system"]
    history = [m for m in messages[:-1] if m["role"] != "system"]
    parts = []
    if system:
        parts.append("<instructions>\n" + "\n\n".join(system) + "\n</instructions>")
    if history:
        lines = [_transcript_line(m) for m in history]
        parts.append("<conversation-so-far>\n" + "\n\n".join(lines) + "\n</conversation-so-far>")
    parts.append(message)
    return "\n\n".join(parts)


def prompt_blocks(messages: Sequence[ChatMessage], mode: str, images: bool) -> list[Any]:
    """The prompt's content blocks: its text (:func:`prompt_text`), then the images of the
    questions it carries (the new one's alone where the session holds the rest) as image
    blocks; an image given by an http(s) URL (the Responses API's) as a link to it. An
    agent whose process takes no images (``images``) reads ``[image]`` instead."""
    carried = messages[-1:] if mode in _SESSION_HOLDS else messages
    urls = [
        part["image_url"]["url"]
        for message in carried
        if message["role"] == "user" and isinstance(message.get("content"), list)
        for part in message["content"]  # type: ignore[union-attr]
        if part.get("type") == "image_url"
    ]
    shown = map(_image_block, urls) if images else (acp.text_block("[image]") for _ in urls)
    return [acp.text_block(prompt_text(messages, mode)), *shown]


def _image_block(url: str) -> Any:
    head, _, data = url.partition(",")
    if head.startswith("data:") and head.endswith(";base64"):
        return acp.image_block(data, head.removeprefix("data:").removesuffix(";base64"))
    return acp.resource_link_block("image", url)


def _text(message: ChatMessage) -> str:
    """A message's text (the text parts of one that carries images)."""
    content = message.get("content")
    if isinstance(content, list):
        return "\n\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return str(content or "")


def _transcript_line(message: ChatMessage) -> str:
    role = message["role"]
    content = _text(message)
    if role == "tool":
        return f"[tool {message.get('name') or ''} result]: {content}"
    if role == "assistant" and message.get("tool_calls"):
        calls = ", ".join(c["function"]["name"] for c in message["tool_calls"])
        content = f"{content}\n[called tools: {calls}]".strip()
    return f"{role.capitalize()}: {content}"


@dataclass
class AcpProvider:
    """One run's view of its conversation's agent process."""

    pool: AcpPool
    agent: AgentDefinition
    conversation_uuid: str
    owner: str = ""
    name: str = "acp"
    model: str = ""
    opened: Opened | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if not self.model:
            assert self.agent.acp is not None
            self.model = self.agent.model or Path(self.agent.acp.command).name

    async def prepare(self, scenario: Scenario) -> tuple[Scenario, dict[str, Any]]:
        """Take the session; the scenario that really applies and what the run record
        keeps of it. A start failure is kept for ``stream`` to fail the run with; the
        owner at their share of the pool is refused (AcpShareFull, 429) before the turn."""
        assert self.agent.acp is not None and self.agent.folder is not None
        try:
            self.opened = await self.pool.open(
                self.agent.id,
                self.agent.folder,
                self.agent.acp,
                self.conversation_uuid,
                owner=self.owner,
                has_history=scenario is not Scenario.NEW,
            )
        except (AgentStartError, PoolFull, OSError) as exc:
            self.error = str(exc)
            return scenario, {"acp": {"mode": "failed", "error": self.error}}
        process = self.opened.session.process
        record: dict[str, Any] = {
            "mode": self.opened.mode,
            "sessionId": process.session_id,
            "agent": process.agent_info,
            "promptsInProcess": self.opened.session.prompts,
        }
        if self.opened.note:
            record["note"] = self.opened.note
        return _SCENARIO[self.opened.mode], {"acp": record}

    @property
    def takes_images(self) -> bool:
        """Its process said at ``initialize`` that prompts may carry images."""
        return self.opened is not None and self.opened.session.process.takes_images

    def abandon(self) -> None:
        """The turn was not committed: the session goes back unused."""
        if self.opened is not None:
            self.opened.session.busy = False

    def answer_permission(self, request_id: str, option_id: str | None) -> bool:
        """The person's choice for a waiting permission request of this run."""
        if self.opened is None:
            return False
        return self.opened.session.process.client.answer(request_id, option_id)

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] = ()
    ) -> AsyncIterator[AcpEvent]:
        if self.error is not None or self.opened is None:
            yield ProviderError(f"acp agent unavailable: {self.error or 'no session was opened'}")
            return
        session, mode = self.opened.session, self.opened.mode
        process, client = session.process, session.process.client
        queue: asyncio.Queue = asyncio.Queue()

        async def ask(request: PermissionRequest) -> None:
            queue.put_nowait(
                ToolCallRequested(
                    request.request_id,
                    f"{PERMISSION_TOOL}: {request.title}",
                    json.dumps(request.wire(), ensure_ascii=False),
                )
            )

        client.sink, client.on_ask = queue, ask
        mode = mode if session.prompts == 0 else "live"
        blocks = prompt_blocks(messages, mode, images=process.takes_images)
        session.prompts += 1
        prompt = asyncio.ensure_future(
            process.conn.prompt(session_id=session.session_id, prompt=blocks)
        )
        exited = asyncio.ensure_future(process.process.wait())
        healthy = False
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {getter, prompt, exited}, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    yield getter.result()
                    continue
                getter.cancel()
                break
            if not prompt.done():  # the process ended first: give the pipe a moment
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await asyncio.wait({prompt})
            while not queue.empty():
                yield queue.get_nowait()
            failure = _failure(prompt)
            if failure is not None:
                with contextlib.suppress(TimeoutError):  # its pipe closes just before it exits
                    async with asyncio.timeout(1.0):
                        await asyncio.wait({exited})
                yield ProviderError(f"{failure}; {process.exit_reason()}")
                return
            reply = prompt.result()
            if reply.usage is not None:
                yield Usage(reply.usage.input_tokens, reply.usage.output_tokens)
            healthy = True
            yield Finish(_finish_reason(reply.stop_reason))
        except asyncio.CancelledError:
            healthy = await self._cancel(session, prompt)
            raise
        finally:
            client.sink = client.on_ask = None
            for request in list(client.pending.values()):
                client.answer(request.request_id, None)
            exited.cancel()
            if not prompt.done():
                prompt.cancel()
            self.pool.release(session, healthy=healthy and process.alive)

    async def _cancel(self, session: Any, prompt: asyncio.Future) -> bool:
        """A stop: ``session/cancel``, every permission request still waiting answered
        ``cancelled`` (as ACP asks of a client), and the turn's end awaited briefly. An
        agent that does not end it is not trusted with the next prompt (its process is
        ended)."""
        if prompt.done():
            return True
        client = session.process.client
        with contextlib.suppress(ConnectionError, OSError, acp.RequestError):
            await session.process.conn.cancel(session_id=session.session_id)
        for request in list(client.pending.values()):
            client.answer(request.request_id, None)
        try:
            async with asyncio.timeout(_CANCEL_GRACE):
                await asyncio.wait({prompt})
        except TimeoutError:
            return False
        return _failure(prompt) is None


def _failure(prompt: asyncio.Future) -> str | None:
    if not prompt.done():
        return "the agent stopped answering"
    if prompt.cancelled():
        return "the prompt was cancelled"
    exc = prompt.exception()
    if exc is None:
        return None
    if isinstance(exc, ConnectionError):
        return "the agent process ended during the prompt"
    return f"the agent failed the prompt: {exc}"


def _finish_reason(stop_reason: str) -> str:
    return {"end_turn": "stop", "max_tokens": "length", "cancelled": "cancelled"}.get(
        stop_reason, stop_reason
    )
