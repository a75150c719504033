"""The retry policy around the model call (and nothing else), on tenacity.

Retried: HTTP 429, 500, 502, 503 and 504, network errors and timeouts. Not retried: other
4xx (400, 401, 403, 404, ...), a 429 whose quota is per day, and cancellation. The wait
before a retry is the server's own ``RetryInfo.retryDelay`` (from the error body) or
``Retry-After`` header when it sent one, else exponential backoff with random jitter.
Attempts and the total time spent waiting are both bounded.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception

if TYPE_CHECKING:
    from agent._gemini import ErrorInfo

__all__ = ["RetryPolicy", "retrying"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How failed model calls are retried.

    Example::

        Agent(..., retry=RetryPolicy(attempts=3, max_wait=20.0))
        Agent(..., retry=RetryPolicy(attempts=1))          # never retry
    """

    attempts: int = 5
    """Calls made at most, the first one included (1 = never retry)."""
    max_wait: float = 120.0
    """Seconds spent waiting between attempts, at most, over one model call. A retry whose
    wait would pass this bound is not made: the failure is raised instead."""
    initial_backoff: float = 1.0
    """Backoff before the first retry when the server gave no delay; doubles per attempt."""
    max_backoff: float = 30.0
    """Upper bound of one backoff (not of a server-given delay)."""
    jitter: float = 1.0
    """Up to this many random seconds added to each backoff (not to server-given delays)."""
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep)
    """How to wait; replace it in tests to observe the waits without spending them."""
    random: Callable[[], float] = field(default=random.random)
    """Source of jitter in [0, 1)."""

    def backoff(self, failed_attempt: int) -> float:
        """Seconds to wait after ``failed_attempt`` (1-based) when the server gave no delay."""
        base = min(self.max_backoff, self.initial_backoff * 2.0 ** (failed_attempt - 1))
        return base + self.jitter * self.random()


def retrying(
    policy: RetryPolicy,
    translate: Callable[[BaseException], ErrorInfo | None],
    on_retry: Callable[[int, float, ErrorInfo], None],
) -> AsyncRetrying:
    """Return the tenacity controller for one model call under ``policy``.

    ``translate`` says whether a failure is retryable (and any server-given delay);
    ``on_retry(attempt, delay, info)`` is told before each wait. Use it as
    ``async for attempt in retrying(...): with attempt: ...``; the last failure is raised
    unchanged. Cancellation is never retried: ``translate`` does not know it.
    """

    def retryable(exc: BaseException) -> bool:
        info = translate(exc)
        return info is not None and info.retryable

    def failure(state: RetryCallState) -> ErrorInfo | None:
        exc = state.outcome.exception() if state.outcome is not None else None
        return translate(exc) if exc is not None else None

    def wait(state: RetryCallState) -> float:
        info = failure(state)
        if info is not None and info.delay is not None:
            return info.delay
        return policy.backoff(state.attempt_number)

    def stop(state: RetryCallState) -> bool:
        if state.attempt_number >= policy.attempts:
            return True
        return state.idle_for + state.upcoming_sleep > policy.max_wait

    def before_sleep(state: RetryCallState) -> None:
        info = failure(state)
        if info is not None:
            on_retry(state.attempt_number, state.upcoming_sleep, info)

    return AsyncRetrying(
        sleep=policy.sleep,
        stop=stop,
        wait=wait,
        retry=retry_if_exception(retryable),
        before_sleep=before_sleep,
        reraise=True,
    )
