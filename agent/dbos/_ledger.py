"""`DatabaseLedger`: a `TokenRate`'s entries in a database table, shared by processes.

Every process that names the same database and ledger draws on one limit: the workers of a
distributed batch (``batch --engine dbos --tpm N``), or your own DBOS application's
processes. Postgres serves workers on several machines and reads its own clock, so their
clocks need not agree; SQLite serves the processes of one machine.

Each admission is one transaction that holds the ledger's lock (a transaction-scoped
advisory lock on Postgres, the write lock on SQLite): it drops the entries whose time has
passed, sums those left and adds the new one when it fits. A call in flight counts until
it is settled; if its process dies first, its entry still counts for `IN_FLIGHT` seconds
more, then stops (no request is sent that long after its admission).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import sqlalchemy as sa

from agent.dbos._options import engine_options

if TYPE_CHECKING:
    from agent.capabilities import Admission, TokenRate

__all__ = ["IN_FLIGHT", "DatabaseLedger"]

logger = logging.getLogger("agent")

_LOST = (sa.exc.OperationalError, sa.exc.InterfaceError, OSError)
"""What a lost or unreachable database raises."""

IN_FLIGHT = 600.0
"""Seconds beyond the window an unsettled entry counts (its process may have died)."""

_SPACE = 0x7472
"""The first key of the ledgers' advisory locks (apart from any other locks in the database)."""

_metadata = sa.MetaData()
_entries = sa.Table(
    "toolnexus_token_rate",
    _metadata,
    sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
    sa.Column("ledger", sa.Text(), nullable=False),
    sa.Column("tokens", sa.BigInteger(), nullable=False),
    sa.Column("until", sa.Float(precision=53), nullable=False),
    sa.Index("toolnexus_token_rate_ledger", "ledger", "until"),
)


class DatabaseLedger:
    """A `RateLedger` in a table of a Postgres or SQLite database (the DBOS one will do).

    Example::

        from agent.capabilities import TokenRate
        from agent.dbos import DatabaseLedger

        rate = TokenRate(1_000_000, ledger=DatabaseLedger(DB_URL, name="flash"))

    Args:
        url: The database (``postgresql://...`` or ``sqlite:///FILE``); the table
            ``toolnexus_token_rate`` is created there when missing.
        name: The ledger: limits that share a name share their entries.
    """

    def __init__(self, url: str, *, name: str = "default") -> None:
        self.url = url
        self.name = name
        self._engine: sa.Engine | None = None

    def __repr__(self) -> str:
        return f"DatabaseLedger({sa.make_url(self.url).render_as_string()!r}, name={self.name!r})"

    async def admit(self, tokens: int, rate: TokenRate) -> Admission:
        """See `agent.capabilities.RateLedger.admit`.

        A database that cannot be reached lets nothing through: the call looks again a
        moment later, as when there is no room (a warning is logged).
        """
        # Here, not at the top: agent.capabilities loads the Gemini SDK, and a batch's
        # submitter imports this package without making any call.
        from agent.capabilities import Admission

        try:
            return await asyncio.to_thread(self._admit, tokens, rate)
        except _LOST as exc:
            logger.warning("token rate %r: the database is out of reach (%s)", self.name, exc)
            return Admission(None)

    async def settle(self, entry: object, tokens: int, rate: TokenRate) -> None:
        """See `agent.capabilities.RateLedger.settle`.

        A database that cannot be reached leaves the entry as it was: it counts its
        estimate until `IN_FLIGHT` seconds beyond the window (a warning is logged).
        """
        try:
            await asyncio.to_thread(self._settle, entry, tokens, rate)
        except _LOST as exc:
            logger.warning("token rate %r: the database is out of reach (%s)", self.name, exc)

    def close(self) -> None:
        """Close the ledger's connections."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    # -- in a worker thread -------------------------------------------------------------------

    def _admit(self, tokens: int, rate: TokenRate) -> Admission:
        from agent.capabilities import Admission

        with self._locked() as (connection, now):
            here = _entries.c.ledger == self.name
            connection.execute(sa.delete(_entries).where(here, _entries.c.until <= now))
            used, calls, first = connection.execute(
                sa.select(
                    sa.func.coalesce(sa.func.sum(_entries.c.tokens), 0),
                    sa.func.count(),
                    sa.func.min(_entries.c.until),
                ).where(here)
            ).one()
            if not rate.fits(int(used), int(calls), tokens):
                # An entry in flight counts until settled: the wait is a guess then.
                wait = first - now if first is not None and first - now < rate.per else None
                return Admission(None, wait)
            until = now + rate.per + IN_FLIGHT
            values = {"ledger": self.name, "tokens": tokens, "until": until}
            entry = connection.execute(
                sa.insert(_entries).values(values).returning(_entries.c.id)
            ).scalar_one()
            return Admission(int(entry))

    def _settle(self, entry: object, tokens: int, rate: TokenRate) -> None:
        with self._locked() as (connection, now):
            connection.execute(
                sa.update(_entries)
                .where(_entries.c.id == entry)
                .values(tokens=tokens, until=now + rate.per)
            )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[tuple[sa.Connection, float]]:
        """Yield a connection in a transaction that holds this ledger's lock, and its clock."""
        engine = self._engine or self._open()
        with engine.begin() as connection:
            if engine.dialect.name == "postgresql":
                connection.execute(
                    sa.text("SELECT pg_advisory_xact_lock(:space, hashtext(:name))"),
                    {"space": _SPACE, "name": self.name},
                )
                now = connection.execute(
                    sa.text("SELECT extract(epoch from clock_timestamp())")
                ).scalar_one()
                yield connection, float(now)
            else:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
                yield connection, time.time()

    def _open(self) -> sa.Engine:
        url = sa.make_url(self.url)
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        if url.drivername.startswith("sqlite"):
            # The lock is taken by hand (BEGIN IMMEDIATE); a commit need not wait for the disk.
            options = engine_options(self.url) or {"connect_args": {"timeout": 30}}
            engine = sa.create_engine(url, isolation_level="AUTOCOMMIT", **options)
        else:
            engine = sa.create_engine(url, pool_pre_ping=True)
        try:
            _metadata.create_all(engine, checkfirst=True)
        except sa.exc.DBAPIError:
            # Another process created it at the same moment: it is there now.
            _metadata.create_all(engine, checkfirst=True)
        self._engine = engine
        return engine
