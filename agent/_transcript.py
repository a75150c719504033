"""The saved form of a session: a versioned `Transcript` and its JSON layout.

Every store keeps a session as this JSON text, so a transcript saved by one store (or one
release of the library) reads the same way in another::

    {"version": 1, "contents": [...], "pending": null, "metadata": {}, "updated_at": 1.7e9}

``contents`` are Gemini ``Content`` dicts in wire (camelCase) form. A transcript whose
``version`` this library does not know is refused with `TranscriptVersionError` rather than
misread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from agent.errors import TranscriptError, TranscriptVersionError

__all__ = ["CURRENT_TRANSCRIPT_VERSION", "Transcript", "read_json", "stamped_json"]

CURRENT_TRANSCRIPT_VERSION = 1
"""The transcript schema version this library reads and writes."""

MAX_NESTING = 200
"""The deepest nesting of objects and lists a stored transcript may have. What a run saves
is shallower: the SDK cannot serialise a Content nested some 300 deep, so a deeper stored
transcript was not written by this library, and could not be sent anyway."""


def _too_deep(value: object, most: int) -> bool:
    """Tell whether ``value`` nests objects and lists more than ``most`` deep (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[object] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > most:
            return True
        for child in children:
            if isinstance(child, dict | list):  # scalars cannot nest: leave them out
                stack.append((child, depth + 1))
    return False


@dataclass
class Transcript:
    """One session's saved conversation, JSON-ready.

    Example::

        t = Transcript(contents=[{"role": "user", "parts": [{"text": "hi"}]}])
        assert Transcript.from_json(t.to_json()) == t
    """

    contents: list[dict[str, Any]] = field(default_factory=list)
    """Gemini ``Content`` dicts with wire (camelCase) keys, exactly as sent and received:
    thought parts and ``thoughtSignature`` strings (base64) are kept untouched."""
    pending: dict[str, Any] | None = None
    """When a run stopped waiting for an answer: the Request and what the loop needs to resume."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form JSON-ready data about the session (model name, labels, ...)."""
    updated_at: float | None = None
    """When the shipped stores last saved it, in seconds since the epoch (UTC)."""
    version: int = CURRENT_TRANSCRIPT_VERSION
    """Schema version of this layout."""

    def to_dict(self) -> dict[str, Any]:
        """Return the transcript in its stored layout.

        Returns:
            A plain dict with the keys ``version``, ``contents``, ``pending``, ``metadata``
            and ``updated_at``; it shares the lists and dicts of this transcript.
        """
        return {
            "version": self.version,
            "contents": self.contents,
            "pending": self.pending,
            "metadata": self.metadata,
            "updated_at": self.updated_at,
        }

    def to_json(self) -> str:
        """Serialise the transcript to compact JSON text.

        Returns:
            The stored layout (see `to_dict`) as a JSON string.

        Raises:
            TypeError: a value in the transcript is not JSON data.
            ValueError: a float is NaN or infinite (JSON has no spelling for them).
        """
        return json.dumps(self.to_dict(), allow_nan=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transcript:
        """Build a transcript from its stored layout.

        Args:
            data: The stored layout, as `to_dict` returns it.

        Returns:
            The transcript; it shares the lists and dicts of ``data``.

        Raises:
            TranscriptVersionError: ``version`` is missing, not an int, or a version this
                library does not read.
            TranscriptError: a field has the wrong shape; the message names the field (it
                is a ``ValueError`` too).
        """
        if not isinstance(data, dict):
            raise TranscriptError(f"transcript must be a JSON object, got {type(data).__name__}")
        version = data.get("version")
        if type(version) is not int or version != CURRENT_TRANSCRIPT_VERSION:
            raise TranscriptVersionError(version, CURRENT_TRANSCRIPT_VERSION)
        contents = data.get("contents")
        if not isinstance(contents, list) or not all(isinstance(c, dict) for c in contents):
            raise TranscriptError("transcript 'contents' must be a list of Content objects")
        pending = data.get("pending")
        if pending is not None and not isinstance(pending, dict):
            raise TranscriptError("transcript 'pending' must be an object or null")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise TranscriptError("transcript 'metadata' must be an object")
        if _too_deep(data, MAX_NESTING):
            raise TranscriptError(f"the transcript is nested more than {MAX_NESTING} deep")
        updated_at = data.get("updated_at")
        return cls(
            contents=contents,
            pending=pending,
            metadata=metadata,
            updated_at=float(updated_at) if isinstance(updated_at, int | float) else None,
            version=CURRENT_TRANSCRIPT_VERSION,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Transcript:
        """Parse a transcript saved by `to_json`.

        Args:
            text: The JSON text.

        Returns:
            The transcript.

        Raises:
            TranscriptVersionError: the stored ``version`` is not one this library reads.
            TranscriptError: the text is not JSON (or not UTF-8), is nested too deeply to
                read, or a field has the wrong shape (it is a ``ValueError`` too).
        """
        return cls.from_dict(read_json(text))


def read_json(text: str | bytes) -> Any:
    """Parse stored JSON text (a transcript or a part of one).

    Raises:
        TranscriptError: The text is not JSON (or not UTF-8), or is nested too deeply to read.
    """
    try:
        return json.loads(text)
    except RecursionError:
        raise TranscriptError("the transcript is nested too deeply to read") from None
    except ValueError as exc:  # not JSON, or bytes that are not UTF-8
        raise TranscriptError(f"the transcript is not JSON ({exc})") from None


def stamped_json(transcript: Transcript) -> tuple[str, float]:
    """Serialise ``transcript`` with ``updated_at`` set to now, leaving it untouched.

    A store writes the text and, once the write succeeded, sets ``transcript.updated_at`` to
    the returned time, so a failed save changes nothing.
    """
    now = time.time()
    return replace(transcript, updated_at=now).to_json(), now
