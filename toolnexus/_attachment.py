"""`Attachment`: a file (image, PDF, audio...) for a prompt or a tool result, without any SDK.

Bytes go to Gemini inline; a ``uri`` (a Files API URI, an HTTPS or ``gs://`` URL) goes as
file data, by reference.
"""

from __future__ import annotations

import mimetypes
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MAX_FILE_BYTES", "Attachment", "read_regular_file"]

MAX_FILE_BYTES = 2 * 1024**3
"""The largest file `Attachment.from_path` reads: 2 GB, the Files API's limit per file."""


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file given to the model: its MIME type and either its bytes or a URI.

    Example::

        Attachment("image/png", data=png_bytes, name="chart.png")
        Attachment("application/pdf", uri="https://generativelanguage.googleapis.com/v1beta/files/abc")
        Attachment.from_path("photo.jpg")
    """

    mime_type: str
    """The MIME type, e.g. ``"image/png"`` or ``"application/pdf"``."""
    data: bytes | None = None
    """The file's bytes (sent inline)."""
    uri: str | None = None
    """Where the model fetches it from (sent as file data)."""
    name: str | None = None
    """A display name (a file name), shown to the model where the API allows it."""

    def __post_init__(self) -> None:
        if (self.data is None) == (self.uri is None):
            raise ValueError("an Attachment needs exactly one of data= or uri=")
        if not self.mime_type or "/" not in self.mime_type:
            raise ValueError(
                f"an Attachment needs a MIME type like 'image/png', got {self.mime_type!r}"
            )

    def __repr__(self) -> str:
        held = f"{len(self.data)} bytes" if self.data is not None else repr(self.uri)
        return f"Attachment({self.mime_type!r}, {held}, name={self.name!r})"

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> Attachment:
        """Read a file into an attachment; the MIME type is guessed from its name.

        Only a regular file (a symlink to one is fine) of at most `MAX_FILE_BYTES` is read.
        A FIFO, a device (``/dev/zero``), a socket or a directory is refused at once, so a
        path that names one can neither block the caller nor fill its memory.

        Raises:
            OSError: The file cannot be opened or read.
            ValueError: It is not a regular file, it is bigger than `MAX_FILE_BYTES`, or
                no MIME type was given and none can be guessed.
        """
        file = Path(path)
        guessed = mime_type or guess_mime_type(file.name)
        if guessed is None:
            raise ValueError(f"cannot tell the MIME type of {file.name!r}; pass mime_type=")
        return cls(guessed, data=read_regular_file(file, MAX_FILE_BYTES), name=file.name)


def read_regular_file(path: Path, most: int) -> bytes:
    """Return the bytes of the regular file ``path``, refusing anything else or over ``most``.

    The file is opened non-blocking (opening a FIFO would wait for a writer) and checked on
    the open descriptor, so it cannot be swapped between the check and the read; at most
    ``most + 1`` bytes are read, in case it grows meanwhile.

    Raises:
        OSError: It cannot be opened or read.
        ValueError: It is not a regular file, or it is bigger than ``most`` bytes.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(
                f"{path} is not a regular file (a FIFO, a device, a socket or a folder)"
            )
        data = b""
        if info.st_size <= most:
            with os.fdopen(fd, "rb", closefd=False) as handle:
                data = handle.read(most + 1)
    finally:
        os.close(fd)
    if info.st_size > most or len(data) > most:
        raise ValueError(f"{path} is over {most} bytes, the most one attachment may hold")
    return data


def guess_mime_type(name: str) -> str | None:
    """Return the MIME type of a file name (``None`` when unknown)."""
    return mimetypes.guess_type(name)[0]
