"""Talking to a durable run from any process: answer its question, follow its events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient

from agent.dbos._durable import EVENTS_STREAM
from agent.dbos._steps import ANSWER_TOPIC, PENDING_EVENT

if TYPE_CHECKING:
    from agent.events import Event
    from toolnexus import Request

__all__ = ["follow", "pending", "send"]


@contextlib.asynccontextmanager
async def _client(db: str | None) -> AsyncIterator[DBOSClient | None]:
    """Yield a `DBOSClient` on ``db``, or ``None`` to use this process's launched DBOS."""
    if db is None:
        yield None
        return
    client = DBOSClient(system_database_url=db)
    try:
        yield client
    finally:
        client.destroy()


async def send(run_id: str, answer: Any, *, db: str | None = None) -> None:
    """Answer the question a durable run waits on (now, or when it gets to it).

    Works from any process that reaches the database, before or after a restart: the
    answer is stored with the run (which must have started) and delivered when it waits.

    Example::

        await send("ticket-42", "yes")                      # the answer's data
        await send("ticket-42", {"ok": False})              # decline the question

    Args:
        run_id: The run's workflow id.
        answer: The answer's data, or ``{"ok": bool, "data": ...}`` (``ok`` false
            declines the question).
        db: The DBOS system database URL, when DBOS is not launched in this process.
    """
    async with _client(db) as client:
        if client is None:
            await DBOS.send_async(run_id, answer, ANSWER_TOPIC)
        else:
            await client.send_async(run_id, answer, ANSWER_TOPIC)


async def pending(run_id: str, *, db: str | None = None, wait: float = 0.0) -> Request | None:
    """Return the request a durable run waits on, or ``None`` when it waits for nothing.

    Args:
        run_id: The run's workflow id.
        db: The DBOS system database URL, when DBOS is not launched in this process.
        wait: Seconds to wait for the run to ask, when it has not asked yet.
    """
    async with _client(db) as client:
        if client is None:
            request = await DBOS.get_event_async(run_id, PENDING_EVENT, wait)
        else:
            request = await client.get_event_async(run_id, PENDING_EVENT, wait)
    return request  # type: ignore[no-any-return]


async def follow(run_id: str, *, db: str | None = None) -> AsyncGenerator[Event, None]:
    """Yield a durable run's events from the start, live, until it ends.

    Works from any process that reaches the database; the last event of a finished run is
    its `DoneEvent`. A run recovered after a crash does not write again the events of the
    steps it replays, so each event comes once.

    Args:
        run_id: The run's workflow id.
        db: The DBOS system database URL, when DBOS is not launched in this process.

    Yields:
        The run's `Event`s, in order.
    """
    async with _client(db) as client:
        if client is None:
            events = DBOS.read_stream_async(run_id, EVENTS_STREAM, polling_interval_sec=0.1)
        else:
            events = client.read_stream_async(run_id, EVENTS_STREAM, polling_interval_sec=0.1)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event
