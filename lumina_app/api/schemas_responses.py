"""Bodies of the Responses and Conversations routes, in the wire format the `openai` SDK
and the Agents SDK send (Open Responses' ``CreateResponseBody`` and OpenAI's conversation
bodies). Fields Lumina has no use for (``include``, ``reasoning``, ``truncation``,
``client_metadata``, ``temperature``, ...) are accepted and ignored, as are ``reasoning``
items and resent ``function_call`` items (Lumina stored the calls itself); what it cannot
honour yet (``item_reference`` items, images, files) is refused with a clear 400.
``function`` tools are offered to the model; ``function_call_output`` items answer them."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from lumina_app.api.schemas import NoNul, OpenBody
from lumina_app.domain import InvalidInput
from lumina_app.domain.transcript import Line
from lumina_app.services.file_types import clean_name
from lumina_app.services.gateway_files import (
    BASE64_PATTERN,
    IMAGE_URL_PATTERN,
    InlineFile,
    decode_base64,
    decode_data_url,
    image_from_data_url,
)

MAX_ITEMS = 10_000
PARTS = "content parts must be input_text, output_text, input_image or input_file parts"
FILE_ID_PATTERN = r"^file-[0-9a-f]{24}$"
IMAGE_URL = "image_url must be a data:image/...;base64, URL or an http(s) URL"
ITEM_TYPES = (
    "input items must be message, function_call, function_call_output, reasoning, "
    "compaction or compaction_trigger items (item_reference and other items are not supported)"
)
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"

Text = Annotated[str, NoNul]


class ContentPart(OpenBody):
    type: Literal["input_text", "output_text", "text"]
    text: Text


def _only(required: list[str], absent: str) -> dict[str, Any]:
    """A ``oneOf`` branch: these fields given, that one not."""
    return {"required": required, "not": {"required": [absent]}}


def _image_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["image_url"] = {"type": "string", "pattern": IMAGE_URL_PATTERN}
    schema["properties"]["file_id"] = {"type": "string", "pattern": FILE_ID_PATTERN}
    schema["required"] = ["type"]
    schema["oneOf"] = [_only(["image_url"], "file_id"), _only(["file_id"], "image_url")]


class ImagePart(BaseModel):
    """An ``input_image`` part: ``image_url`` a ``data:image/…`` URL (stored as the owner's
    file and attached to the question) or an http(s) URL (passed on to a vision agent's
    model for this run, never fetched), or ``file_id`` (the owner's uploaded image)."""

    # The schema says what ``_one_source`` accepts, so a client (or a fuzzer) reading it
    # never sends a part it would refuse.
    model_config = ConfigDict(extra="allow", json_schema_extra=_image_schema)

    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = Field(default=None, max_length=128)
    detail: Literal["auto", "low", "high"] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ImagePart:
        if (self.file_id is None) == (self.image_url is None):
            raise ValueError(f"input_image: give one of image_url and file_id; {IMAGE_URL}")
        if self.file_id is not None and not re.fullmatch(FILE_ID_PATTERN, self.file_id):
            raise ValueError("input_image: file_id must be an uploaded file's id (file-...)")
        url = self.image_url
        if url is not None and not re.fullmatch(IMAGE_URL_PATTERN, url):
            raise ValueError(f"input_image: {IMAGE_URL}")
        return self

    @property
    def linked(self) -> bool:
        """An http(s) URL: shown to the model for this run only."""
        return self.image_url is not None and not self.image_url.startswith("data:")

    def chat_part(self) -> dict[str, Any]:
        """The chat-completions ``image_url`` part the providers take."""
        image: dict[str, Any] = {"url": self.image_url}
        if self.detail is not None:
            image["detail"] = self.detail
        return {"type": "image_url", "image_url": image}

    def inline(self, position: int) -> InlineFile:
        if self.file_id is not None:
            return InlineFile("image", "input_image", file_id=self.file_id)
        assert self.image_url is not None
        return image_from_data_url(self.image_url, "input_image", position)


def _file_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["file_id"] = {"type": "string", "pattern": FILE_ID_PATTERN}
    schema["properties"]["file_data"] = {"type": "string", "pattern": BASE64_PATTERN}
    schema["properties"]["file_url"] = {"type": "null"}
    schema["properties"]["filename"] = {"type": "string", "minLength": 1, "maxLength": 255}
    schema["required"] = ["type"]
    schema["oneOf"] = [_only(["file_id"], "file_data"), _only(["file_data", "filename"], "file_id")]


class FilePart(BaseModel):
    """An ``input_file`` part: ``file_id`` (the owner's uploaded file) or ``file_data``
    (base64, or a ``data:`` URL of it) with a ``filename``: stored as the owner's file and
    attached to the question. ``file_url`` is not accepted (Lumina fetches nothing)."""

    model_config = ConfigDict(extra="allow", json_schema_extra=_file_schema)

    type: Literal["input_file"]
    file_id: str | None = Field(default=None, max_length=128)
    file_data: str | None = None
    filename: Text | None = Field(default=None, max_length=255)

    @model_validator(mode="after")
    def _one_source(self) -> FilePart:
        if self.model_extra and self.model_extra.get("file_url") is not None:
            raise ValueError("input_file: file_url is not supported; send file_id or file_data")
        if (self.file_id is None) == (self.file_data is None):
            raise ValueError("input_file: give one of file_id and file_data (with filename)")
        if self.file_id is not None and not re.fullmatch(FILE_ID_PATTERN, self.file_id):
            raise ValueError("input_file: file_id must be an uploaded file's id (file-...)")
        if self.file_data is not None and not self.filename:
            raise ValueError("input_file: file_data needs a filename")
        return self

    def inline(self) -> InlineFile:
        if self.file_id is not None:
            return InlineFile("file", "input_file", file_id=self.file_id)
        assert self.file_data is not None and self.filename is not None
        data = self.file_data
        if data.startswith("data:"):
            _claimed, raw = decode_data_url(data, "input_file")
        else:
            raw = decode_base64(data, "input_file")
        return InlineFile("file", "input_file", data=raw, name=_usable_name(self.filename))


def _usable_name(raw: str) -> str:
    """A client's filename as a name to keep: its last path part, cleaned; ``file`` if
    nothing is left (a name is no reason to refuse a file)."""
    try:
        return clean_name(re.split(r"[/\\]", raw)[-1])
    except InvalidInput:
        return "file"


def _part_kind(value: object) -> str | None:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind in ("input_text", "output_text", "text"):
        return "text"
    return (
        {"input_image": "image", "input_file": "file"}.get(kind) if isinstance(kind, str) else None
    )


Part = Annotated[
    Annotated[ContentPart, Tag("text")]
    | Annotated[ImagePart, Tag("image")]
    | Annotated[FilePart, Tag("file")],
    Discriminator(_part_kind, custom_error_type="invalid_part", custom_error_message=PARTS),
]


class MessageItem(OpenBody):
    """A message in ``input`` or a conversation's items; ``type`` may be left out."""

    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: Text | list[Part]
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
            else "".join(part.text for part in self.content if isinstance(part, ContentPart))
        )
        role = "system" if self.role == "developer" else self.role
        return Line(role, text, files=bool(self.attachments()))

    def attachments(self) -> list[ImagePart | FilePart]:
        """Its images and files, in order."""
        if isinstance(self.content, str):
            return []
        return [part for part in self.content if isinstance(part, ImagePart | FilePart)]


def inline_files(parts: list[ImagePart | FilePart]) -> tuple[InlineFile, ...]:
    """The images and files to store and attach (an http(s) image is not: it is shown to
    a model for one run, never fetched or kept)."""
    found: list[InlineFile] = []
    for n, part in enumerate(parts, start=1):
        if isinstance(part, FilePart):
            found.append(part.inline())
        elif not part.linked:
            found.append(part.inline(n))
    return tuple(found)


class FunctionCallItem(OpenBody):
    """A call the model made, resent by clients that send their whole history: Lumina
    stored it when it was made, so it is read and left."""

    type: Literal["function_call"]
    call_id: str = Field(min_length=1, max_length=128)
    name: str = Field(max_length=128)
    arguments: Text = ""


class FunctionCallOutputItem(OpenBody):
    """What a client's tool answered to the call ``call_id``."""

    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1, max_length=128)
    output: Text | list[ContentPart]
    id: str | None = Field(default=None, max_length=128)

    def text(self) -> str:
        if isinstance(self.output, str):
            return self.output
        return "".join(part.text for part in self.output)


class ReasoningItem(OpenBody):
    """A reasoning item a client resends: accepted and ignored (its summary is the
    model's, its encrypted content no provider of Lumina's reads)."""

    type: Literal["reasoning"]


class CompactionItem(OpenBody):
    """What ``POST /v1/responses/compact`` answered: its ``encrypted_content`` is Lumina's
    handle to the conversation (whose memory holds what was compacted)."""

    type: Literal["compaction"]
    encrypted_content: str = Field(min_length=1, max_length=1024)
    id: str | None = Field(default=None, max_length=128)


class CompactionTriggerItem(OpenBody):
    """Codex's ``{"type": "compaction_trigger"}`` at the end of an input: compact instead
    of answering (the response's output is the ``compaction`` item ``/compact`` returns)."""

    type: Literal["compaction_trigger"]


KINDS = (
    "message",
    "function_call",
    "function_call_output",
    "reasoning",
    "compaction",
    "compaction_trigger",
)


def _item_kind(value: object) -> str | None:
    kind = value.get("type", "message") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in KINDS else None


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ReasoningItem, Tag("reasoning")]
    | Annotated[CompactionItem, Tag("compaction")]
    | Annotated[CompactionTriggerItem, Tag("compaction_trigger")],
    Discriminator(_item_kind, custom_error_type="invalid_item", custom_error_message=ITEM_TYPES),
]


def input_lines(input_: str | list[Any] | None, instructions: str | None) -> list[Line]:
    """``instructions`` first (as a system line), then the input's messages — after its
    last compaction item only (what came before it is in Lumina's memory), but its system
    and developer messages wherever they are; empty assistant messages left out."""
    head = [Line("system", instructions)] if instructions else []
    if input_ is None:
        return head
    if isinstance(input_, str):
        return [*head, Line("user", input_)]
    cut = max((i for i, item in enumerate(input_) if isinstance(item, CompactionItem)), default=-1)
    lines = [
        item.line()
        for i, item in enumerate(input_)
        if isinstance(item, MessageItem) and (i > cut or item.role in ("system", "developer"))
    ]
    # An empty answer (one that only called the client's tools) is no line of the
    # transcript: Lumina shows that turn's answers as one, the text after the calls.
    return [*head, *(line for line in lines if line.role != "assistant" or line.text.strip())]


def input_compaction(input_: str | list[Any] | None) -> str | None:
    """The handle of the input's last compaction item, if any."""
    if not isinstance(input_, list):
        return None
    handles = [item.encrypted_content for item in input_ if isinstance(item, CompactionItem)]
    return handles[-1] if handles else None


class FunctionTool(OpenBody):
    """A function the client runs: offered to the model beside the agent's own tools."""

    type: Literal["function"]
    name: str = Field(pattern=TOOL_NAME)
    description: Text | None = Field(default=None, max_length=8192)
    parameters: dict[str, Any] | None = None

    def shown(self) -> dict[str, Any]:
        """The tool as a response lists it (Open Responses' ``FunctionTool``: every field);
        a member of a ``namespace`` tool by its own name, with its namespace."""
        strict = getattr(self, "strict", None)
        space = getattr(self, "lumina_namespace", None)
        named = {"name": self.name}
        if isinstance(space, list) and len(space) == 2:
            named = {"namespace": space[0], "name": space[1]}
        return {
            "type": "function",
            **named,
            "description": self.description,
            "parameters": self.parameters,
            "strict": strict if isinstance(strict, bool) else None,
        }

    def spec(self) -> dict[str, Any]:
        """The chat-completions ``tools`` entry the providers take."""
        parameters = self.parameters or {"type": "object", "properties": {}}
        function = {
            "name": self.name,
            "description": self.description or "",
            "parameters": parameters,
        }
        return {"type": "function", "function": function}


def _functions(tools: list[dict[str, Any]] | None) -> list[FunctionTool]:
    """The client's function tools, those inside a ``namespace`` tool included, named
    ``<namespace>__<name>`` for the model (Codex sends its MCP servers' tools as
    ``mcp__<server>`` namespaces); the model's call goes back to the client as ``name`` +
    ``namespace`` (``responses_wire.namespaced``). A member whose qualified name is not a
    valid tool name (over 64 characters) is left out."""
    found: list[FunctionTool] = []
    for tool in tools or []:
        if tool.get("type") == "function":
            found.append(FunctionTool.model_validate(tool))
        elif tool.get("type") == "namespace" and isinstance(tool.get("tools"), list):
            prefix = str(tool.get("name", ""))
            for member in tool["tools"]:
                if not isinstance(member, dict) or member.get("type", "function") != "function":
                    continue
                qualified = {
                    **member,
                    "type": "function",
                    "name": f"{prefix}__{member.get('name')}",
                    "lumina_namespace": [prefix, str(member.get("name"))],
                }
                if re.fullmatch(TOOL_NAME, qualified["name"]):
                    found.append(FunctionTool.model_validate(qualified))
    return found


class ConversationRef(OpenBody):
    id: str = Field(min_length=1, max_length=128)


Input = (
    Annotated[str, NoNul, Field(min_length=1)]
    | Annotated[list[InputItem], Field(min_length=1, max_length=MAX_ITEMS)]
)


class _Turn(OpenBody):
    """What a response and a compaction both read: the agent, the input, the instructions
    and the response they follow."""

    model: Text = Field(min_length=1, max_length=128)
    input: Input
    instructions: Text | None = None
    previous_response_id: str | None = Field(default=None, max_length=128)

    def lines(self) -> list[Line]:
        return input_lines(self.input, self.instructions)

    def compaction(self) -> str | None:
        return input_compaction(self.input)


class CreateResponse(_Turn):
    """``model`` names the agent; ``previous_response_id`` or ``conversation`` names the
    conversation to continue (then ``input`` holds only what is new)."""

    conversation: Annotated[str, Field(max_length=128)] | ConversationRef | None = None
    store: bool | None = None
    stream: bool | None = False
    metadata: dict[str, Text] | None = None
    prompt_cache_key: str | None = Field(default=None, max_length=256)
    tools: list[dict[str, Any]] | None = None

    @field_validator("tools")
    @classmethod
    def _function_tools(cls, value: list[dict[str, Any]] | None) -> object:
        # Hosted and custom tool types (web_search, local_shell, ...) are ignored, as the
        # spec lets a server do; function tools must be well formed, each name once.
        names = [tool.name for tool in _functions(value)]
        if len(names) != len(set(names)):
            raise ValueError("two function tools have the same name")
        return value

    def attachments(self) -> tuple[list[ImagePart | FilePart], int]:
        """The images and files of the input's last user message (the question: stored
        with it, or for an http(s) image shown to the model), and how many images the
        whole input holds. Those of earlier messages are history: not stored again."""
        if isinstance(self.input, str):
            return [], 0
        messages = [item for item in self.input if isinstance(item, MessageItem)]
        count = sum(isinstance(p, ImagePart) for item in messages for p in item.attachments())
        last = messages[-1] if messages and messages[-1].role == "user" else None
        return (last.attachments() if last else []), count

    def compaction_trigger(self) -> bool:
        """Whether the input ends with a ``compaction_trigger`` (anywhere else: a 400)."""
        if isinstance(self.input, str):
            return False
        items = enumerate(self.input)
        triggers = [i for i, item in items if isinstance(item, CompactionTriggerItem)]
        if triggers and triggers != [len(self.input) - 1]:
            raise InvalidInput("input: compaction_trigger must be the last item, once")
        return bool(triggers)

    def outputs(self) -> list[tuple[str, str]]:
        """The ``function_call_output`` items after the input's last message: the
        outputs of the calls this request answers (earlier ones were answered before)."""
        if isinstance(self.input, str):
            return []
        found: list[tuple[str, str]] = []
        for item in self.input:
            if isinstance(item, MessageItem):
                found = []
            elif isinstance(item, FunctionCallOutputItem):
                found.append((item.call_id, item.text()))
        return found

    def shown_tools(self) -> list[dict[str, Any]]:
        """The function tools as the response lists them (hosted ones, ignored, are not)."""
        return [tool.shown() for tool in _functions(self.tools)]

    def function_tools(self) -> list[dict[str, Any]]:
        return [tool.spec() for tool in _functions(self.tools)]

    def conversation_id(self) -> str | None:
        if isinstance(self.conversation, ConversationRef):
            return self.conversation.id
        return self.conversation


class CreateConversation(OpenBody):
    """``metadata.agent`` picks the agent the conversation is with (else the default)."""

    items: list[MessageItem] | None = Field(default=None, max_length=20)
    metadata: dict[str, Annotated[str, NoNul, Field(max_length=512)]] | None = Field(
        default=None, max_length=16
    )


class UpdateConversation(OpenBody):
    metadata: dict[str, Annotated[str, NoNul, Field(max_length=512)]] = Field(max_length=16)


class CreateItems(OpenBody):
    items: list[MessageItem] = Field(min_length=1, max_length=20)


class CompactRequest(_Turn):
    """``POST /v1/responses/compact``: the conversation so far (``input``, or
    ``previous_response_id``), for a compaction item naming it."""

    input: Input | None = None
    prompt_cache_key: str | None = Field(default=None, max_length=256)
