"""Reading other products' chat exports (ChatGPT, Claude, Open WebUI, LibreChat) and a
pasted memory block into plain parsed conversations and facts. Pure: bytes in, a
``ParsedExport`` out or an ``ImportFormatError`` (422) / ``InputTooLarge`` (413) — the
whole file is parsed and checked before anything is stored (docs/IMPORTS.md)."""

from __future__ import annotations

from lumina_app.archive.chat_imports import chatgpt, claude, librechat, memory_block, openwebui
from lumina_app.archive.chat_imports.model import (
    ImportFormatError,
    ImportSource,
    ParsedConversation,
    ParsedExport,
    ParsedMessage,
    fingerprint,
    load_json,
)
from lumina_app.archive.chat_imports.upload import read_document, too_large

__all__ = [
    "ImportFormatError",
    "ImportSource",
    "ParsedConversation",
    "ParsedExport",
    "ParsedMessage",
    "fingerprint",
    "parse_upload",
]

_PARSERS = {
    ImportSource.CHATGPT: chatgpt.parse,
    ImportSource.CLAUDE: claude.parse,
    ImportSource.OPENWEBUI: openwebui.parse,
    ImportSource.LIBRECHAT: librechat.parse,
}


def parse_upload(source: ImportSource, data: bytes, *, max_bytes: int) -> ParsedExport:
    """Everything in ``data`` read as ``source``'s export; raises before anything is kept."""
    if source is ImportSource.MEMORIES:
        if len(data) > max_bytes:
            raise too_large(f"more than {max_bytes:,} bytes", max_bytes)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ImportFormatError(f"the memory block is not UTF-8 text ({exc.reason})") from None
        return ParsedExport(source, facts=memory_block.parse(text))
    document = load_json(read_document(data, max_bytes), f"the {source.label} export")
    try:
        conversations = _PARSERS[source](document)
    except RecursionError:
        raise ImportFormatError("the export is nested too deeply") from None
    if not conversations:
        raise ImportFormatError(f"the {source.label} export holds no conversation")
    return ParsedExport(source, conversations)
