"""`engine_options`: how DBOS should open its system database for durable agent runs."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

__all__ = ["engine_options"]


def engine_options(url: str) -> dict[str, Any]:
    """Return DBOS's ``db_engine_kwargs`` for a durable-run database at ``url``.

    On SQLite, each connection writes through a write-ahead log with
    ``synchronous=NORMAL``: a commit appends to the log and does not wait for the disk. In
    SQLite's default mode each commit waits for several disk flushes (20 ms on a cloud
    disk), and a durable step makes one or two commits. A crash of the process loses
    nothing; a crash of the machine (a power cut) may lose the last commits, whose steps
    DBOS then runs again when it recovers the run, as if they had been cut off. On
    Postgres (a server that makes its own durability choices) it returns nothing.

    Example::

        from dbos import DBOS
        from agent.dbos import engine_options

        url = "sqlite:///app.sqlite"
        DBOS(config={"name": "app", "system_database_url": url,
                     "db_engine_kwargs": engine_options(url)})

    Args:
        url: The system database URL DBOS is given.

    Returns:
        Keyword arguments for ``sqlalchemy.create_engine`` (empty on Postgres).
    """
    parsed = sa.make_url(url)
    if not parsed.drivername.startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        return {}
    return {"creator": _wal_connection(parsed.database)}


def _wal_connection(path: str) -> Callable[[], sqlite3.Connection]:
    def connect() -> sqlite3.Connection:
        # Shared by the pool's threads as SQLAlchemy shares its own SQLite connections.
        connection = sqlite3.connect(path, timeout=30, check_same_thread=False)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    return connect
