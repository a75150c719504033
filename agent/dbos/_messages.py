"""Talking to a durable run from any process: answer its request, follow its events."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient

from agent.dbos._events import EVENTS_STREAM, read_events
from agent.dbos._steps import ANSWER_KEYS, ANSWER_TOPIC, PENDING_EVENT
from agent.errors import ConfigurationError
from agent.events import DoneEvent

if TYPE_CHECKING:
    from agent.events import Event
    from toolnexus import Answer, Request

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


async def send(
    run_id: str, answer: Any, *, request_id: str | None = None, db: str | None = None
) -> None:
    """Answer the request a durable run waits on, naming it by its id.

    Works from any process that reaches the database, before or after a restart. The
    answer is bound to one request: it is sent only when the run waits on that request
    right now (`pending` tells which), and the run takes it for that request only. So an
    answer sent before the run asked, to another run, after the request was answered or
    timed out, or a second time, changes nothing: `send` refuses it, or (two answers to the
    same request racing before the run takes either) the first one is kept and the other
    dropped.

    Example::

        request = await pending("ticket-42", wait=30)       # what the run waits on
        await send("ticket-42", "yes", request_id=request["id"])
        await send("ticket-42", {"id": request["id"], "ok": False})   # decline it

    Args:
        run_id: The run's workflow id.
        answer: The answer's data (``"yes"``, ``{"approved": True}``, a question's
            answers), or an `Answer`: ``{"id": ..., "ok": bool, "data": ...}`` (``ok``
            false declines; ``id`` may come from ``request_id`` instead).
        request_id: The id of the request this answers (`Request` ``["id"]``); needed
            unless ``answer`` is an `Answer` holding it.
        db: The DBOS system database URL, when DBOS is not launched in this process.

    Raises:
        ConfigurationError: The answer names no request, or not the one the run waits on
            now (it waits on another, or on none: it has not asked, its request was
            answered, it ended, there is no such run), or an `Answer` of the wrong shape.
            Nothing was sent.
    """
    message = _bound(answer, request_id)
    async with _client(db) as client:
        if client is None:
            waiting = await DBOS.get_event_async(run_id, PENDING_EVENT, 0)
        else:
            waiting = await client.get_event_async(run_id, PENDING_EVENT, 0)
        _check_waits(run_id, waiting, message["id"])
        # One answer per request, whatever races: the database keeps the first message
        # with this key and drops the others.
        key = f"toolnexus.answer:{message['id']}"
        if client is None:
            await DBOS.send_async(run_id, message, ANSWER_TOPIC, idempotency_key=key)
        else:
            await client.send_async(run_id, message, ANSWER_TOPIC, idempotency_key=key)


def _bound(answer: Any, request_id: str | None) -> Answer:
    """Return ``answer`` as the `Answer` `send` delivers, bound to its request's id."""
    form = isinstance(answer, Mapping) and "ok" in answer
    named = answer.get("id", request_id) if form else request_id
    if form:
        _check_shape(answer)
        if request_id is not None and named != request_id:
            raise ConfigurationError(
                f"send: the answer's id {named!r} is not request_id={request_id!r}"
            )
    if not isinstance(named, str) or not named:
        raise ConfigurationError(
            "send: name the request this answers: request_id=... (the id of the request "
            "agent.dbos.pending(run_id) returns), or an answer {'id': ..., 'ok': ...}"
        )
    if not form:
        return {"id": named, "ok": True, "data": answer}
    message: Answer = {"id": named, "ok": answer["ok"]}
    if "data" in answer:
        message["data"] = answer["data"]
    return message


def _check_shape(answer: Mapping[str, Any]) -> None:
    unknown = sorted(map(str, set(answer) - ANSWER_KEYS))
    if unknown:
        raise ConfigurationError(
            f"send: an answer holds id, ok and data only, not {', '.join(unknown)}"
        )
    if not isinstance(answer["ok"], bool):
        raise ConfigurationError(
            f"send: the answer's ok must be true or false, got {answer['ok']!r}"
        )


def _check_waits(run_id: str, waiting: Any, request_id: str) -> None:
    """Refuse an answer to a request the run does not wait on right now."""
    if not isinstance(waiting, Mapping):
        raise ConfigurationError(
            f"send: run {run_id!r} waits on no request (it has not asked, its request was "
            "answered or timed out, it ended, or there is no such run): the answer to "
            f"{request_id!r} was not sent"
        )
    if waiting.get("id") != request_id:
        raise ConfigurationError(
            f"send: run {run_id!r} waits on request {waiting.get('id')!r}, not "
            f"{request_id!r}: the answer was not sent"
        )


async def pending(run_id: str, *, db: str | None = None, wait: float = 0.0) -> Request | None:
    """Return the request a durable run waits on, or ``None`` when it waits for nothing.

    Its ``id`` is what `send` needs to answer it (``request_id=``).

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
    its `DoneEvent` (a run that failed ends without one, when its workflow ends). The run
    writes its events a turn at a time, so they come in bursts. Each event comes once,
    across crashes: a recovered run does not write again the events of the steps it
    replays, and what a step cut off by a crash writes again is skipped.

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
        async with contextlib.aclosing(events), contextlib.aclosing(read_events(events)) as read:
            async for event in read:
                yield event
                if isinstance(event, DoneEvent):
                    return
