"""The retry policy in isolation: what is retried, the waits, the bounds."""

from __future__ import annotations

import asyncio

import pytest

from agent._retry import CallFailed, ErrorInfo, RetryPolicy, retrying

BUSY = ErrorInfo(503, "UNAVAILABLE", "busy", retryable=True)
FATAL = ErrorInfo(400, "INVALID_ARGUMENT", "bad", retryable=False)


async def drive(policy: RetryPolicy, failures: list[BaseException]) -> tuple[int, list]:
    seen: list[tuple[int, float, int | None]] = []
    calls = 0

    def on_retry(attempt: int, delay: float, info: ErrorInfo) -> None:
        seen.append((attempt, delay, info.code))

    async for attempt in retrying(policy, on_retry):
        with attempt:
            calls += 1
            if failures:
                raise failures.pop(0)
    return calls, seen


def policy(**kw: object) -> RetryPolicy:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    return RetryPolicy(sleep=sleep, jitter=0.0, **kw)  # type: ignore[arg-type]


async def test_retries_until_success_with_exponential_backoff():
    calls, seen = await drive(policy(), [CallFailed(BUSY), CallFailed(BUSY), CallFailed(BUSY)])
    assert calls == 4
    assert seen == [(1, 1.0, 503), (2, 2.0, 503), (3, 4.0, 503)]


async def test_server_delay_wins_over_backoff():
    slow = ErrorInfo(429, "RESOURCE_EXHAUSTED", "later", retryable=True, delay=2.5)
    _, seen = await drive(policy(), [CallFailed(slow)])
    assert seen == [(1, 2.5, 429)]


async def test_attempts_bound():
    with pytest.raises(CallFailed):
        await drive(policy(attempts=3), [CallFailed(BUSY)] * 5)


async def test_total_wait_bound():
    # 1 + 2 + 4 = 7 > 6: the third retry is not made.
    failures = [CallFailed(BUSY)] * 5
    with pytest.raises(CallFailed):
        await drive(policy(max_wait=6.0), failures)
    assert len(failures) == 2


async def test_not_retryable_and_unknown_errors_raise_at_once():
    with pytest.raises(CallFailed):
        await drive(policy(), [CallFailed(FATAL), CallFailed(BUSY)])
    with pytest.raises(KeyError):
        await drive(policy(), [KeyError("x")])


async def test_cancellation_is_never_retried():
    failures: list[BaseException] = [asyncio.CancelledError()]
    with pytest.raises(asyncio.CancelledError):
        await drive(policy(), failures)


def test_backoff_jitter_is_bounded():
    p = RetryPolicy(initial_backoff=0.5, max_backoff=4.0, jitter=1.0, random=lambda: 0.999)
    assert 0.5 <= p.backoff(1) < 1.5
    assert 4.0 <= p.backoff(10) < 5.0
