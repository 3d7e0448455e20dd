"""Writing rolling summaries: the agent's own model (with its ``summary.md`` prompt), or,
for the offline ``demo`` model, a deterministic extractive summary so the feature works
with no LLM at all."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from lumina_app.agents.providers.factory import Provider
from lumina_app.domain import Msg, MsgRole, ProviderError, TextDelta

MAX_SUMMARY_CHARS = 8000
_LABEL = {MsgRole.USER: "USER", MsgRole.ASSISTANT: "ASSISTANT", MsgRole.TOOL: "TOOL"}


class SummaryFailed(Exception):
    """The model could not write the summary now; it is tried again later."""


def _quote(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?\u3002\uff01\uff1f])(\s|$)", flat)  # also the CJK full stops
    return match.group(1) if match else flat


@dataclass
class ExtractiveSummarizer:
    """One line per message that left the window: what the user said, the first sentence
    of each answer; the newest 40 lines are kept. Deterministic, offline."""

    model: str = "demo-extractive"
    keep_lines: int = 40

    async def summarize(self, previous: str, msgs: Sequence[Msg], prompt: str) -> str:
        lines = [line for line in previous.splitlines() if line.strip()]
        for msg in msgs:
            if not msg.content.strip():
                continue
            if msg.role is MsgRole.USER:
                lines.append(f"- The user said: “{_quote(msg.content, 160)}”")
            elif msg.role is MsgRole.ASSISTANT:
                answer = _quote(_first_sentence(msg.content), 160)
                lines.append(f"- The assistant answered: “{answer}”")
            elif msg.role is MsgRole.TOOL:
                lines.append(f"- A tool returned: “{_quote(msg.content, 120)}”")
        return "\n".join(lines[-self.keep_lines :])[-MAX_SUMMARY_CHARS:]


@dataclass
class ModelSummarizer:
    """The agent's own model, asked with the summary prompt to extend the summary."""

    provider: Provider

    @property
    def model(self) -> str:
        return self.provider.model

    async def summarize(self, previous: str, msgs: Sequence[Msg], prompt: str) -> str:
        transcript = "\n".join(
            f"{_LABEL.get(m.role, m.role.value)}: {m.content}" for m in msgs if m.content
        )
        request = [
            {"role": "system", "content": prompt},
            {
                "role": "user",
                "content": f"Summary so far:\n{previous or '(none yet)'}\n\n"
                f"New messages:\n{transcript}",
            },
        ]
        parts: list[str] = []
        async for event in self.provider.stream(request):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, ProviderError):
                raise SummaryFailed(event.message)
        text = "".join(parts).strip()
        if not text:
            raise SummaryFailed("the model wrote an empty summary")
        return text[:MAX_SUMMARY_CHARS]
