"""Bodies of the OpenAI-compatible routes, in the Chat Completions wire format the `openai`
SDK sends and parses. Fields Lumina does not use (temperature, max_tokens, user, ...) are
accepted and ignored, as an OpenAI-compatible server must; what it cannot honour (client
tools, n > 1, non-text content) is refused with a clear 400."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lumina_app.api.schemas import NoNul
from lumina_app.domain import InvalidInput
from lumina_app.domain.transcript import Line


class TextPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: str = Field(max_length=64)
    text: Annotated[str | None, NoNul] = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: Annotated[str, NoNul] | list[TextPart] | None = None
    name: str | None = Field(default=None, max_length=256)
    tool_calls: list[dict[str, Any]] | None = None

    def line(self, index: int) -> Line:
        """This message as a transcript line; what the gateway cannot take is a 400."""
        where = f"messages[{index}]"
        if self.role in ("tool", "function") or self.tool_calls:
            raise InvalidInput(
                f"{where}: tool calls and results from the client are not supported "
                "(Lumina's agents run their tools server-side)"
            )
        if isinstance(self.content, list):
            parts = []
            for part in self.content:
                if part.type != "text" or part.text is None:
                    raise InvalidInput(f"{where}: only text content parts are supported")
                parts.append(part.text)
            text = "".join(parts)
        else:
            text = self.content or ""
        role = "system" if self.role == "developer" else self.role
        return Line(role, text)


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    """``model`` names the agent. ``metadata.conversation_id`` (or the
    ``X-Lumina-Conversation-Id`` header) names the conversation to continue."""

    model_config = ConfigDict(extra="allow")

    model: Annotated[str, NoNul] = Field(min_length=1, max_length=128)
    messages: list[ChatMessage] = Field(min_length=1, max_length=10_000)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    metadata: dict[str, Annotated[str, NoNul]] | None = None
    n: int | None = Field(default=None, ge=1, le=128)
    tools: list[dict[str, Any]] | None = None
    functions: list[dict[str, Any]] | None = None

    def lines(self) -> list[Line]:
        if self.tools or self.functions:
            raise InvalidInput(
                "tools: client-side tools are not supported; the agent's own tools run "
                "server-side (configure them in its config.json)"
            )
        if self.n not in (None, 1):
            raise InvalidInput("n: only one choice per request is supported")
        return [message.line(i) for i, message in enumerate(self.messages)]


class Model(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "lumina"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


class CompletionMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None


class Choice(BaseModel):
    index: int = 0
    message: CompletionMessage
    finish_reason: str
    logprobs: None = None


class CompletionUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: CompletionUsage
