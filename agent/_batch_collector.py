"""The Gemini Batch engine's collector: which tasks' model calls go into which job, and when.

Every task's model call comes to the `Collector`, which holds it for the next job. It sends
that job when every live task is waiting for a model response (or has finished), or when a
request has waited `BatchOptions.hold` seconds; then `Jobs` follows the job, and each call
gets its response by its key, ``TASK:N`` (the task's N-th model call). The tasks run their
tools and come back with their next requests: the next job. ``max_enqueued_tokens`` keeps the
estimated tokens of a model's jobs in flight under that bound: what does not fit waits for a
later job. A call that an earlier engine had sent (the state file says so) joins that job
instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agent._batch_jobs import Answer, BatchOptions, Flight, JobNote, Jobs, Waiter
from agent._batch_state import BatchState, StoredJob
from agent._batch_wire import Result, entry
from agent._retry import CallFailed, ErrorInfo

if TYPE_CHECKING:
    from agent._model import GeminiModel
    from agent.hooks import ModelRequest

__all__ = ["Collector"]

logger = logging.getLogger("agent")


class Collector:
    """Gathers the tasks' model calls into jobs, follows the jobs, hands back the results."""

    def __init__(
        self, options: BatchOptions, state: BatchState, note: Callable[[JobNote], None]
    ) -> None:
        self.options = options
        self.state = state
        self.jobs = Jobs(options, state, note)
        """Takes each job sent through its life."""
        self.live = 0
        """Tasks that have started and not finished."""
        self.pending: list[Waiter] = []
        """Calls waiting for the next job."""
        self.waiting: set[Waiter] = set()
        """Calls without their answer: in the next job or in one in flight."""
        self.flights: dict[str, Flight] = {}
        """Jobs in flight, by display name."""
        self.tokens: dict[str, int] = {}
        """Estimated tokens in flight, per model."""
        self._timer: asyncio.TimerHandle | None = None
        self._overdue = False

    # -- a task's call ------------------------------------------------------------------

    async def call(
        self, model: GeminiModel, key: str, request: ModelRequest, fresh: bool
    ) -> Result:
        """Send ``request`` in a job (or take its recorded result); return the result.

        Args:
            model: The run's model (its client and name).
            key: The call's key, ``TASK:N``.
            request: The request.
            fresh: Ignore what the state file recorded for this key (the task diverged).
        """
        recorded = None if fresh else self.state.results.get(key)
        if recorded is not None and recorded.error is None:
            return recorded  # its job ended before a restart, before the task read it
        client = model.clients.genai
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        waiter = Waiter(key, client, model.name, entry(client, key, request), future)
        stored = None if fresh else self.state.unfinished_job_of(key)
        self.waiting.add(waiter)
        if stored is not None:
            self._follow_stored(stored, waiter)
        else:
            self._queue(waiter)
        try:
            return await future
        finally:  # cancelled while waiting: out of the next job
            self.waiting.discard(waiter)
            if waiter in self.pending:
                self.pending.remove(waiter)
                self.flush()

    def started(self, count: int) -> None:
        """Count ``count`` tasks as live (before any of them runs)."""
        self.live += count

    def finished(self) -> None:
        """Count a task out: the others may now be all that a job waits for."""
        self.live -= 1
        self.flush()

    def _queue(self, waiter: Waiter) -> None:
        self.pending.append(waiter)
        if self._timer is None and self.options.hold is not None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.options.hold, self._hold_passed)
        self.flush()

    def _hold_passed(self) -> None:
        self._timer = None
        self._overdue = True
        self.flush()

    # -- sending jobs -------------------------------------------------------------------

    def flush(self) -> None:
        """Send the pending calls if every live task waits (or a call waited too long)."""
        if self.pending and (len(self.waiting) >= self.live or self._overdue):
            groups: dict[tuple[int, str], list[Waiter]] = {}
            for waiter in self.pending:
                groups.setdefault(waiter.group, []).append(waiter)
            for waiters in groups.values():
                chosen = self._fitting(waiters)
                if chosen:
                    self._send(chosen)
        if not self.pending:
            self._overdue = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def _fitting(self, waiters: list[Waiter]) -> list[Waiter]:
        """Return the calls that fit under the token bound now (in arrival order)."""
        bound = self.options.max_enqueued_tokens
        if bound is None:
            return waiters
        flying = self.tokens.get(waiters[0].model, 0)
        chosen: list[Waiter] = []
        for waiter in waiters:
            if flying + waiter.entry.tokens > bound:
                break
            flying += waiter.entry.tokens
            chosen.append(waiter)
        if not chosen and not self.tokens.get(waiters[0].model):
            logger.warning(
                "a batch request of about %d tokens is over max_enqueued_tokens (%d); "
                "sending it in a job of its own",
                waiters[0].entry.tokens,
                bound,
            )
            chosen = waiters[:1]
        return chosen

    def _send(self, waiters: list[Waiter]) -> None:
        sent = set(waiters)
        self.pending = [waiter for waiter in self.pending if waiter not in sent]
        display = f"toolnexus-{self.state.run}-{len(self.state.jobs) + 1}"
        stored = self.state.creating(display, waiters[0].model, [w.key for w in waiters])
        flight = self.flights[display] = Flight(stored, waiters[0].client)
        for waiter in waiters:
            self._board(flight, waiter)
        flight.runner = asyncio.ensure_future(self._fly(flight, create=True))

    def _follow_stored(self, stored: StoredJob, waiter: Waiter) -> None:
        """Attach a call to a job an earlier engine created; follow it if nobody does yet."""
        flight = self.flights.get(stored.display)
        if flight is None:
            flight = self.flights[stored.display] = Flight(stored, waiter.client)
            flight.runner = asyncio.ensure_future(self._fly(flight, create=False))
        self._board(flight, waiter)

    def _board(self, flight: Flight, waiter: Waiter) -> None:
        flight.waiters.append(waiter)
        flight.tokens += waiter.entry.tokens
        model = flight.stored.model
        self.tokens[model] = self.tokens.get(model, 0) + waiter.entry.tokens

    # -- following a job ----------------------------------------------------------------

    async def _fly(self, flight: Flight, *, create: bool) -> None:
        """Follow the job to its end and hand the calls their outcomes."""
        try:
            answers = await self.jobs.follow(flight, create=create)
            if answers is None:  # an earlier engine's job that never was: a new one, then
                waiters, flight.waiters = flight.waiters, []
                for waiter in waiters:
                    self._queue(waiter)
            else:
                self._answer(answers)
        finally:
            self.tokens[flight.stored.model] -= flight.tokens
            del self.flights[flight.stored.display]
            self.flush()

    def _answer(self, answers: Sequence[Answer]) -> None:
        """Hand the calls their result or failure: they wait no longer."""
        for waiter, outcome in answers:
            self.waiting.discard(waiter)
            if waiter.future.done():
                continue
            if isinstance(outcome, ErrorInfo):
                waiter.future.set_exception(CallFailed(outcome))
            else:
                waiter.future.set_result(outcome)

    async def aclose(self) -> None:
        """Stop following the jobs (they go on at Gemini; a restarted engine picks them up)."""
        runners = [f.runner for f in self.flights.values() if f.runner is not None]
        for runner in runners:
            runner.cancel()
        if runners:
            await asyncio.wait(runners)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
