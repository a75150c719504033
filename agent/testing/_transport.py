"""How a request reaches the fake in process: httpx transports, and the `Outcome` they send.

The fake answers each HTTP request with an `Outcome` (status, headers, body chunks, pacing).
`AsyncTransport` and `SyncTransport` hand it to httpx without a socket; the HTTP server in
``_server`` sends the same value over a real one.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass

import httpx

__all__ = ["AsyncTransport", "Handle", "Outcome", "SyncTransport"]


@dataclass
class Outcome:
    """The fake's answer to one HTTP request."""

    status: int
    """The HTTP status."""
    headers: dict[str, str]
    """Response headers."""
    chunks: list[bytes]
    """The body: one chunk, or one per SSE event."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    chunk_delay: float = 0.0
    """Seconds to wait between chunks."""


Handle = Callable[[str, str, str, Mapping[str, str], bytes], Outcome]
"""Answers one request from its method, path, query string, headers and body."""


def _read_timeout(request: httpx.Request) -> float | None:
    """Return the client's read timeout, honoured in process as a socket would honour it."""
    timeout = request.extensions.get("timeout")
    value = timeout.get("read") if isinstance(timeout, dict) else None
    return float(value) if isinstance(value, int | float) else None


class _Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """The body of an in-process response, paced by ``pause`` seconds between chunks."""

    def __init__(self, chunks: list[bytes], pause: float) -> None:
        self._chunks = chunks
        self._pause = pause

    def __iter__(self) -> Iterator[bytes]:
        for index, chunk in enumerate(self._chunks):
            if index and self._pause:
                time.sleep(self._pause)
            yield chunk

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for index, chunk in enumerate(self._chunks):
            if index and self._pause:
                await asyncio.sleep(self._pause)
            yield chunk


def _ask(handle: Handle, request: httpx.Request, raw: bytes) -> tuple[Outcome, float]:
    """Answer an in-process request; return the outcome and how long to wait before replying."""
    url = request.url
    outcome = handle(request.method, url.path, url.query.decode(), request.headers, raw)
    read_timeout = _read_timeout(request)
    return outcome, min(outcome.delay, read_timeout or outcome.delay)


def _respond(outcome: Outcome, request: httpx.Request) -> httpx.Response:
    """Build the response after the wait, or time out as a socket read would have."""
    read_timeout = _read_timeout(request)
    if read_timeout is not None and outcome.delay > read_timeout:
        raise httpx.ReadTimeout("FakeGemini: reply delayed past the read timeout", request=request)
    stream = _Chunks(outcome.chunks, outcome.chunk_delay)
    return httpx.Response(outcome.status, headers=outcome.headers, stream=stream, request=request)


class AsyncTransport(httpx.AsyncBaseTransport):
    """An async httpx transport that answers every request with ``handle``, whatever the host."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` in process, pacing the reply as the outcome says."""
        outcome, wait = _ask(self._handle, request, await request.aread())
        if wait:
            await asyncio.sleep(wait)
        return _respond(outcome, request)


class SyncTransport(httpx.BaseTransport):
    """A sync httpx transport that answers every request with ``handle``, whatever the host."""

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Answer ``request`` in process, pacing the reply as the outcome says."""
        outcome, wait = _ask(self._handle, request, request.read())
        if wait:
            time.sleep(wait)
        return _respond(outcome, request)
