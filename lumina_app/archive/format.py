"""The archive on disk (ARCHITECTURE.md § Archive): the per-agent layout, its atomic writer.

    <root>/agents/<agentId>/conversations/<convId>/meta.json
                                                  /history.json
                                                  /branches.json   (edited questions only)
                                                  /<messageId>/messages.log

``conversation_files`` renders a conversation into those files (relative path → bytes), so
the folder writer (``archive_writer``) and the zip export produce the same bytes.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import zipfile
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from lumina_app.archive.attachments import AttachedFile, render_files
from lumina_app.domain import ConversationInfo, Msg, MsgRole, Summary
from lumina_app.domain.access import is_safe_name
from lumina_app.domain.views import conversation_meta, history_entry, iso_ms

META = "meta.json"
HISTORY = "history.json"
BRANCHES = "branches.json"
TURN_LOG = "messages.log"
MEMORY_FOLDER = "memory"  # agents/<agentId>/memory/<owner>.json (archive/memory_files.py)
TMP_PREFIX = ".tmp-"

# Ids become folder names: one path component, no leading dot, nothing a shell or a
# filesystem treats specially. Native ids (uuid4, ``msg-<base36>-<hex>``) always pass.
# Matched with fullmatch: ``$`` would also accept a name ending in a newline.
# Anything that could end a Markdown line inside a header value: controls (\n, \r, \v,
# \f, \x1c-\x1f, \x85 ...) and the Unicode line and paragraph separators.
_LINE_BREAKING = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_LOG_TAG = {
    MsgRole.USER: "USER",
    MsgRole.ASSISTANT: "AGENT",
    MsgRole.SYSTEM: "SYSTEM",
    MsgRole.TOOL: "TOOL",
}


class ArchiveError(Exception):
    """A file of an archive cannot be used; ``path`` names it."""

    def __init__(self, path: Path | str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = Path(path)
        self.message = message


def conversation_relpath(agent_id: str, conversation_uuid: str) -> PurePosixPath:
    """``agents/<agentId>/conversations/<convId>``; refuses ids that are not one safe name."""
    for kind, value in (("agent id", agent_id), ("conversation id", conversation_uuid)):
        if not is_safe_name(value):
            where = f"agents/{agent_id}/conversations/{conversation_uuid}"
            raise ArchiveError(where, f"{kind} {value!r} cannot be used as a folder name")
    return PurePosixPath("agents", agent_id, "conversations", conversation_uuid)


def conversation_dir(root: Path, agent_id: str, conversation_uuid: str) -> Path:
    return root / conversation_relpath(agent_id, conversation_uuid)


# -- rendering ---------------------------------------------------------------------------


def dump_json(value: Any) -> bytes:
    """UTF-8, not ASCII-escaped, indent 2, trailing newline."""
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


def archive_meta(
    conv: ConversationInfo, msgs: Sequence[Msg], summaries: Sequence[Summary] = ()
) -> dict[str, Any]:
    """meta.json: ``messageCount`` counts what history.json holds; ``summaries`` (only when
    there are any) the rolling summaries, oldest first."""
    meta = conversation_meta(dataclasses.replace(conv, message_count=len(msgs)))
    if conv.temporary:  # only on a temporary conversation: other folders are unchanged
        meta["temporary"] = True
    if summaries:
        meta["summaries"] = [
            {
                "coveredToSeq": s.covered_to_seq,
                "text": s.text,
                "model": s.model,
                "createdAt": iso_ms(s.created_at) if s.created_at else None,
            }
            for s in summaries
        ]
    return meta


def archive_history(
    msgs: Sequence[Msg], files: Mapping[int, list[dict[str, Any]]] | None = None
) -> list[dict[str, Any]]:
    """history.json; a message with files lists them (``files``: id, name, type, size, and
    where the archive holds them, their ``sha256`` and ``path``: ``files`` by index)."""
    entries = []
    for index, msg in enumerate(msgs):
        entry = history_entry(msg)
        if files is not None and index in files:
            entry["files"] = files[index]
        elif described := [d for d in msg.meta.get("files") or () if isinstance(d, dict)]:
            keys = ("id", "name", "type", "size")
            entry["files"] = [{k: d.get(k) for k in keys} for d in described]
        entries.append(entry)
    return entries


def branches_document(
    active: Sequence[Msg],
    parked: Sequence[Msg],
    files: Mapping[int, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """branches.json, beside a history.json of the ``active`` branch: the seq of each of
    its entries, and the rows of the other branches (``parked``: history.json entries,
    their files listed as there, with their ``seq`` and ``parked`` tag), so an import puts
    every row back in its place."""
    entries = archive_history(parked, files)
    return {
        "seqs": [m.seq for m in active],
        "parked": [
            entry | {"seq": m.seq, "parked": m.meta.get("parked")}
            for entry, m in zip(entries, parked, strict=True)
        ],
    }


def turn_log(msgs: Sequence[Msg]) -> str:
    """One turn's messages.log: ``[timestamp] [USER]``, the text, a blank line, the next."""
    blocks = []
    for msg in msgs:
        stamp = iso_ms(msg.created_at) if msg.created_at else ""
        blocks.append(f"[{stamp}] [{_LOG_TAG[msg.role]}]\n{msg.content}\n")
    return "\n".join(blocks)


def group_turns(msgs: Sequence[Msg]) -> dict[str, list[Msg]]:
    """Messages by turn id, in seq order; messages whose turn id cannot name a folder
    (empty, foreign characters) get no messages.log."""
    turns: dict[str, list[Msg]] = {}
    for msg in msgs:
        if is_safe_name(msg.turn_id, max_length=64):
            turns.setdefault(msg.turn_id, []).append(msg)
    return turns


def conversation_files(
    conv: ConversationInfo,
    msgs: Sequence[Msg],
    *,
    turns: Collection[str] | None = None,
    summaries: Sequence[Summary] = (),
    parked: Sequence[Msg] = (),
    attached: Mapping[str, tuple[AttachedFile, bytes]] | None = None,
) -> dict[PurePosixPath, bytes]:
    """The archive files of one conversation, relative to the archive root.

    ``turns`` limits which messages.log files are rendered (the mirror writes only the
    turns that just ended); meta.json and history.json are always whole. ``parked``: the
    rows of the branches not shown (branches.json, only when there are any). ``attached``:
    the messages' files by id with their bytes (the parked rows' too), written as
    ``<messageId>/files/<name>``.
    """
    base = conversation_relpath(conv.agent_id, conv.uuid)
    taken: dict[str, set[str]] = {}  # the names in each turn's files folder, both branches'
    entries, blobs = render_files(msgs, attached, taken) if attached is not None else (None, {})
    files = {
        base / META: dump_json(archive_meta(conv, msgs, summaries)),
        base / HISTORY: dump_json(archive_history(msgs, entries)),
    }
    files.update({base / rel: data for rel, data in blobs.items()})
    if parked:
        kept, blobs = render_files(parked, attached, taken) if attached is not None else (None, {})
        files.update({base / rel: data for rel, data in blobs.items()})
        files[base / BRANCHES] = dump_json(branches_document(msgs, parked, kept))
    for turn_id, turn_msgs in group_turns(msgs).items():
        if turns is None or turn_id in turns:
            files[base / turn_id / TURN_LOG] = turn_log(turn_msgs).encode("utf-8")
    return files


def zip_files(files: dict[PurePosixPath, bytes]) -> bytes:
    """The rendered files as a .zip (deflated), paths as in the folder layout."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for rel in sorted(files, key=str):
            archive.writestr(str(rel), files[rel])
    return buffer.getvalue()


def markdown_transcript(
    conv: ConversationInfo, msgs: Sequence[Msg], parked: Sequence[Msg] = ()
) -> str:
    """A readable transcript: a header with the meta fields, then each message in order
    (the active branch; an edited question says which branch it is, of how many)."""
    meta = archive_meta(conv, msgs)
    branches: dict[int, int] = {}
    for m in (*msgs, *parked):
        if "branchOf" in m.meta:
            group = m.meta["branchOf"]
            branches[group] = max(branches.get(group, 0), int(m.meta.get("branch", 1)))
    lines = [
        f"# {one_line(conv.title) or 'Untitled conversation'}",
        "",
        f"- Conversation: `{one_line(meta['conversationId'])}`",
        f"- Agent: `{one_line(meta['agentId'])}`",
        f"- Created: {meta['createdAt']}",
        f"- Updated: {meta['updatedAt']}",
        f"- Status: {meta['status']}",
        f"- Messages: {meta['stats']['messageCount']}",
    ]
    for msg in msgs:
        stamp = f" · {iso_ms(msg.created_at)}" if msg.created_at else ""
        body = [msg.content] if msg.content else []
        # a tool step's answer says nothing itself: what it called is its section
        body += [f"- called `{one_line(str(c.get('name', '?')))}` with "
                 f"`{one_line(str(c.get('arguments', '')))[:500] or '{}'}`"
                 for c in msg.tool_calls]  # fmt: skip
        if msg.role is MsgRole.TOOL:
            name = one_line(str(msg.meta.get("name", "")))
            heading = f"### Tool result{f' · `{name}`' if name else ''}{stamp}"
        else:
            heading = f"### {_MD_ROLE[msg.role]}{stamp}"
        if "branchOf" in msg.meta:
            heading += f" · branch {msg.meta.get('branch', 1)} / {branches[msg.meta['branchOf']]}"
        lines += ["", heading, "", *(body or ["_(empty)_"])]
    return "\n".join(lines) + "\n"


def one_line(text: str) -> str:
    """``text`` as one line: line breaks and other control characters become one space, so
    a value put in a header line (a title) cannot start a Markdown line of its own."""
    return " ".join(_LINE_BREAKING.sub(" ", text).split())


_MD_ROLE = {
    MsgRole.USER: "User",
    MsgRole.ASSISTANT: "Assistant",
    MsgRole.SYSTEM: "System",
    MsgRole.TOOL: "Tool",
}
