"""The retry policy around the model call (and nothing else), on tenacity.

Retried: HTTP 429, 500, 502, 503 and 504, network errors and timeouts. Not retried: other
4xx (400, 401, 403, 404, ...), a 429 whose quota is per day, and cancellation. The wait
before a retry is the server's own ``RetryInfo.retryDelay`` (from the error body) or
``Retry-After`` header when it sent one, else exponential backoff with random jitter.
Attempts and the total time spent waiting are both bounded.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from tenacity import AsyncRetrying, AttemptManager, RetryCallState, retry_if_exception

if TYPE_CHECKING:
    from agent.events import RetryEvent

__all__ = ["CallFailed", "ErrorInfo", "RetryPolicy", "label", "reporter", "retrying"]

logger = logging.getLogger("agent")


class ErrorInfo(NamedTuple):
    """A failed model call, described without the SDK's or httpx's exception types."""

    code: int | None
    """The HTTP status code, when the server answered."""
    status: str | None
    """Gemini's status word (``"UNAVAILABLE"``), or ``"TIMEOUT"`` / ``"NETWORK_ERROR"``."""
    message: str
    """What went wrong, with the API key scrubbed out."""
    retryable: bool
    """Whether the retry policy may try again."""
    delay: float | None = None
    """Seconds the server asked us to wait (``RetryInfo.retryDelay`` or ``Retry-After``)."""
    model: str | None = None
    """The model the failed request was sent to (set by the model seam)."""


class CallFailed(Exception):
    """Raised by the model seam when a call fails; the retry policy reads its `ErrorInfo`.

    It is never raised to the user: the loop turns the last one into a `ModelError`.
    """

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How failed model calls are retried.

    Example::

        Agent(..., limits=RunLimits(retry=RetryPolicy(attempts=3, max_wait=20.0)))
        Agent(..., limits=RunLimits(retry=RetryPolicy(attempts=1)))   # never retry
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
    policy: RetryPolicy, on_retry: Callable[[int, float, ErrorInfo], None]
) -> AsyncIterator[AbstractContextManager[object]]:
    """Return the attempts of one model call under ``policy``.

    Use it as ``async for attempt in retrying(...): with attempt: ...``; every attempt, the
    first included, runs inside it. A `CallFailed` whose info is retryable is retried
    (waiting the server's delay when it gave one); anything else, cancellation included,
    and the last failure once the bounds are reached, is raised unchanged.

    Most calls succeed at once, so the first attempt is a plain ``with`` block: tenacity
    takes over only when it failed and may be retried.

    Args:
        policy: The bounds and the backoff.
        on_retry: Told ``(failed attempt, seconds to wait, failure)`` before each wait.

    Returns:
        The attempts, as an async iterator of context managers.
    """
    return _Attempts(policy, on_retry)


class _FirstAttempt:
    """The first attempt: keeps a retryable failure for the retry policy; the rest passes."""

    def __init__(self) -> None:
        self.failure: CallFailed | None = None

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, CallFailed) and exc.info.retryable:
            self.failure = exc
            return True
        return False


class _Attempts:
    """The attempts of one call: the first on its own, the retries from tenacity."""

    def __init__(
        self, policy: RetryPolicy, on_retry: Callable[[int, float, ErrorInfo], None]
    ) -> None:
        self.policy = policy
        self.on_retry = on_retry
        self.first: _FirstAttempt | None = None
        self.retries: AsyncIterator[AttemptManager] | None = None

    def __aiter__(self) -> _Attempts:
        return self

    async def __anext__(self) -> AbstractContextManager[object]:
        if self.first is None:
            self.first = _FirstAttempt()
            return self.first
        if self.retries is None:
            failure = self.first.failure
            if failure is None:
                raise StopAsyncIteration
            self.retries = aiter(_controller(self.policy, self.on_retry))
            # Tenacity starts from the first attempt's failure, as if it had made that attempt.
            with await anext(self.retries):
                raise failure
        return await anext(self.retries)


def _controller(
    policy: RetryPolicy, on_retry: Callable[[int, float, ErrorInfo], None]
) -> AsyncRetrying:
    """Return the tenacity controller of a call's attempts under ``policy``."""

    def retryable(exc: BaseException) -> bool:
        return isinstance(exc, CallFailed) and exc.info.retryable

    def failure(state: RetryCallState) -> ErrorInfo | None:
        exc = state.outcome.exception() if state.outcome is not None else None
        return exc.info if isinstance(exc, CallFailed) else None

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


def label(info: ErrorInfo) -> str:
    """Return ``"503 UNAVAILABLE"``: the code and status of a failure that are known."""
    return " ".join(str(part) for part in (info.code, info.status) if part is not None)


def reporter(
    attempts: int, turn: int, queue: list[RetryEvent]
) -> Callable[[int, float, ErrorInfo], None]:
    """Return the retry policy's callback: log each retry and queue its `RetryEvent`.

    Logged at INFO, not WARNING: a library must not print by itself (Python's last-resort
    handler shows warnings on stderr when the app set up no logging). Callers see retries
    as `RetryEvent`s and in ``result.retries``.
    """
    from agent.events import RetryEvent

    def on_retry(attempt: int, delay: float, info: ErrorInfo) -> None:
        logger.info(
            "Gemini call failed (%s); retrying in %.1f s (attempt %d of %d)",
            label(info),
            delay,
            attempt + 1,
            attempts,
        )
        queue.append(RetryEvent(attempt, delay, info.code, info.status, turn))

    return on_retry
