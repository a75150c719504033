"""A Gemini Batch job's life: created (or found again), polled to its end, its results read.

`Jobs.follow` takes one job of calls (a `Flight`) from creation to the outcome of each of
its calls, and writes every step to the `BatchState` file: the job before and after it is
created, its results when it ends. After a restart it follows the job an earlier engine had
created instead of creating it again, and finds a job whose creation was cut short by its
display name. Which calls go into a job, and when, is the collector's
(`agent._batch_collector`).

Failures are model-call failures, so the run's retry policy decides: a per-request error of
a succeeded job fails that request only (retried when ``generateContent`` would retry it); a
job that ends failed, expired or cancelled, or is lost, fails each of its requests with a
retryable error naming the state, so its tasks go into the next job (the `RetryEvent` records
why).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from agent._batch_state import BatchState, StoredJob
from agent._batch_wire import (
    INLINE_LIMIT,
    Entry,
    JobStatus,
    Result,
    create_job,
    find_job,
    get_job,
    job_results,
)
from agent._retry import CallFailed, ErrorInfo
from agent.errors import ConfigurationError

if TYPE_CHECKING:
    from collections.abc import Callable

    from google import genai

__all__ = ["Answer", "BatchOptions", "Flight", "JobNote", "Jobs", "Waiter"]

logger = logging.getLogger("agent")

_RESULT_READS = 5
"""Reads of a succeeded job's results before its calls fail (and go into a new job)."""


@dataclass(frozen=True, slots=True)
class BatchOptions:
    """How the engine sends and follows its jobs."""

    poll_interval: float = 30.0
    """Seconds between two reads of a job's state."""
    max_enqueued_tokens: int | None = None
    """The most estimated tokens of one model's jobs in flight (``None``: no bound)."""
    tool_concurrency: int = 8
    """Tool calls running at the same time, over all tasks."""
    hold: float | None = 300.0
    """Seconds a request waits for the other tasks before its job goes anyway (``None``:
    until every live task waits)."""
    inline_limit: int = INLINE_LIMIT
    """Bytes of requests a job carries inline; a larger job goes through an uploaded file."""

    def __post_init__(self) -> None:
        if self.poll_interval < 0:
            raise ConfigurationError("poll_interval must be 0 or more seconds")
        if self.max_enqueued_tokens is not None and self.max_enqueued_tokens < 1:
            raise ConfigurationError("max_enqueued_tokens must be at least 1")
        if self.tool_concurrency < 1:
            raise ConfigurationError("tool_concurrency must be at least 1")
        if self.hold is not None and self.hold < 0:
            raise ConfigurationError("hold must be 0 or more seconds")


@dataclass(frozen=True, slots=True)
class JobNote:
    """Something that happened to a job (the engine's progress)."""

    kind: Literal["created", "resumed", "state", "ended"]
    """``"created"``, ``"resumed"`` (a restarted engine follows a job it had created),
    ``"state"`` (a new state was read) or ``"ended"``."""
    job: str
    """The job's name."""
    state: str
    """Its state (``JOB_STATE_...``)."""
    requests: int
    """How many requests it holds (of this engine's tasks)."""
    model: str
    """The model its requests go to."""
    source: str | None = None
    """``"inline"`` or ``"file"`` (for ``created``)."""


@dataclass(eq=False)
class Waiter:
    """One model call waiting for its response."""

    key: str
    client: genai.Client
    model: str
    entry: Entry
    future: asyncio.Future[Result]

    @property
    def group(self) -> tuple[int, str]:
        """Calls of one group go in one job: same client, same model."""
        return id(self.client), self.model


@dataclass(eq=False)
class Flight:
    """A job in flight and the calls waiting on it."""

    stored: StoredJob
    client: genai.Client
    waiters: list[Waiter] = field(default_factory=list)
    tokens: int = 0
    runner: asyncio.Task[None] | None = None


Answer = tuple[Waiter, Result | ErrorInfo]
"""A waiting call and its outcome: the job's result for it, or the failure it gets."""


@dataclass(frozen=True, slots=True)
class Jobs:
    """Takes jobs through their life, recording each step in the state file."""

    options: BatchOptions
    """How often to poll, how much a job carries inline."""
    state: BatchState
    """Where each job is recorded before and after it is created, and when it ends."""
    note: Callable[[JobNote], None]
    """Told of each job's creation, resumption, new state and end."""

    async def follow(self, flight: Flight, *, create: bool) -> list[Answer] | None:
        """Create (or find) the job and follow it to its end; return its calls' outcomes.

        Args:
            flight: The job and its calls (calls may board while it is followed).
            create: Create the job (else find the one an earlier engine created).

        Returns:
            Each call of the flight with its result or failure; ``None`` when an earlier
            engine's job turns out never to have been created (its calls need a new job).
        """
        try:
            status = await (self._create(flight) if create else self._resume(flight))
            if status is None:
                return None
            return await self._settle(flight, await self._poll(flight, status))
        except CallFailed as failed:
            return [(waiter, failed.info) for waiter in flight.waiters]

    async def _create(self, flight: Flight) -> JobStatus:
        stored = flight.stored
        entries = [w.entry for w in flight.waiters]
        try:
            status, source = await create_job(
                flight.client,
                stored.model,
                entries,
                stored.display,
                inline_limit=self.options.inline_limit,
                poll=self.options.poll_interval,
            )
        except CallFailed as failed:
            if failed.info.code is not None:  # the API answered: no job was made
                self.state.ended(stored, "NOT_CREATED", [])
            # Else (a network failure) the job may exist: a retry of its calls finds it
            # by its display name before it makes another.
            raise
        self.state.created(stored, status.name)
        self._note("created", flight, status, source)
        return status

    async def _resume(self, flight: Flight) -> JobStatus | None:
        """Find the job an earlier engine created; ``None`` when it never was."""
        stored = flight.stored
        if stored.name is None:
            name = await find_job(flight.client, stored.display)
            if name is None:
                self.state.ended(stored, "NOT_CREATED", [])
                return None
            self.state.created(stored, name)
        assert stored.name is not None
        status = await self._get(flight, stored.name)
        self._note("resumed", flight, status)
        return status

    async def _poll(self, flight: Flight, status: JobStatus) -> JobStatus:
        """Read the job's state every `poll_interval` seconds until it ends."""
        while not status.ended:
            await asyncio.sleep(self.options.poll_interval)
            before = status.state
            status = await self._get(flight, status.name)
            if status.state != before:
                self._note("state", flight, status)
        return status

    async def _get(self, flight: Flight, name: str) -> JobStatus:
        """Read a job: a network failure reads it again; a lost job re-queues its calls."""
        while True:
            try:
                return await get_job(flight.client, name)
            except CallFailed as failed:
                if failed.info.code == 404:
                    self.state.ended(flight.stored, "JOB_LOST", [])
                    raise CallFailed(_requeued(name, "JOB_LOST", "is gone (404)")) from None
                if not failed.info.retryable:
                    raise
                logger.info("reading batch job %s failed (%s); again", name, failed.info.message)
            await self._before_reading_again()

    async def _settle(self, flight: Flight, status: JobStatus) -> list[Answer]:
        """Record how the job ended; return each call's result (or its failure)."""
        results = await self._results(flight, status) if status.succeeded else []
        self.state.ended(flight.stored, status.state, results)
        self._note("ended", flight, status)
        if not status.succeeded:
            state = status.state.removeprefix("JOB_STATE_")
            failure = _requeued(status.name, status.state, f"ended {state}")
            return [(waiter, failure) for waiter in flight.waiters]
        found = {result.key: result for result in results}
        # A request the job did not answer fails like a lost call, and is retried.
        return [(waiter, found.get(waiter.key) or Result(waiter.key)) for waiter in flight.waiters]

    async def _results(self, flight: Flight, status: JobStatus) -> list[Result]:
        """Read a succeeded job's results; a network failure reads them again (a few times)."""
        for _ in range(_RESULT_READS - 1):
            try:
                return await job_results(flight.client, status)
            except CallFailed as failed:
                if not failed.info.retryable:
                    raise
                logger.info("reading the results of %s failed; again", status.name)
            await self._before_reading_again()
        return await job_results(flight.client, status)

    async def _before_reading_again(self) -> None:
        """Wait before a read that failed on the network goes again (a second at least)."""
        await asyncio.sleep(max(self.options.poll_interval, 1.0))

    def _note(
        self,
        kind: Literal["created", "resumed", "state", "ended"],
        flight: Flight,
        status: JobStatus,
        source: str | None = None,
    ) -> None:
        requests = len(flight.waiters) or len(flight.stored.keys)
        self.note(JobNote(kind, status.name, status.state, requests, flight.stored.model, source))


def _requeued(name: str, status: str, what: str) -> ErrorInfo:
    """Return the failure of calls their job did not answer: retried at once, next job."""
    return ErrorInfo(
        None,
        status,
        f"the batch job {name} {what}; its requests go into the next job",
        retryable=True,
        delay=0.0,
    )
