"""LLM providers behind one interface that yields typed events.

``demo`` is offline and deterministic; ``openai`` speaks to any OpenAI-compatible server
(Ollama, vLLM, llama.cpp, OpenAI) through the official async SDK.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import openai

from lumina_app.agents.definitions.registry import AgentDefinition
from lumina_app.agents.definitions.titling import (
    MAX_TITLE_TOKENS,
    PURPOSE,
    PURPOSE_HEADER,
    TitleFailed,
    title_request,
)
from lumina_app.agents.providers.acp.pool import AcpPool
from lumina_app.agents.providers.acp.provider import AcpProvider
from lumina_app.agents.providers.demo_tools import demo_tool_answer, demo_tool_calls
from lumina_app.agents.tools.auto_recall import recalled_in
from lumina_app.domain import (
    ChatMessage,
    Finish,
    LLMEvent,
    ProviderError,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    Usage,
)
from lumina_app.memory.long_term import CONTEXT_PREFIX as KNOWN_PREFIX
from lumina_app.settings import Settings

Tools = Sequence[dict[str, Any]]  # OpenAI ``tools`` entries


class Provider(Protocol):
    name: str
    model: str

    def stream(
        self, messages: Sequence[ChatMessage], tools: Tools = ()
    ) -> AsyncIterator[LLMEvent]: ...


# -- demo ---------------------------------------------------------------------------------

_WORDS = re.compile(r"\s*\S+\s*|\s+")


def _quote(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _last_user(messages: Sequence[ChatMessage]) -> int:
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i]["role"] == "user"), 0)


def demo_answer(agent_name: str, messages: Sequence[ChatMessage]) -> str:
    """A reply that shows what context the model received, so memory is visible offline;
    after tool calls, what the tools said."""
    last = _last_user(messages)
    user_input = messages[last]["content"] if messages else ""
    if messages and messages[-1]["role"] == "tool":
        lines = [demo_tool_answer(agent_name, messages)]
    else:
        lines = _context_lines(agent_name, messages, last)
    if "/markdown" in user_input:
        lines.append(
            "\nHere is some Markdown:\n\n| model | offline |\n|---|---|\n| demo | yes |\n\n"
            "```python\ndef hello(name: str) -> str:\n    return f'你好, {name} 👋'\n```"
        )
    if "/long" in user_input:
        lines.append(" ".join(f"word{i}" for i in range(400)))
    return " ".join(lines)


def _context_lines(agent_name: str, messages: Sequence[ChatMessage], last: int) -> list[str]:
    history = [m for m in messages[:last] if m["role"] != "system"]
    has_system = bool(messages) and messages[0]["role"] == "system"
    user_input = messages[last]["content"] if messages else ""
    earlier_user = [m["content"] for m in history if m["role"] == "user"]
    lines = [f"**{agent_name}** here (offline demo model)."]
    if not history:
        lines.append("This is the start of our conversation: I see no earlier messages.")
    else:
        lines.append(
            f"I can see {len(history)} earlier message{'s' if len(history) != 1 else ''} "
            f"in this conversation."
        )
        if earlier_user:
            lines.append(f"Your previous message was: “{_quote(earlier_user[-1])}”.")
        if len(earlier_user) > 1:
            lines.append(f"The first one I still see was: “{_quote(earlier_user[0])}”.")
    lines.append(f"You said: “{_quote(user_input, 200)}”.")
    recalled = [
        said
        for m in messages[:last]
        if m["role"] == "system"
        for said in recalled_in(str(m["content"]))
    ]
    if here := [f"#{seq}" for seq, title in recalled if title is None]:
        lines.append(f"I also recall earlier messages {', '.join(here)}.")
    if there := [f"#{seq} in “{title}”" for seq, title in recalled if title is not None]:
        lines.append(f"From our other conversations I recall {', '.join(there)}.")
    known = [
        line[2:].rstrip(".")
        for m in messages[:last]
        if m["role"] == "system" and str(m["content"]).startswith(KNOWN_PREFIX)
        for line in str(m["content"]).splitlines()[1:]
    ]
    if known:
        lines.append(f"I remember about you: {'; '.join(known)}.")
    if has_system:
        lines.append("(My system prompt is loaded.)")
    return lines


@dataclass
class DemoProvider:
    """Streams its answer word by word at ``delay`` seconds per word.

    With ``delay`` 0 it still yields to the event loop between words, as a network
    stream does: an instant answer must not hold the loop (and every other client's
    stream, and its own first frame) for its whole length.
    """

    agent_name: str
    delay: float = 0.03
    name: str = "demo"
    model: str = "demo"

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Tools = ()
    ) -> AsyncIterator[LLMEvent]:
        user_input = messages[_last_user(messages)]["content"] if messages else ""
        asked = bool(messages) and messages[-1]["role"] == "user"
        calls = demo_tool_calls(user_input, tools) if asked else []
        if calls:
            await asyncio.sleep(self.delay)
            for call in calls:
                yield call
            yield Finish("tool_calls")
            return
        if "/think" in user_input:  # a reasoning model's thoughts, before the answer
            for word in _WORDS.findall(f"The user asked “{_quote(user_input, 80)}”. I'll answer."):
                await asyncio.sleep(self.delay)
                yield ThinkingDelta(word)
        answer = demo_answer(self.agent_name, messages)
        words = _WORDS.findall(answer)
        fail_at = len(words) // 2 if "/fail" in user_input else None
        for index, word in enumerate(words):
            if index == fail_at:
                yield ProviderError(
                    "demo model: simulated provider failure (the message asked for /fail)"
                )
                return
            await asyncio.sleep(self.delay)
            yield TextDelta(word)
        prompt_tokens = sum(len((m.get("content") or "").split()) for m in messages)
        yield Usage(prompt_tokens=prompt_tokens, completion_tokens=len(words))
        yield Finish("stop")

    async def propose_title(self, question: str, answer: str, prompt: str = "") -> str | None:
        """A new conversation's title, deterministically (no request): see :func:`demo_title`."""
        return demo_title(question)


_FILLER = frozenset(
    [
        "please",
        "hi",
        "hello",
        "hey",
        "so",
        "ok",
        "okay",
        "well",
        "can",
        "could",
        "would",
        "you",
        "tell",
        "me",
    ]
)
_TITLE_WORDS = 6


def demo_title(question: str) -> str | None:
    """The question's first few meaningful words: no /commands, no leading filler
    ("please", "can you tell me"…), no trailing punctuation; None when nothing is left."""
    words = [w for w in question.split() if not w.startswith("/")]
    while words and words[0].strip(",.!?").lower() in _FILLER:
        words.pop(0)
    return " ".join(words[:_TITLE_WORDS]).rstrip(",.;:!?…") or None


# -- OpenAI-compatible --------------------------------------------------------------------


@dataclass
class OpenAIProvider:
    """Any OpenAI-compatible chat-completions server, streamed."""

    client: openai.AsyncOpenAI
    model: str
    temperature: float | None = None
    name: str = "openai"

    async def stream(
        self, messages: Sequence[ChatMessage], tools: Tools = ()
    ) -> AsyncIterator[LLMEvent]:
        if not self.model:
            yield ProviderError("no model configured: set LUMINA_LLM_MODEL or the agent's 'model'")
            return
        kwargs: dict[str, Any] = {}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if tools:
            kwargs["tools"] = list(tools)
        calls: dict[int, ToolCall] = {}
        finish = "stop"
        try:
            stream = await self.client.chat.completions.create(
                model=self.model,
                messages=list(messages),
                stream=True,
                stream_options={"include_usage": True},
                **kwargs,
            )
            async for chunk in stream:
                if chunk.usage:
                    yield Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
                for choice in chunk.choices:
                    delta = choice.delta
                    thinking = getattr(delta, "reasoning_content", None) or getattr(
                        delta, "reasoning", None
                    )
                    if thinking:
                        yield ThinkingDelta(thinking)
                    if delta.content:
                        yield TextDelta(delta.content)
                    for part in delta.tool_calls or []:
                        call = calls.setdefault(part.index, ToolCall(name="", arguments=""))
                        call.call_id = part.id or call.call_id
                        if part.function:
                            call.name += part.function.name or ""
                            call.arguments += part.function.arguments or ""
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.APIStatusError as exc:
            yield ProviderError(f"provider error {exc.status_code}: {_provider_message(exc)}")
            return
        except openai.APITimeoutError:
            yield ProviderError("provider timed out")
            return
        except openai.APIConnectionError as exc:
            yield ProviderError(f"provider unreachable: {exc.__cause__ or exc}")
            return
        except openai.OpenAIError as exc:
            yield ProviderError(f"provider error: {exc}")
            return
        for call in calls.values():
            yield call
        yield Finish(finish)

    async def propose_title(self, question: str, answer: str, prompt: str = "") -> str | None:
        """One small, marked, non-streamed request for a new conversation's title (the
        reply as the model wrote it; ``titling.clean_title`` makes a title of it)."""
        if not self.model:
            raise TitleFailed("no model configured")
        try:
            reply = await self.client.chat.completions.create(
                model=self.model,
                messages=title_request(question, answer, prompt),  # type: ignore[arg-type]
                max_tokens=MAX_TITLE_TOKENS,
                extra_headers={PURPOSE_HEADER: PURPOSE},
            )
        except openai.APIStatusError as exc:
            message = f"provider error {exc.status_code}: {_provider_message(exc)}"
            raise TitleFailed(message) from exc
        except openai.OpenAIError as exc:
            raise TitleFailed(f"provider error: {exc}") from exc
        choice = reply.choices[0] if reply.choices else None
        return choice.message.content if choice is not None and choice.message else None


def _provider_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return exc.message


class ProviderFactory:
    """Builds the provider for an agent: global ``LUMINA_LLM_*`` settings, per-agent overrides."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._clients: dict[tuple[str | None, str | None], openai.AsyncOpenAI] = {}
        self.acp = AcpPool(
            max_processes=settings.acp_max_processes,
            idle_seconds=settings.acp_idle_seconds,
            max_starting=settings.acp_max_starting,
            start_timeout=settings.acp_start_timeout_seconds,
            ask_timeout=settings.acp_permission_timeout_seconds,
            max_per_owner=settings.acp_max_per_owner,
            max_asks_per_owner=settings.acp_max_asks_per_owner,
            file_timeout=settings.acp_file_timeout_seconds,
            max_file_bytes=settings.acp_max_file_bytes,
        )

    def for_agent(
        self, agent: AgentDefinition, conversation_uuid: str | None = None, owner: str = ""
    ) -> Provider:
        """The agent's provider; an ``acp`` agent's is bound to one conversation's process."""
        kind = agent.provider or self.settings.llm_provider
        if kind == "acp" and agent.acp is not None:
            return AcpProvider(self.acp, agent, conversation_uuid or "", owner)
        if kind == "demo":
            return DemoProvider(agent.name, delay=self.settings.demo_delay_ms / 1000)
        base_url = agent.base_url or self.settings.llm_base_url
        api_key = agent.api_key or self.settings.llm_api_key
        client = self._clients.get((base_url, api_key))
        if client is None:
            client = openai.AsyncOpenAI(
                base_url=base_url,
                api_key=api_key or "not-needed",
                timeout=self.settings.llm_timeout,
                max_retries=1,
            )
            self._clients[(base_url, api_key)] = client
        return OpenAIProvider(
            client,
            model=agent.model or self.settings.llm_model or "",
            temperature=agent.temperature,
        )

    async def close(self) -> None:
        await self.acp.close()  # every agent process group ended
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
