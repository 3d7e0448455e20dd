"""The files a send names (``files`` on every door that starts a run from a person's
message, docs/FILES.md): checked before anything is written — the owner's, within the
per-message limits, each once."""

from __future__ import annotations

from collections.abc import Sequence

from lumina_app.domain import InputTooLarge, InvalidInput, Principal
from lumina_app.services.files import _FILE_ID, FileNotFound
from lumina_app.storage.files import StoredFile
from lumina_app.storage.message_files import MessageFiles


class Attachments:
    def __init__(self, links: MessageFiles, *, max_files: int, max_bytes: int) -> None:
        self.links = links
        self.max_files = max_files  # LUMINA_MAX_FILES_PER_MESSAGE
        self.max_bytes = max_bytes  # LUMINA_MAX_MESSAGE_FILE_BYTES

    async def check(self, principal: Principal, file_ids: Sequence[str]) -> list[StoredFile]:
        """The owner's files, in the order named. Too many or too many bytes: 413; an id
        twice: 422; another owner's, an unknown or a malformed id: 404."""
        if not file_ids:
            return []
        if len(file_ids) > self.max_files:
            raise InputTooLarge(
                f"a message may carry {self.max_files} files; this one names {len(file_ids)} "
                "(LUMINA_MAX_FILES_PER_MESSAGE)"
            )
        if len(set(file_ids)) != len(file_ids):
            raise InvalidInput("files names the same file more than once")
        for file_id in file_ids:
            if not isinstance(file_id, str) or not _FILE_ID.fullmatch(file_id):
                raise FileNotFound(str(file_id))
        found = {f.id: f for f in await self.links.owned(principal.owner, file_ids)}
        missing = next((i for i in file_ids if i not in found), None)
        if missing is not None:
            raise FileNotFound(missing)
        files = [found[i] for i in file_ids]
        total = sum(f.size for f in files)
        if total > self.max_bytes:
            raise InputTooLarge(
                f"the files of one message may hold {self.max_bytes} bytes; these hold {total} "
                "(LUMINA_MAX_MESSAGE_FILE_BYTES)"
            )
        return files
