"""Bodies of the OpenAI-compatible routes, in the Chat Completions wire format the `openai`
SDK sends and parses. Fields Lumina does not use (temperature, max_tokens, user, ...) are
accepted and ignored, as an OpenAI-compatible server must; what it cannot honour (client
tools, n > 1, content parts other than text and image_url) is refused with a clear 400.
An image part with a data URL becomes one of the owner's files, attached to the question."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Field, Tag, field_validator

from lumina_app.api.schemas import NoNul, OpenBody
from lumina_app.domain.transcript import Line
from lumina_app.services.gateway_files import IMAGE_URL_PATTERN

PARTS = "content parts must be text or image_url parts"
CLIENT_TOOLS = (
    "client-side tools are not supported; the agent's own tools run server-side "
    "(configure them in its config.json)"
)
# OpenAI's own metadata limits: 16 pairs, keys up to 64 characters, values up to 512; a
# conversation id is as long as the X-Lumina-Conversation-Id header allows.
MetadataKey = Annotated[str, Field(max_length=64)]
CONVERSATION_ID_MAX = 64
TOOL_MESSAGES = (
    "tool calls and results from the client are not supported (Lumina's agents run their "
    "tools server-side)"
)


def _refuse_if_given(message: str) -> Callable[[object], object]:
    """A field the schema allows only empty: anything in it is refused with ``message``
    (clearer than "at most 0 items")."""

    def check(value: object) -> object:
        if value:
            raise ValueError(message)
        return value

    return check


class TextPart(OpenBody):
    type: Literal["text"]
    text: Annotated[str, NoNul]


class ImageUrl(OpenBody):
    url: str = Field(pattern=IMAGE_URL_PATTERN)
    detail: Literal["auto", "low", "high"] | None = None


class ImageUrlPart(OpenBody):
    """An image: a ``data:image/…;base64,`` URL is stored as the owner's file and attached
    to the question; an http(s) URL is passed to a vision agent's model for this run only
    (Lumina never fetches it), as the Responses API does."""

    type: Literal["image_url"]
    image_url: ImageUrl

    @property
    def inline(self) -> bool:
        return self.image_url.url.startswith("data:")

    def chat_part(self) -> dict[str, Any]:
        return {"type": "image_url", "image_url": self.image_url.model_dump(exclude_none=True)}


def _part_kind(value: object) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "image_url") else None


Part = Annotated[
    Annotated[TextPart, Tag("text")] | Annotated[ImageUrlPart, Tag("image_url")],
    Discriminator(_part_kind, custom_error_type="invalid_part", custom_error_message=PARTS),
]


class ChatMessage(OpenBody):
    role: Literal["system", "developer", "user", "assistant"]
    content: Annotated[str, NoNul] | list[Part] | None = None
    name: str | None = Field(default=None, max_length=256)
    tool_calls: list[dict[str, Any]] | None = Field(default=None, max_length=0)

    @field_validator("role", mode="before")
    @classmethod
    def _no_tool_role(cls, value: object) -> object:
        if value in ("tool", "function"):
            raise ValueError(TOOL_MESSAGES)
        return value

    _no_tool_calls = field_validator("tool_calls", mode="before")(_refuse_if_given(TOOL_MESSAGES))

    def images(self) -> list[ImageUrlPart]:
        if not isinstance(self.content, list):
            return []
        return [part for part in self.content if isinstance(part, ImageUrlPart)]

    def line(self) -> Line:
        """This message as a transcript line (text parts joined; developer is system)."""
        if isinstance(self.content, list):
            text = "".join(part.text for part in self.content if isinstance(part, TextPart))
        else:
            text = self.content or ""
        role = "system" if self.role == "developer" else self.role
        return Line(role, text, files=bool(self.images()))


class StreamOptions(OpenBody):
    include_usage: bool = False


class ChatCompletionRequest(OpenBody):
    """``model`` names the agent. ``metadata.conversation_id`` (or the
    ``X-Lumina-Conversation-Id`` header) names the conversation to continue."""

    model: Annotated[str, NoNul] = Field(min_length=1, max_length=128)
    messages: list[ChatMessage] = Field(min_length=1, max_length=10_000)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    metadata: (
        Annotated[
            dict[MetadataKey, Annotated[str, NoNul, Field(max_length=512)]],
            Field(max_length=16),
        ]
        | None
    ) = None
    n: int | None = Field(default=None, ge=1, le=1)  # one choice per request
    tools: list[dict[str, Any]] | None = Field(default=None, max_length=0)
    functions: list[dict[str, Any]] | None = Field(default=None, max_length=0)

    _no_tools = field_validator("tools", "functions", mode="before")(_refuse_if_given(CLIENT_TOOLS))

    @field_validator("metadata")
    @classmethod
    def _conversation_id_length(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value and len(value.get("conversation_id", "")) > CONVERSATION_ID_MAX:
            raise ValueError(
                f"metadata.conversation_id is at most {CONVERSATION_ID_MAX} characters"
            )
        return value

    def lines(self) -> list[Line]:
        return [message.line() for message in self.messages]

    def question_images(self) -> list[ImageUrlPart]:
        """The images of the last message when it is the user's (the new question);
        those of earlier messages are history, already stored or not Lumina's."""
        last = self.messages[-1]
        return last.images() if last.role == "user" else []


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
