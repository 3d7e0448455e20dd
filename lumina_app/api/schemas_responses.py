"""Bodies of the Responses and Conversations routes, in the wire format the `openai` SDK
and the Agents SDK send (Open Responses' ``CreateResponseBody`` and OpenAI's conversation
bodies). Fields Lumina has no use for (``include``, ``reasoning``, ``truncation``,
``client_metadata``, ``temperature``, ...) are accepted and ignored; what it cannot honour
yet (client function tools, tool-call items, images, files) is refused with a clear 400."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lumina_app.api.schemas import NoNul
from lumina_app.domain.transcript import Line

MAX_ITEMS = 10_000
TEXT_ONLY = "only text content is supported (input_text / output_text parts)"
ITEM_TYPES = (
    "only message items are supported in input (function_call, function_call_output, "
    "reasoning and item_reference items are not supported yet)"
)

Text = Annotated[str, NoNul]


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")

    type: Literal["input_text", "output_text", "text"]
    text: Text

    @field_validator("type", mode="before")
    @classmethod
    def _text_only(cls, value: object) -> object:
        if value not in ("input_text", "output_text", "text"):
            raise ValueError(TEXT_ONLY)
        return value


class MessageItem(BaseModel):
    """A message in ``input`` or a conversation's items; ``type`` may be left out."""

    model_config = ConfigDict(extra="allow")

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: Text | list[ContentPart]
    id: str | None = Field(default=None, max_length=128)

    @field_validator("type", mode="before")
    @classmethod
    def _messages_only(cls, value: object) -> object:
        if value != "message":
            raise ValueError(ITEM_TYPES)
        return value

    def line(self) -> Line:
        """This item as a transcript line (parts joined; ``developer`` is ``system``)."""
        text = (
            self.content
            if isinstance(self.content, str)
            else "".join(part.text for part in self.content)
        )
        return Line("system" if self.role == "developer" else self.role, text)


class ConversationRef(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1, max_length=128)


class CreateResponse(BaseModel):
    """``model`` names the agent; ``previous_response_id`` or ``conversation`` names the
    conversation to continue (then ``input`` holds only what is new)."""

    model_config = ConfigDict(extra="allow")

    model: Text = Field(min_length=1, max_length=128)
    input: (
        Annotated[str, NoNul, Field(min_length=1)]
        | Annotated[list[MessageItem], Field(min_length=1, max_length=MAX_ITEMS)]
    )
    instructions: Text | None = None
    previous_response_id: str | None = Field(default=None, max_length=128)
    conversation: Annotated[str, Field(max_length=128)] | ConversationRef | None = None
    store: bool | None = None
    stream: bool | None = False
    metadata: dict[str, Text] | None = None
    prompt_cache_key: str | None = Field(default=None, max_length=256)
    tools: list[dict[str, Any]] | None = None

    def lines(self) -> list[Line]:
        """``instructions`` first (as a system line), then the input."""
        head = [Line("system", self.instructions)] if self.instructions else []
        if isinstance(self.input, str):
            return [*head, Line("user", self.input)]
        return [*head, *(item.line() for item in self.input)]

    def conversation_id(self) -> str | None:
        if isinstance(self.conversation, ConversationRef):
            return self.conversation.id
        return self.conversation


class CreateConversation(BaseModel):
    """``metadata.agent`` picks the agent the conversation is with (else the default)."""

    model_config = ConfigDict(extra="allow")

    items: list[MessageItem] | None = Field(default=None, max_length=20)
    metadata: dict[str, Annotated[str, NoNul, Field(max_length=512)]] | None = Field(
        default=None, max_length=16
    )


class UpdateConversation(BaseModel):
    model_config = ConfigDict(extra="allow")

    metadata: dict[str, Annotated[str, NoNul, Field(max_length=512)]] = Field(max_length=16)


class CreateItems(BaseModel):
    model_config = ConfigDict(extra="allow")

    items: list[MessageItem] = Field(min_length=1, max_length=20)
