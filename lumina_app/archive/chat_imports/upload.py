"""An uploaded export read without trusting it: a plain JSON file, or a zip (ChatGPT's and
Claude's exports come zipped) from which only the conversations file is read — in memory,
never extracted to disk by its name. Before a byte is inflated the member count is walked
(``archive/unzip.count_members``), names are checked (absolute, ``..``, NUL: refused),
declared sizes and the compression ratio are checked; then the member is read in chunks
and cut off at the cap, whatever its header said."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from lumina_app.archive.chat_imports.model import ImportFormatError
from lumina_app.archive.format import ArchiveError
from lumina_app.archive.unzip import count_members
from lumina_app.domain import InputTooLarge

MAX_BYTES_SETTING = "LUMINA_IMPORT_MAX_BYTES"
MAX_MEMBERS = 100_000
MAX_RATIO = 100  # JSON deflates ~5-20x; a bomb, thousands
_CHUNK = 1 << 20
_WANTED = ("conversations.json",)


def too_large(size: str, limit: int) -> InputTooLarge:
    return InputTooLarge(f"the file is {size}, over the {limit:,}-byte limit ({MAX_BYTES_SETTING})")


def read_document(data: bytes, limit: int) -> bytes:
    """The JSON to parse: ``data`` itself, or the export's conversations file in a zip."""
    if len(data) > limit:
        raise too_large(f"more than {limit:,} bytes", limit)
    if data[:4] != b"PK\x03\x04" and data[:4] != b"PK\x05\x06":
        return data
    return _from_zip(data, limit)


def _from_zip(data: bytes, limit: int) -> bytes:
    fp = io.BytesIO(data)
    try:
        count_members(fp, MAX_MEMBERS, Path("upload.zip"))
        fp.seek(0)
        with zipfile.ZipFile(fp) as zipped:
            infos = zipped.infolist()
            for info in infos:
                _check_name(info.filename)
            member = _pick(infos)
            _check_sizes(member, limit)
            return _read_capped(zipped, member, limit)
    except ArchiveError as exc:
        raise ImportFormatError(f"the zip is refused: {exc.message}") from None
    except (zipfile.BadZipFile, EOFError, zlib.error, ValueError, NotImplementedError) as exc:
        raise ImportFormatError(f"not a readable zip (truncated or corrupt): {exc}") from None


def _check_name(name: str) -> None:
    parts = PurePosixPath(name.replace("\\", "/")).parts
    if name.startswith(("/", "\\")) or "\x00" in name or ".." in parts or ":" in name[:3]:
        raise ImportFormatError(f"the zip is refused: member {name[:80]!r} names a path outside it")


def _pick(infos: list[zipfile.ZipInfo]) -> zipfile.ZipInfo:
    files = [i for i in infos if not i.is_dir()]
    named = [i for i in files if PurePosixPath(i.filename).name in _WANTED]
    if named:
        return min(named, key=lambda i: i.filename.count("/"))  # the top-level one
    json_files = [i for i in files if i.filename.endswith(".json")]
    if len(json_files) == 1:
        return json_files[0]
    raise ImportFormatError("the zip holds no conversations.json (is it a chat export?)")


def _check_sizes(info: zipfile.ZipInfo, limit: int) -> None:
    if info.flag_bits & 0x1:
        raise ImportFormatError(f"{info.filename} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ImportFormatError(f"{info.filename}: only stored or deflated members are read")
    if info.file_size > limit:
        raise too_large(f"{info.file_size:,} bytes once unzipped ({info.filename})", limit)
    if info.compress_size and info.file_size / info.compress_size > MAX_RATIO:
        raise ImportFormatError(
            f"{info.filename} expands {info.file_size // info.compress_size}x "
            f"(over {MAX_RATIO}x): refused as a zip bomb"
        )


def _read_capped(zipped: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    out = bytearray()
    read = 0
    with zipped.open(info) as source:
        while chunk := source.read(_CHUNK):
            read += len(chunk)
            if read > limit:
                raise too_large(f"over {limit:,} bytes once unzipped ({info.filename})", limit)
            if info.compress_size and read > MAX_RATIO * info.compress_size + _CHUNK:
                raise ImportFormatError(f"{info.filename} expands past its header: a zip bomb")
            out += chunk
    return bytes(out)
