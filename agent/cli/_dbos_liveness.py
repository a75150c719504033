"""Worker liveness for the distributed batch: who is alive, and whose tasks to take back.

A worker that dies leaves its tasks ``PENDING`` under its executor id. Each worker holds a
lock for its life (a Postgres advisory lock, or a file lock next to a SQLite database);
the others, when they find the lock free on every look for ``--dead-after`` seconds, hand
the dead worker's tasks back to the queue, where they resume from their last finished
step. A live worker whose lock's connection dropped takes its lock again in that time.

This module imports ``dbos``; the worker imports it only when it runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import sqlalchemy as sa
from dbos import DBOS

from agent.cli._dbos_batch import WORKER_PREFIX, engine_for

__all__ = [
    "CONNECT_TIMEOUT",
    "DATABASE_ERRORS",
    "DEFAULT_DEAD_AFTER",
    "DeadWorkers",
    "Liveness",
    "hold_liveness",
    "recover_dead",
]


class Liveness(Protocol):
    """A lock each worker holds while it lives, which the others can test."""

    def is_free(self, executor: str) -> bool:
        """Return whether the worker ``executor``'s lock is free right now."""
        ...

    def renew(self) -> bool:
        """Make sure this worker holds its lock; return whether it had to take it again."""
        ...

    def close(self) -> None:
        """Release this worker's lock."""
        ...


DATABASE_ERRORS = (sa.exc.OperationalError, sa.exc.InterfaceError, OSError)
"""What a lost or unreachable database raises: a worker retries on these, never dies."""

CONNECT_TIMEOUT = 10
"""Seconds a worker's lock connection waits for the database when it reconnects."""


@dataclass
class _PostgresLiveness:
    """Session advisory locks: the server drops a worker's with its connection.

    The server also drops it when the connection alone is lost (a database restart, a
    network cut, an administrator ending the session) while the worker lives on: `renew`
    then takes it again on a new connection, and the others wait `DeadWorkers.dead_after`
    before they take a free lock for a dead worker.
    """

    engine: sa.Engine
    executor: str
    connection: sa.Connection | None = None

    _SPACE = 0x746E  # keeps these locks apart from any other advisory locks in the database

    @classmethod
    def hold(cls, url: str, executor: str) -> _PostgresLiveness:
        liveness = cls(engine_for(url, connect_timeout=CONNECT_TIMEOUT), executor)
        liveness.renew()
        return liveness

    def renew(self) -> bool:
        if self.connection is not None and not self.connection.invalidated:
            try:
                self.connection.execute(sa.text("SELECT 1"))
                return False  # the session lives, so does its lock
            except sa.exc.DBAPIError:
                pass  # the session is gone, and its lock with it: take it again below
        self._drop()
        connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            connection.execute(
                sa.text("SELECT pg_advisory_lock(:space, hashtext(:id))"),
                {"space": self._SPACE, "id": self.executor},
            )
        except BaseException:
            connection.close()
            raise
        self.connection = connection
        return True

    def is_free(self, executor: str) -> bool:
        connection = self.connection
        assert connection is not None, "renew() takes the lock first"
        params = {"space": self._SPACE, "id": executor}
        got = connection.execute(
            sa.text("SELECT pg_try_advisory_lock(:space, hashtext(:id))"), params
        ).scalar()
        if got:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:space, hashtext(:id))"), params)
        return bool(got)

    def _drop(self) -> None:
        if self.connection is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                self.connection.close()
            self.connection = None

    def close(self) -> None:
        self._drop()
        self.engine.dispose()


@dataclass
class _FileLiveness:
    """File locks in a directory next to the SQLite database (one machine)."""

    folder: Path
    fd: int

    @classmethod
    def hold(cls, url: str, executor: str) -> _FileLiveness:
        database = Path(sa.make_url(url).database or "toolnexus-batch.sqlite")
        folder = database.with_name(database.name + ".workers")
        folder.mkdir(exist_ok=True)
        fd = os.open(folder / f"{executor}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return cls(folder, fd)

    def renew(self) -> bool:
        return False  # a file lock lives as long as the process: no connection to lose

    def is_free(self, executor: str) -> bool:
        path = self.folder / f"{executor}.lock"
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        finally:
            os.close(fd)
        path.unlink(missing_ok=True)
        return True

    def close(self) -> None:
        os.close(self.fd)


def hold_liveness(url: str, executor: str) -> Liveness:
    """Take this worker's liveness lock; hold it before DBOS starts dequeuing."""
    if url.startswith("sqlite"):
        return _FileLiveness.hold(url, executor)
    return _PostgresLiveness.hold(url, executor)


DEFAULT_DEAD_AFTER = 10.0
"""Seconds another worker's lock must stay free before that worker is taken for dead."""


class DeadWorkers:
    """Which other workers are gone: their lock found free on every look for a while.

    A lock found free once is not enough: a live worker whose lock connection dropped takes
    its lock again at its next look (`Liveness.renew`), and taking its tasks meanwhile
    would run them twice and report the tools it is finishing as cut off.

    Args:
        liveness: This worker's lock, which tests the others'.
        me: This worker's executor id (never dead to itself).
        dead_after: Seconds a lock must stay free; ``0`` takes a free lock at once.
        clock: Where the seconds come from (a monotonic clock).
    """

    def __init__(
        self,
        liveness: Liveness,
        me: str,
        dead_after: float = DEFAULT_DEAD_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.liveness = liveness
        self.me = me
        self.dead_after = dead_after
        self._clock = clock
        self._free_since: dict[str, float] = {}

    def gone(self, executors: Iterable[str]) -> list[str]:
        """Look at the locks of ``executors``; return those free for `dead_after` seconds."""
        now = self._clock()
        free_since: dict[str, float] = {}
        dead: list[str] = []
        for executor in sorted(set(executors) - {self.me}):
            if not self.liveness.is_free(executor):
                continue
            since = self._free_since.get(executor, now)
            if now - since >= self.dead_after:
                dead.append(executor)
            else:
                free_since[executor] = since
        self._free_since = free_since
        return dead


async def recover_dead(watch: DeadWorkers) -> list[str]:
    """Hand the tasks of dead workers back to their queues; return those workers' ids.

    Raises:
        sqlalchemy.exc.OperationalError: The database was lost on the way (as the other
            `DATABASE_ERRORS`); nobody was taken for dead.
    """
    import asyncio

    pending = await DBOS.list_workflows_async(status="PENDING", load_input=False, load_output=False)
    others = {
        status.executor_id
        for status in pending
        if status.executor_id and status.executor_id.startswith(WORKER_PREFIX)
    }
    dead = await asyncio.to_thread(watch.gone, others)
    if dead:
        # DBOS has no public call for this without its Conductor service: it is what
        # Conductor does when an executor goes away (its workflows go back to the queue).
        await asyncio.to_thread(DBOS._recover_pending_workflows, dead)
    return dead
