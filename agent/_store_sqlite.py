"""`SqliteStore`: sessions in one SQLite file, shared safely by threads and processes.

SQLite (standard library) was chosen over one JSON file per session because it gives, with no
extra code: atomic replacement of a transcript (each save is one transaction, so a crash
mid-save leaves the previous version), safe concurrent use by several processes (SQLite's own
file locking with a busy timeout, where files would need platform-specific locks and careful
rename dances), a single file to back up or delete, and an atomic "take the lease if free" step
used to refuse two runs on one session.

A session is one row of ``sessions`` (the transcript's JSON without its Contents) and one row
of ``contents`` per Content, so the save after a turn writes that turn's rows, however long
the conversation (`SqliteStore.save_appended`). A row written by an earlier release, with
the Contents inside the transcript's JSON, is read as it is and rewritten on its next save.

A run holds its session through a row of the ``leases`` table, renewed while the run lasts;
see `SqliteStore.lock_session`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import socket
import sqlite3
import stat
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

from agent._store import archive_json, check_session_id
from agent._transcript import Transcript, read_json
from agent.errors import SessionBusyError, SessionError, TranscriptError, TranscriptVersionError

__all__ = ["SqliteStore"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS contents (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS archive (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    data TEXT NOT NULL,
    added_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS archive_session ON archive (session_id, seq);
CREATE TABLE IF NOT EXISTS leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
"""


def _pid_alive(pid: int) -> bool:
    """Tell whether process ``pid`` on this host may still be running."""
    if os.name != "posix":  # no side-effect-free probe elsewhere: trust the lease's expiry
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        pass
    return True


def _check_path(path: Path) -> None:
    """Refuse, before SQLite touches it, a path that cannot be a session store file.

    Raises:
        SessionError: The folder is missing, or the path is a folder or a special file (a
            FIFO would block the open forever).
    """
    if not path.parent.is_dir():
        raise SessionError(
            f"session store {path}: the folder {path.parent} does not exist; create it or "
            "choose a store path in an existing folder"
        )
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return  # created on first use
    except OSError as exc:
        raise SessionError(f"session store {path}: cannot be read ({exc.strerror})") from None
    if stat.S_ISDIR(mode):
        raise SessionError(
            f"session store {path}: is a folder, not a file; choose a file path inside it"
        )
    if not stat.S_ISREG(mode):
        raise SessionError(
            f"session store {path}: is not a regular file (a FIFO, a device or a socket); "
            "choose a path to a regular file"
        )


def _unusable(path: Path, exc: sqlite3.Error) -> SessionError:
    """Say in one line why SQLite could not use ``path`` and what to do; nothing is changed."""
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        problem = "is read-only; make it (and its folder) writable, or choose another path"
    elif isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text
    ):
        problem = (
            f"is not a session store, or is damaged ({text}); it was left untouched: move it "
            "away or choose another path"
        )
    elif "locked" in text:
        problem = f"is held by another process ({text}); try again once it is done"
    else:
        problem = f"cannot be used ({text}); check the path, its permissions and the free space"
    return SessionError(f"session store {path}: {problem}")


def _lease_of(row: tuple[Any, ...]) -> tuple[str, int, float] | None:
    """Read a lease row as (host, pid, expires_at); None when a field has the wrong type."""
    host, pid, expires_at = row
    if not isinstance(host, str) or type(pid) is not int:
        return None
    if not isinstance(expires_at, int | float) or isinstance(expires_at, bool):
        return None
    return host, pid, float(expires_at)


def _compact_json(value: Any) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def _head_json(transcript: Transcript, now: float) -> str:
    """Return the transcript's stored JSON without its Contents (they have rows of their own)."""
    head = dataclasses.replace(transcript, updated_at=now).to_dict()
    del head["contents"]
    return _compact_json(head)


def _holds_rows(conn: sqlite3.Connection, session_id: str, count: int) -> bool:
    """Tell whether the session's first ``count`` Contents are rows of ``contents``.

    Rows are written from 0 up without gaps, so the last of them standing is enough; a
    session still in the earlier layout (Contents inside its JSON) holds none.
    """
    row = conn.execute("SELECT data FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    try:
        head = json.loads(row[0]) if row is not None else None
    except (RecursionError, ValueError):
        return False
    if not isinstance(head, dict) or "contents" in head:
        return False
    last = conn.execute(
        "SELECT 1 FROM contents WHERE session_id = ? AND seq = ?", (session_id, count - 1)
    ).fetchone()
    return last is not None


def _write(
    conn: sqlite3.Connection, session_id: str, transcript: Transcript, kept: int, now: float
) -> None:
    """Write ``transcript`` in one transaction (its Contents from ``kept`` on, if they can be).

    The Contents before ``kept`` are left as they are when their rows are in place;
    otherwise every Content is written again.
    """
    head = _head_json(transcript, now)

    def write() -> None:
        start = kept if kept > 0 and _holds_rows(conn, session_id, kept) else 0
        rows = [
            (session_id, seq, _compact_json(content))
            for seq, content in enumerate(transcript.contents[start:], start)
        ]
        conn.execute("DELETE FROM contents WHERE session_id = ? AND seq >= ?", (session_id, start))
        conn.executemany("INSERT INTO contents (session_id, seq, data) VALUES (?, ?, ?)", rows)
        conn.execute(
            "INSERT INTO sessions (session_id, version, data, updated_at) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET version = excluded.version,"
            " data = excluded.data, updated_at = excluded.updated_at",
            (session_id, transcript.version, head, now),
        )

    _transaction(conn, write)


def _read(head: str, rows: list[str]) -> Transcript:
    """Build a transcript from its ``sessions`` row and its ``contents`` rows.

    Raises:
        TranscriptError: A row is not JSON, or the whole is not a transcript.
    """
    data = read_json(head)
    if isinstance(data, dict) and "contents" not in data:
        data["contents"] = [read_json(row) for row in rows]
    return Transcript.from_dict(data)


def _transaction(conn: sqlite3.Connection, fn: Callable[[], _T]) -> _T:
    """Run ``fn`` in one write transaction: all of its changes are kept, or none."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn()
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


class SqliteStore:
    """Keeps transcripts in one SQLite file, safe across threads and processes.

    Each save is one transaction (a crash leaves the previous version), the database runs in WAL
    mode with full sync, and all I/O happens in a worker thread, never on the event loop. The
    file is opened on first use; `close` (or ``async with``) releases it.

    A run holds its session through a lease row that is renewed while the run lasts. A second
    run on the same session, in this or another process, gets `SessionBusyError`. A lease left
    by a crashed process is taken over once it expires (``lease_seconds``), or at once when the
    holder was on this host and its process is gone.

    Example::

        async with SqliteStore("sessions.db") as store:
            await store.save("alice", Transcript(contents=[...]))
            transcript = await store.get("alice")

    Pass it to an agent as ``Agent(..., store=SqliteStore("sessions.db"))``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 10.0,
        lease_seconds: float = 60.0,
    ) -> None:
        """Name the database file; nothing is opened or created until first use.

        Args:
            path: The database file; created on first use if missing.
            busy_timeout: Seconds to wait for another process's write to finish before a
                read or write fails with `sqlite3.OperationalError`.
            lease_seconds: How long a session lease lasts without renewal; a held lease is
                renewed every third of this.
        """
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
            _check_path(self.path)
            try:
                conn = sqlite3.connect(
                    self.path,
                    timeout=self.busy_timeout,
                    isolation_level=None,
                    check_same_thread=False,
                )
            except sqlite3.Error as exc:
                raise _unusable(self.path, exc) from None
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.executescript(_SCHEMA)
            except sqlite3.Error as exc:
                conn.close()
                raise _unusable(self.path, exc) from None
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``fn`` with the connection in a worker thread, one call at a time.

        A failure of SQLite (a file that cannot be written, a full disk, a lock held too
        long) becomes a one-line `SessionError` whose ``__cause__`` is the sqlite3 error.
        """

        def call() -> _T:
            with self._mutex:
                try:
                    return fn(self._connect())
                except sqlite3.Error as exc:
                    raise _unusable(self.path, exc) from exc

        return await asyncio.to_thread(call)

    def _damaged(self, session_id: str, exc: TranscriptError) -> TranscriptError:
        """Name the store and the session in a `TranscriptError` (a version error as is)."""
        if isinstance(exc, TranscriptVersionError):
            return exc
        return TranscriptError(
            f"session store {self.path}: session {session_id!r}: {exc}; it was left "
            "untouched: delete the session or choose another store"
        )

    async def close(self) -> None:
        """Close the database connection; the next call opens it again."""

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
        """Load a session.

        Args:
            session_id: The session's id (a non-empty string).

        Returns:
            The saved transcript, or None for a session never saved.

        Raises:
            ValueError: ``session_id`` is not a non-empty string, or the stored row is
                malformed.
            TranscriptVersionError: the stored transcript has a schema version this library
                does not read.
            TranscriptError: the stored transcript is not JSON, is nested too deeply, or
                has a malformed field (also a ``ValueError``); it is left untouched.
            SessionError: the file cannot be a session store (a folder, a FIFO, not a
                database, read-only, in a missing folder) or SQLite failed to read it; the
                message says what to do.
        """
        check_session_id(session_id)

        def get(conn: sqlite3.Connection) -> tuple[str, list[str]] | None:
            row = conn.execute(
                "SELECT data FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            rows = conn.execute(
                "SELECT data FROM contents WHERE session_id = ? ORDER BY seq", (session_id,)
            )
            return str(row[0]), [str(r[0]) for r in rows]

        stored = await self._run(get)
        if stored is None:
            return None
        try:
            return _read(*stored)
        except TranscriptError as exc:
            raise self._damaged(session_id, exc) from None

    async def save(self, session_id: str, transcript: Transcript) -> None:
        """Replace the session's transcript in one transaction and set its ``updated_at``.

        Args:
            session_id: The session's id (a non-empty string).
            transcript: What to keep.

        Raises:
            ValueError: ``session_id`` is not a non-empty string, or the transcript holds a
                NaN or infinite float.
            TypeError: the transcript holds a value that is not JSON data.
            SessionError: the file cannot be a session store, or the write failed (see
                `get`). In every case the previous version is kept.
        """
        await self.save_appended(session_id, transcript, 0)

    async def save_appended(self, session_id: str, transcript: Transcript, kept: int) -> None:
        """Save ``transcript`` as `save` does, writing only its Contents after the first ``kept``.

        A session calls it after each turn with the Contents it loaded or saved before,
        so the write follows the turn, not the conversation. When the stored rows do not
        match (``kept`` is 0, or the session was written by an earlier release), the
        whole transcript is written.

        Args:
            session_id: The session's id (a non-empty string).
            transcript: What to keep.
            kept: How many leading Contents the store holds for the session already.

        Raises:
            ValueError: As for `save`.
            TypeError: As for `save`.
            SessionError: As for `save`. In every case the previous version is kept.
        """
        check_session_id(session_id)
        now = time.time()
        await self._run(lambda conn: _write(conn, session_id, transcript, kept, now))
        transcript.updated_at = now

    async def delete(self, session_id: str) -> bool:
        """Delete a session's saved transcript (a lease held on it is left to its run).

        Args:
            session_id: The session to delete.

        Returns:
            True if a transcript was deleted, False if there was none.
        """

        def delete(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM contents WHERE session_id = ?", (session_id,))
            conn.execute("DELETE FROM archive WHERE session_id = ?", (session_id,))
            return cur.rowcount > 0

        return await self._run(lambda conn: _transaction(conn, lambda: delete(conn)))

    async def append_archive(self, session_id: str, contents: list[dict[str, Any]]) -> None:
        """Append one batch of replaced Contents to the session's archive: one new row.

        Earlier rows are never rewritten, so the cost of a save does not grow with the
        archive.

        Args:
            session_id: The session's id (a non-empty string).
            contents: The replaced Contents, as JSON-ready dicts.

        Raises:
            ValueError: ``session_id`` is not a non-empty string, or a NaN or infinite float.
            TypeError: a value that is not JSON data.
            SessionError: the file cannot be a session store, or the write failed (see
                `get`). In every case nothing is appended.
        """
        check_session_id(session_id)
        raw = archive_json(contents)
        now = time.time()

        def append(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO archive (session_id, data, added_at) VALUES (?, ?, ?)",
                (session_id, raw, now),
            )

        await self._run(lambda conn: _transaction(conn, lambda: append(conn)))

    async def archive(self, session_id: str) -> list[dict[str, Any]]:
        """Read the session's archive.

        Args:
            session_id: The session's id (a non-empty string).

        Returns:
            Every archived Content, oldest first; empty for a session with none.

        Raises:
            ValueError: ``session_id`` is not a non-empty string.
            TranscriptError: an archived batch is not a JSON list (it is left untouched).
            SessionError: the file cannot be a session store, or SQLite failed (see `get`).
        """
        check_session_id(session_id)

        def rows(conn: sqlite3.Connection) -> list[str]:
            cur = conn.execute(
                "SELECT data FROM archive WHERE session_id = ? ORDER BY seq", (session_id,)
            )
            return [str(r[0]) for r in cur]

        out: list[dict[str, Any]] = []
        for raw in await self._run(rows):
            try:
                batch = json.loads(raw)
            except (RecursionError, ValueError) as exc:
                problem = TranscriptError(f"its archive is not readable JSON ({exc})")
                raise self._damaged(session_id, problem) from None
            if not isinstance(batch, list):
                problem = TranscriptError("its archive holds a batch that is not a list")
                raise self._damaged(session_id, problem)
            out.extend(batch)
        return out

    async def session_ids(self) -> list[str]:
        """List the saved sessions.

        Returns:
            The saved session ids, sorted.
        """

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
                lease = _lease_of(tuple(row))
                if lease is None:
                    raise SessionError(
                        f"session store {self.path}: the lease of session {session_id!r} is "
                        f"damaged (host, pid, expiry: {tuple(row)!r:.200}); it was left "
                        "untouched: delete its row from the leases table, or choose another "
                        "store"
                    )
                held_host, held_pid, expires_at = lease
                dead = held_host == host and held_pid != pid and not _pid_alive(held_pid)
                if expires_at > now and not dead:
                    here = held_pid == pid and held_host == host
                    holder = "this process" if here else f"process {held_pid} on host {held_host!r}"
                    raise SessionBusyError(session_id, holder)
            conn.execute(
                "INSERT OR REPLACE INTO leases (session_id, owner, host, pid, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (session_id, owner, host, pid, now + self.lease_seconds),
            )

        _transaction(conn, take)

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
            except SessionError as exc:  # a busy database now and then: try again next time
                logger.warning("could not renew the lease on session %r: %s", session_id, exc)
                continue
            if not renewed:
                logger.warning("the lease on session %r expired and was taken over", session_id)
                return

    async def _release_quietly(self, session_id: str, owner: str) -> None:
        try:
            await self._run(lambda conn: self._release(conn, session_id, owner))
        except SessionError as exc:  # the lease then simply expires
            logger.warning("could not release the lease on session %r: %s", session_id, exc)

    @contextlib.asynccontextmanager
    async def lock_session(self, session_id: str) -> AsyncIterator[None]:
        """Hold ``session_id`` for one run, across processes.

        Runs normally take the lock through `session_lock`, which also excludes other holders
        in this process; this is the cross-process half.

        Args:
            session_id: The session's id.

        Yields:
            Nothing; the session is held until the block exits.

        Raises:
            SessionBusyError: another run, in this or another process, holds the session.
        """
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
