"""Files that come through the OpenAI doors (#48): a chat-completions ``image_url`` part
with a ``data:`` URL, a Responses ``input_image`` (data URL or ``file_id``) or
``input_file`` (``file_id``, or ``file_data`` with a ``filename``). Each becomes one of the
owner's files — uploaded like any other (``FileService.upload``: type sniffed from the
bytes, size limit, quota) or, for a ``file_id``, looked up as the owner's (another's is a
404) — and is attached to the question by id (``RunService.start_run(files=...)``). One rule for
both doors: images only for an agent whose model takes them."""

from __future__ import annotations

import base64
import binascii
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from lumina_app.domain import InvalidInput, Principal, UnsupportedFileType
from lumina_app.services.agents import AgentService
from lumina_app.services.file_types import RASTER_IMAGES
from lumina_app.services.files import FileService

_B64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})"
_TOKEN = r"[A-Za-z0-9.+-]+"
_PARAMS = rf"(?:;{_TOKEN}={_TOKEN})*"
DATA_URL_PATTERN = rf"data:({_TOKEN}/{_TOKEN}){_PARAMS};base64,({_B64})"
BASE64_PATTERN = rf"^(?:data:{_TOKEN}/{_TOKEN}{_PARAMS};base64,)?{_B64}$"
IMAGE_URL_PATTERN = rf"^(?:data:image/{_TOKEN}{_PARAMS};base64,{_B64}|https?://[^\x00-\x20\x7f]+)$"
"""What the schemas say an image URL is: a base64 data URL of an image, or http(s) with
no space or control character (spelled out: ``\\s`` means other characters in Python's,
Rust's and JSON Schema's regular expressions, so a schema-valid URL was refused)."""
_DATA_URL = re.compile(DATA_URL_PATTERN, re.S)
_EXTENSIONS = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}
Kind = Literal["image", "file"]


class ImagesRefused(InvalidInput):
    """Images for an agent whose model reads text only."""

    code = "image_input_unsupported"


@dataclass(frozen=True, slots=True)
class InlineFile:
    """One file a request carries: its bytes (decoded) or the id of an uploaded file."""

    kind: Kind
    field: str  # where it was, for errors: "input_image", "image_url", "input_file"
    data: bytes | None = None
    file_id: str | None = None
    name: str = ""


def decode_data_url(url: str, field: str) -> tuple[str | None, bytes]:
    """``data:<type>;base64,<data>`` → (the type it claims, the bytes). Anything else
    (not base64, bad padding) is a 400; the type claimed is never trusted."""
    match = _DATA_URL.fullmatch(url)
    if match is None:
        raise InvalidInput(f"{field}: a data URL must be data:<type>;base64,<base64 data>")
    return match.group(1), decode_base64(match.group(2), field)


def decode_base64(text: str, field: str) -> bytes:
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"{field}: not valid base64") from None
    if not data:
        raise InvalidInput(f"{field}: the file is empty")
    return data


def image_from_data_url(url: str, field: str, position: int) -> InlineFile:
    """An image part's data URL as a file named ``image-<n>.<ext>`` (by the type claimed;
    the bytes decide what it is)."""
    claimed, data = decode_data_url(url, field)
    if claimed is None or not claimed.startswith("image/"):
        raise InvalidInput(f"{field}: a data URL of an image must be data:image/...")
    name = f"image-{position}.{_EXTENSIONS.get(claimed.lower(), 'img')}"
    return InlineFile("image", field, data=data, name=name)


@dataclass(frozen=True, slots=True)
class Attached:
    """What a request attaches (``ids``, in order) and which of them it uploaded."""

    ids: tuple[str, ...] = ()
    uploaded: tuple[str, ...] = ()


class _Bytes:
    """Bytes in memory as an upload (``files.Upload``)."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)

    async def read(self, size: int = -1) -> bytes:
        return self.buffer.read(size)

    async def seek(self, offset: int) -> None:
        self.buffer.seek(offset)


class GatewayFiles:
    def __init__(self, files: FileService, agents: AgentService, *, default_provider: str) -> None:
        self.files = files
        self.agents = agents
        self.default_provider = default_provider

    def check_images(self, agent_id: str, field: str) -> None:
        """The rule of both doors: a 400 naming why for an agent that reads text only."""
        agent = self.agents.definition(agent_id)
        if not agent.takes_images(self.default_provider):
            raise ImagesRefused(
                f"{field}: agent {agent.id!r} is text-only (its model is not marked "
                '"vision": true in its config.json); send text only'
            )

    async def store(
        self, principal: Principal, agent_id: str | None, found: Sequence[InlineFile]
    ) -> Attached:
        """The ids to attach, in order: ids looked up, bytes uploaded. A refusal (a
        text-only agent, another owner's id, a type that is not an image where an image
        belongs, too large, the quota) raises, and what this call uploaded is deleted.
        No ``agent_id``: history a client brings (a conversation's items), kept whatever
        the agent reads (a text-only one is told an image's name)."""
        images = [f for f in found if f.kind == "image"]
        if images and agent_id is not None:
            self.check_images(agent_id, images[0].field)
        ids: list[str] = []
        uploaded: list[str] = []
        try:
            for item in found:
                file_id = await self._one(principal, item, uploaded)
                ids.append(file_id)
        except BaseException:
            await self.discard(principal, uploaded)
            raise
        return Attached(tuple(ids), tuple(uploaded))

    async def _one(self, principal: Principal, item: InlineFile, uploaded: list[str]) -> str:
        if item.file_id is not None:
            stored = await self.files.get(principal, item.file_id)  # another's: 404
        else:
            assert item.data is not None
            stored = await self.files.upload(principal, name=item.name, source=_Bytes(item.data))
            uploaded.append(stored.id)
        if item.kind == "image" and stored.media_type not in RASTER_IMAGES:
            raise UnsupportedFileType(
                f"{item.field}: the file is {stored.media_type}, not an image "
                "(PNG, JPEG, GIF or WebP)"
            )
        return stored.id

    async def discard(self, principal: Principal, file_ids: Sequence[str]) -> None:
        """Delete files this request uploaded when the run did not start."""
        for file_id in file_ids:
            await self.files.delete(principal, file_id)
