"""Conversation memory: transcripts, the two-method `Store` protocol and the shipped stores.

A session is a conversation that outlives one call: ``run(prompt, session="id")`` loads the
session's `Transcript` from a store, runs, and saves it back after every completed turn.

Two stores ship with the package:

- `MemoryStore` (the default) keeps transcripts in this process only.
- `SqliteStore` keeps them in one SQLite file. SQLite (standard library) was chosen over one JSON
  file per session because it gives, with no extra code: atomic replacement of a transcript
  (each save is one transaction, so a crash mid-save leaves the previous version), safe
  concurrent use by several processes (SQLite's own file locking with a busy timeout, where
  files would need platform-specific locks and careful rename dances), a single file to back up
  or delete, and an atomic "take the lease if free" step used to refuse two runs on one session.

Any object with ``async get(session_id)`` and ``async save(session_id, transcript)`` is a store::

    class DictStore:
        def __init__(self) -> None:
            self.data: dict[str, str] = {}

        async def get(self, session_id: str) -> Transcript | None:
            raw = self.data.get(session_id)
            return None if raw is None else Transcript.from_json(raw)

        async def save(self, session_id: str, transcript: Transcript) -> None:
            self.data[session_id] = transcript.to_json()

Two runs on one session are **refused**, never interleaved: `session_lock` raises
`SessionBusyError` for the second one. Refusing (rather than queueing) keeps a run's outcome
independent of whoever else is talking in the same conversation, and it tells the caller at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = [
    "CURRENT_TRANSCRIPT_VERSION",
    "LockingStore",
    "MemoryStore",
    "SessionBusyError",
    "SqliteStore",
    "Store",
    "Transcript",
    "TranscriptVersionError",
    "session_lock",
]

logger = logging.getLogger(__name__)

CURRENT_TRANSCRIPT_VERSION = 1
"""The transcript schema version this library writes."""

_T = TypeVar("_T")


class TranscriptVersionError(ValueError):
    """A stored transcript has a schema version this library cannot read."""

    def __init__(self, version: object) -> None:
        self.version = version
        if isinstance(version, int) and not isinstance(version, bool) and version >= 1:
            detail = (
                f"transcript schema version {version} is not supported: this library reads "
                f"versions 1 to {CURRENT_TRANSCRIPT_VERSION}; upgrade toolnexus-gemini to load it"
            )
        else:
            detail = f"transcript has no valid schema version (got {version!r}); expected an int"
        super().__init__(detail)


class SessionBusyError(RuntimeError):
    """Another run holds the session: two runs on one conversation are refused, not interleaved.

    Carries ``session_id`` and ``holder`` (who holds it: "this process" or a host and pid).
    """

    def __init__(self, session_id: str, holder: str) -> None:
        self.session_id = session_id
        self.holder = holder
        super().__init__(
            f"session {session_id!r} is in use by another run ({holder}); "
            "wait for that run to finish or use a different session id"
        )


# Each entry upgrades a transcript dict from version N to N + 1.
_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


@dataclass(slots=True)
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
    """Schema version of this layout; older stored versions are migrated on load."""

    def to_dict(self) -> dict[str, Any]:
        """Return the transcript as a plain dict (the stored JSON layout)."""
        return {
            "version": self.version,
            "contents": self.contents,
            "pending": self.pending,
            "metadata": self.metadata,
            "updated_at": self.updated_at,
        }

    def to_json(self) -> str:
        """Serialise to a JSON string; raises `TypeError`/`ValueError` on non-JSON data."""
        return json.dumps(self.to_dict(), allow_nan=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Transcript:
        """Build a transcript from its stored layout, migrating older schema versions.

        Raises `TranscriptVersionError` for an unknown (newer) version and `ValueError` for a
        malformed layout.
        """
        if not isinstance(data, dict):
            raise ValueError(f"transcript must be a JSON object, got {type(data).__name__}")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise TranscriptVersionError(version)
        while version < CURRENT_TRANSCRIPT_VERSION:
            data = _MIGRATIONS[version](data)
            version += 1
        if version != CURRENT_TRANSCRIPT_VERSION:
            raise TranscriptVersionError(version)
        contents = data.get("contents")
        if not isinstance(contents, list) or not all(isinstance(c, dict) for c in contents):
            raise ValueError("transcript 'contents' must be a list of Content objects")
        pending = data.get("pending")
        if pending is not None and not isinstance(pending, dict):
            raise ValueError("transcript 'pending' must be an object or null")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError("transcript 'metadata' must be an object")
        updated_at = data.get("updated_at")
        return cls(
            contents=contents,
            pending=pending,
            metadata=metadata,
            updated_at=float(updated_at) if isinstance(updated_at, int | float) else None,
            version=version,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> Transcript:
        """Parse a transcript saved by `to_json` (any supported schema version)."""
        return cls.from_dict(json.loads(text))


def _check_id(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(f"a session id must be a non-empty string, got {session_id!r}")
    return session_id


def _stamped_json(transcript: Transcript) -> tuple[str, float]:
    """Serialise with a fresh ``updated_at``; fails before any state is touched."""
    now = time.time()
    data = transcript.to_dict()
    data["updated_at"] = now
    return json.dumps(data, allow_nan=False, separators=(",", ":")), now


@runtime_checkable
class Store(Protocol):
    """Where sessions live: two async methods, so any backend is a few lines."""

    async def get(self, session_id: str) -> Transcript | None:
        """Return the saved transcript, or None for a new session."""
        ...

    async def save(self, session_id: str, transcript: Transcript) -> None:
        """Replace the session's transcript atomically (all of it or none of it)."""
        ...


@runtime_checkable
class LockingStore(Store, Protocol):
    """A store that can also refuse a second run on a session held by another process."""

    def lock_session(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the session for one run; raise `SessionBusyError` if someone else holds it."""
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
        self._data: dict[str, str] = {}

    async def get(self, session_id: str) -> Transcript | None:
        """Return a copy of the saved transcript, or None."""
        raw = self._data.get(_check_id(session_id))
        return None if raw is None else Transcript.from_json(raw)

    async def save(self, session_id: str, transcript: Transcript) -> None:
        """Store a copy of ``transcript`` (and set its ``updated_at``)."""
        raw, now = _stamped_json(transcript)
        self._data[_check_id(session_id)] = raw
        transcript.updated_at = now

    async def delete(self, session_id: str) -> bool:
        """Forget a session; return whether it existed."""
        return self._data.pop(session_id, None) is not None

    async def session_ids(self) -> list[str]:
        """Return the saved session ids, sorted."""
        return sorted(self._data)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
"""


def _pid_alive(pid: int) -> bool:
    if os.name != "posix":  # no cheap, side-effect-free probe elsewhere: trust the expiry
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SqliteStore:
    """Keeps transcripts in one SQLite file, safe across threads and processes.

    Each save is one transaction (a crash leaves the previous version), the database runs in WAL
    mode with full sync, and all I/O happens in a worker thread, never on the event loop. The
    file is opened on first use; `close` (or ``async with``) releases it.

    A run holds its session through a lease row that is renewed while the run lasts. A second
    run on the same session — in this or another process — gets `SessionBusyError`. A lease left
    by a crashed process is taken over once it expires (``lease_seconds``), or at once when the
    holder was on this host and its process is gone.

    Example::

        store = SqliteStore("sessions.db")
        async with SqliteStore("sessions.db") as store:
            await store.save("alice", Transcript(contents=[...]))
            transcript = await store.get("alice")
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 10.0,
        lease_seconds: float = 60.0,
    ) -> None:
        self.path = Path(path)
        """The database file."""
        self.busy_timeout = busy_timeout
        """Seconds to wait for another process's write to finish before failing."""
        self.lease_seconds = lease_seconds
        """How long a session lease lasts without renewal (renewed every third of it)."""
        self._conn: sqlite3.Connection | None = None
        self._mutex = threading.Lock()

    # -- plumbing -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(
                self.path,
                timeout=self.busy_timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.executescript(_SCHEMA)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        def call() -> _T:
            with self._mutex:
                return fn(self._connect())

        return await asyncio.to_thread(call)

    @staticmethod
    def _transaction(conn: sqlite3.Connection, fn: Callable[[], _T]) -> _T:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn()
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    async def close(self) -> None:
        """Close the database connection (it reopens on next use)."""

        def close() -> None:
            with self._mutex:
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.to_thread(close)

    async def __aenter__(self) -> SqliteStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the Store protocol ---------------------------------------------------------------

    async def get(self, session_id: str) -> Transcript | None:
        """Return the saved transcript, or None for a new session."""
        _check_id(session_id)

        def get(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT data FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            return None if row is None else str(row[0])

        raw = await self._run(get)
        return None if raw is None else Transcript.from_json(raw)

    async def save(self, session_id: str, transcript: Transcript) -> None:
        """Replace the session's transcript in one transaction (and set its ``updated_at``)."""
        _check_id(session_id)
        raw, now = _stamped_json(transcript)

        def save(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO sessions (session_id, version, data, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET version = excluded.version,"
                " data = excluded.data, updated_at = excluded.updated_at",
                (session_id, transcript.version, raw, now),
            )

        await self._run(lambda conn: self._transaction(conn, lambda: save(conn)))
        transcript.updated_at = now

    async def delete(self, session_id: str) -> bool:
        """Forget a session; return whether it existed."""

        def delete(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            return cur.rowcount > 0

        return await self._run(delete)

    async def session_ids(self) -> list[str]:
        """Return the saved session ids, sorted."""

        def ids(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT session_id FROM sessions ORDER BY session_id")
            return [str(r[0]) for r in rows]

        return await self._run(ids)

    # -- leases ---------------------------------------------------------------------------

    def _acquire(self, conn: sqlite3.Connection, session_id: str, owner: str) -> None:
        host, pid, now = socket.gethostname(), os.getpid(), time.time()

        def take() -> None:
            row = conn.execute(
                "SELECT host, pid, expires_at FROM leases WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is not None:
                held_host, held_pid, expires_at = str(row[0]), int(row[1]), float(row[2])
                dead = held_host == host and held_pid != pid and not _pid_alive(held_pid)
                if expires_at > now and not dead:
                    where = "this process" if held_pid == pid and held_host == host else None
                    raise SessionBusyError(
                        session_id, where or f"process {held_pid} on host {held_host!r}"
                    )
            conn.execute(
                "INSERT OR REPLACE INTO leases (session_id, owner, host, pid, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, owner, host, pid, now + self.lease_seconds),
            )

        self._transaction(conn, take)

    def _renew(self, conn: sqlite3.Connection, session_id: str, owner: str) -> bool:
        cur = conn.execute(
            "UPDATE leases SET expires_at = ? WHERE session_id = ? AND owner = ?",
            (time.time() + self.lease_seconds, session_id, owner),
        )
        return cur.rowcount > 0

    def _release(self, conn: sqlite3.Connection, session_id: str, owner: str) -> None:
        conn.execute("DELETE FROM leases WHERE session_id = ? AND owner = ?", (session_id, owner))

    async def _keep_renewed(self, session_id: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                renewed = await self._run(lambda conn: self._renew(conn, session_id, owner))
            except sqlite3.Error as exc:  # a busy database now and then: try again next time
                logger.warning("could not renew the lease on session %r: %s", session_id, exc)
                continue
            if not renewed:
                logger.warning("the lease on session %r expired and was taken over", session_id)
                return

    async def _release_quietly(self, session_id: str, owner: str) -> None:
        try:
            await self._run(lambda conn: self._release(conn, session_id, owner))
        except sqlite3.Error as exc:  # the lease then simply expires
            logger.warning("could not release the lease on session %r: %s", session_id, exc)

    @contextlib.asynccontextmanager
    async def lock_session(self, session_id: str) -> AsyncIterator[None]:
        """Hold ``session_id`` for one run, across processes; see `session_lock`."""
        owner = uuid.uuid4().hex
        acquiring = asyncio.ensure_future(
            self._run(lambda conn: self._acquire(conn, session_id, owner))
        )
        try:
            await asyncio.shield(acquiring)
        except asyncio.CancelledError:
            # The worker thread may still take the lease: give it back rather than leave it
            # blocking the session until it expires.
            with contextlib.suppress(Exception):
                await acquiring
                await self._release_quietly(session_id, owner)
            raise
        renewer = asyncio.create_task(self._keep_renewed(session_id, owner))
        try:
            yield
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await self._release_quietly(session_id, owner)


# In-process holders: id(store) -> (store, held session ids). The store is kept referenced
# while it has holders, so its id cannot be reused by another object meanwhile.
_held: dict[int, tuple[object, set[str]]] = {}
_held_mutex = threading.Lock()


@contextlib.asynccontextmanager
async def session_lock(store: Store, session_id: str) -> AsyncIterator[None]:
    """Hold a session for the length of one run; a second holder gets `SessionBusyError`.

    Works for any store within this process (across tasks, threads and event loops). When the
    store is a `LockingStore` (as `SqliteStore` is), it also excludes runs in other processes.

    Example::

        async with session_lock(store, "alice"):
            transcript = await store.get("alice")
            ...
            await store.save("alice", transcript)
    """
    _check_id(session_id)
    key = id(store)
    with _held_mutex:
        _, held = _held.setdefault(key, (store, set()))
        if session_id in held:
            raise SessionBusyError(session_id, "this process")
        held.add(session_id)
    try:
        if isinstance(store, LockingStore):
            async with store.lock_session(session_id):
                yield
        else:
            yield
    finally:
        with _held_mutex:
            held.discard(session_id)
            if not held:
                _held.pop(key, None)
