"""How much an archive import may read: the caps that keep a hostile archive from
exhausting memory or disk (docs/ARCHIVE.md, "Limits")."""

from __future__ import annotations

from dataclasses import dataclass

from lumina_app.settings import Settings

FILE_LIMIT = "LUMINA_IMPORT_MAX_FILE_BYTES"
ZIP_LIMIT = "LUMINA_IMPORT_MAX_ZIP_BYTES"
MEMBERS_LIMIT = "LUMINA_IMPORT_MAX_ZIP_MEMBERS"


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """Caps on bytes actually read, whatever sizes a file system or a zip header claims."""

    max_file_bytes: int
    """meta.json or history.json, from a folder or a zip."""
    max_zip_bytes: int
    """Everything extracted from one zip, counted as it is decompressed."""
    max_zip_members: int
    """Entries in a zip's central directory, counted before it is parsed."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ImportLimits:
        return cls(
            max_file_bytes=settings.import_max_file_bytes,
            max_zip_bytes=settings.import_max_zip_bytes,
            max_zip_members=settings.import_max_zip_members,
        )


DEFAULT_LIMITS = ImportLimits.from_settings(Settings.model_construct())
"""The documented defaults (``model_construct`` reads no environment)."""


def too_large(size: str, limit: int, variable: str) -> str:
    """``is 300,000,000 bytes, over the 67,108,864-byte limit (LUMINA_...)``."""
    return f"is {size}, over the {limit:,}-byte limit ({variable})"
