"""Where sessions are kept: the two-method `Store` protocol and the in-process `MemoryStore`.

A session is a conversation that outlives one call: ``run(prompt, session="id")`` loads the
session's `Transcript` from a store, runs, and saves it back after every completed turn.
`MemoryStore` (the default) keeps transcripts in this process; `SqliteStore` keeps them in a
file shared by processes.

Any object with ``async get(session_id)`` and ``async save(session_id, transcript)`` is a store::

    class DictStore:
        def __init__(self) -> None:
            self.data: dict[str, str] = {}

        async def get(self, session_id: str) -> Transcript | None:
            raw = self.data.get(session_id)
            return None if raw is None else Transcript.from_json(raw)

        async def save(self, session_id: str, transcript: Transcript) -> None:
            self.data[session_id] = transcript.to_json()

A store may also keep compaction's archive (the Contents compaction replaced) apart from the
transcript, append-only: see `ArchivingStore`. Both built-in stores do; a store without it
gets the archive inside the transcript's ``metadata["archive"]``, rewritten on every save.
A store may also write only what a turn added to a transcript: see `AppendingStore`
(`SqliteStore` does).
"""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from agent._transcript import Transcript, stamped_json

__all__ = [
    "AppendingStore",
    "ArchivingStore",
    "LockingStore",
    "MemoryStore",
    "Store",
    "archive_json",
    "check_session_id",
]


def check_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a non-empty string.

    Raises:
        ValueError: it is not.
    """
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"a session id must be a non-empty string, got {session_id!r}")
    return session_id


def archive_json(contents: list[dict[str, Any]]) -> str:
    """Serialise a batch of archived Contents as a store keeps it.

    Raises:
        ValueError: a NaN or infinite float.
        TypeError: a value that is not JSON data.
    """
    if not isinstance(contents, list):
        raise TypeError(f"an archive batch must be a list of Contents, got {type(contents)!r}")
    return json.dumps(contents, allow_nan=False, separators=(",", ":"))


@runtime_checkable
class Store(Protocol):
    """Where sessions live: two async methods, so any backend is a few lines."""

    async def get(self, session_id: str) -> Transcript | None:
        """Load a session.

        Args:
            session_id: The session's id.

        Returns:
            The saved transcript, or None for a session never saved.
        """
        ...

    async def save(self, session_id: str, transcript: Transcript) -> None:
        """Replace the session's transcript atomically (all of it or none of it).

        Args:
            session_id: The session's id.
            transcript: What to keep; the store must not keep a reference the caller can
                change afterwards.
        """
        ...


@runtime_checkable
class LockingStore(Store, Protocol):
    """A store that can also refuse a second run on a session held by another process."""

    def lock_session(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the session for one run.

        Args:
            session_id: The session's id.

        Returns:
            A context manager holding the session while it is entered.

        Raises:
            SessionBusyError: someone else holds the session (raised on entering).
        """
        ...


@runtime_checkable
class ArchivingStore(Store, Protocol):
    """A store that keeps compaction's archive apart from the transcript, append-only.

    The Contents compaction replaces are appended in batches that are never rewritten, so a
    save costs the same however long the session has run. A store without these methods
    still works: the archive then rides in the transcript's ``metadata["archive"]``.
    """

    async def append_archive(self, session_id: str, contents: list[dict[str, Any]]) -> None:
        """Add one batch of replaced Contents to the end of the session's archive.

        Args:
            session_id: The session's id.
            contents: The Contents, as JSON-ready dicts; the store keeps a copy.
        """
        ...

    async def archive(self, session_id: str) -> list[dict[str, Any]]:
        """Read back the session's archive.

        Args:
            session_id: The session's id.

        Returns:
            Every archived Content, oldest first; empty for a session with none.
        """
        ...


@runtime_checkable
class AppendingStore(Store, Protocol):
    """A store that can save a transcript by writing only the Contents added since its last save.

    A session saves after every turn; with this method the cost of a save follows the turn,
    not the length of the conversation. The session calls it only while it holds the
    session, with the number of leading Contents that are those of the session as it was
    loaded or last saved.
    """

    async def save_appended(self, session_id: str, transcript: Transcript, kept: int) -> None:
        """Replace the session's transcript atomically, like `Store.save`.

        Args:
            session_id: The session's id.
            transcript: What to keep.
            kept: How many of ``transcript.contents``, from the first, are those the store
                holds for the session already; the store may write them again anyway.
        """
        ...


class MemoryStore:
    """Keeps transcripts in this process (the default store).

    Transcripts are stored as JSON text, so what you get back is always a fresh copy and the
    same data is accepted here as by `SqliteStore`.

    Example::

        store = MemoryStore()
        await store.save("s1", Transcript(contents=[...]))
        transcript = await store.get("s1")
    """

    def __init__(self) -> None:
        """Start with no sessions."""
        self._data: dict[str, str] = {}
        self._archives: dict[str, list[str]] = {}

    async def get(self, session_id: str) -> Transcript | None:
        """Load a copy of a session.

        Args:
            session_id: The session's id (a non-empty string).

        Returns:
            A fresh copy of the saved transcript, or None for a session never saved.

        Raises:
            ValueError: ``session_id`` is not a non-empty string.
        """
        raw = self._data.get(check_session_id(session_id))
        return None if raw is None else Transcript.from_json(raw)

    async def save(self, session_id: str, transcript: Transcript) -> None:
        """Store a copy of ``transcript`` and set its ``updated_at``.

        Args:
            session_id: The session's id (a non-empty string).
            transcript: What to keep; later changes to it do not reach the store.

        Raises:
            ValueError: ``session_id`` is not a non-empty string, or the transcript holds a
                NaN or infinite float. The previous version is kept.
            TypeError: the transcript holds a value that is not JSON data. The previous
                version is kept.
        """
        check_session_id(session_id)
        raw, now = stamped_json(transcript)
        self._data[session_id] = raw
        transcript.updated_at = now

    async def delete(self, session_id: str) -> bool:
        """Forget a session.

        Args:
            session_id: The session's id.

        Returns:
            Whether the session existed.
        """
        self._archives.pop(session_id, None)
        return self._data.pop(session_id, None) is not None

    async def append_archive(self, session_id: str, contents: list[dict[str, Any]]) -> None:
        """Append a copy of ``contents`` to the session's archive (earlier batches untouched).

        Args:
            session_id: The session's id (a non-empty string).
            contents: The replaced Contents, as JSON-ready dicts.

        Raises:
            ValueError: ``session_id`` is not a non-empty string, or a NaN or infinite float.
            TypeError: a value that is not JSON data. Nothing is appended.
        """
        check_session_id(session_id)
        raw = archive_json(contents)
        self._archives.setdefault(session_id, []).append(raw)

    async def archive(self, session_id: str) -> list[dict[str, Any]]:
        """Read a fresh copy of the session's archive.

        Args:
            session_id: The session's id (a non-empty string).

        Returns:
            Every archived Content, oldest first; empty for a session with none.
        """
        check_session_id(session_id)
        out: list[dict[str, Any]] = []
        for raw in self._archives.get(session_id, ()):
            out.extend(json.loads(raw))
        return out

    async def session_ids(self) -> list[str]:
        """List the saved sessions.

        Returns:
            The saved session ids, sorted.
        """
        return sorted(self._data)
