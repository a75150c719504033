"""Images and PDFs met by the file and web tools: returned as attachments, not refused.

A model that reads ``chart.png`` or fetches a PDF gets the file itself (an `Attachment` on
the result), up to `MEDIA_CAP` bytes; a bigger one is an error that says so.
"""

from __future__ import annotations

from toolnexus._attachment import Attachment, guess_mime_type
from toolnexus.errors import ToolError
from toolnexus.tool import ToolResult

__all__ = ["MEDIA_CAP", "check_size", "is_media", "media_result", "media_type_of"]

MEDIA_CAP = 20 * 1024 * 1024
"""The largest image or PDF a tool hands to the model, in bytes."""

_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/webp", "image/gif", "image/heic", "image/heif"}
) | {"application/pdf"}


def is_media(mime_type: str | None) -> bool:
    """Tell whether a MIME type is an image or PDF the model can look at."""
    return (mime_type or "").split(";")[0].strip().lower() in _MEDIA_TYPES


def media_type_of(name: str) -> str | None:
    """Return the image/PDF MIME type of a file name, or ``None`` for anything else."""
    guessed = guess_mime_type(name)
    return guessed if is_media(guessed) else None


def check_size(size: int, shown: str) -> None:
    """Refuse a file bigger than `MEDIA_CAP` (before reading it).

    Raises:
        ToolError: It is too big.
    """
    if size > MEDIA_CAP:
        raise ToolError(
            f"{shown} is {size} bytes, over the {MEDIA_CAP} bytes a tool passes to the "
            "model; use a smaller file."
        )


def media_result(data: bytes, mime_type: str, shown: str) -> ToolResult:
    """Return a result carrying ``data`` as an attachment named after ``shown``.

    Raises:
        ToolError: The file is bigger than `MEDIA_CAP`.
    """
    check_size(len(data), shown)
    name = shown.rsplit("/", 1)[-1] or "file"
    kind = "PDF" if mime_type == "application/pdf" else "image"
    return ToolResult(
        f"{shown} is attached ({kind}, {len(data)} bytes).",
        attachments=(Attachment(mime_type, data=data, name=name),),
    )
