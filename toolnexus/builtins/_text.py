"""Text files for the file tools: UTF-8 decoding, line endings and atomic writes.

The file tools only handle UTF-8 text. A file is *binary* when it holds a NUL byte or is
not valid UTF-8; such files are refused rather than mangled. A leading byte-order mark is
kept aside on reading and put back on writing, so tools and models never see it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass

from toolnexus.tool import ToolError

__all__ = [
    "BOM",
    "TextFile",
    "atomic_write",
    "decode",
    "decode_text",
    "is_uniform_crlf",
    "looks_binary",
    "match_line_endings",
]

BOM = "\ufeff"
_BINARY_SNIFF = 8192


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_NEW_FILE_MODE = 0o666 & ~_current_umask()


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded text file: its text (without a byte-order mark) and whether it had one."""

    text: str
    """The file's content, line endings untouched."""
    bom: bool = False
    """True when the file started with a UTF-8 byte-order mark."""

    def encode(self, text: str) -> bytes:
        """Return ``text`` as the bytes of this file (the byte-order mark put back)."""
        return ((BOM if self.bom else "") + text).encode("utf-8")


def looks_binary(data: bytes) -> bool:
    """Tell whether ``data`` (a file, or its start) looks binary: a NUL in its first 8 KiB."""
    return b"\x00" in data[:_BINARY_SNIFF]


def decode(raw: bytes, shown: str) -> TextFile:
    """Decode ``raw`` as UTF-8 text, or raise `ToolError` naming ``shown`` when binary."""
    if looks_binary(raw):
        raise ToolError(
            f"{shown} is a binary file (it contains NUL bytes); only text is supported."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not UTF-8 text (invalid byte at offset {exc.start}); "
            "only UTF-8 text files are supported."
        ) from None
    if text.startswith(BOM):
        return TextFile(text[1:], bom=True)
    return TextFile(text)


def decode_text(raw: bytes) -> str | None:
    """Decode ``raw`` as UTF-8 text without a byte-order mark; ``None`` when it is binary."""
    try:
        return decode(raw, "").text
    except ToolError:
        return None


def is_uniform_crlf(text: str) -> bool:
    """Tell whether ``text`` has line breaks and every one of them is CRLF."""
    crlf = text.count("\r\n")
    return crlf > 0 and crlf == text.count("\n")


def match_line_endings(new: str, old: str) -> str:
    """Return ``new`` with CRLF line endings when ``old`` uses CRLF throughout.

    Lets a model that writes LF line breaks keep a Windows-style file Windows-style. Line breaks
    already written as CRLF are left alone.
    """
    if not is_uniform_crlf(old):
        return new
    return new.replace("\r\n", "\n").replace("\n", "\r\n")


def atomic_write(directory: int, name: str, data: bytes) -> None:
    """Write ``data`` to the file ``name`` in the open directory ``directory``, atomically.

    The bytes go to a new temporary file in the same directory (created exclusively, never
    through a symlink), which then replaces ``name`` in one step, so a crash leaves the
    old file or the new one. Working through the directory's descriptor means a directory
    swapped for a symlink meanwhile cannot send the write elsewhere. An existing file keeps
    its permission bits; a new one gets the usual mode for new files.
    """
    try:
        mode = os.stat(name, dir_fd=directory, follow_symlinks=False).st_mode & 0o7777
    except FileNotFoundError:
        mode = _NEW_FILE_MODE
    tmp = f".{name[:40]}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600, dir_fd=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=directory)
        raise
