"""`Attachment`: a file (image, PDF, audio...) for a prompt or a tool result, without any SDK.

Bytes go to Gemini inline; a ``uri`` (a Files API URI, an HTTPS or ``gs://`` URL) goes as
file data, by reference.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Attachment"]


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

        Raises:
            OSError: The file cannot be read.
            ValueError: No MIME type was given and none can be guessed.
        """
        file = Path(path)
        guessed = mime_type or guess_mime_type(file.name)
        if guessed is None:
            raise ValueError(f"cannot tell the MIME type of {file.name!r}; pass mime_type=")
        return cls(guessed, data=file.read_bytes(), name=file.name)


def guess_mime_type(name: str) -> str | None:
    """Return the MIME type of a file name (``None`` when unknown)."""
    return mimetypes.guess_type(name)[0]
