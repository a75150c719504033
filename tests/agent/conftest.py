"""Fixtures shared by the agent-loop tests: one HTTP client and one respx router per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import respx


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """The client the real google-genai SDK sends through; closed after the test."""
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def mock() -> Iterator[respx.MockRouter]:
    """A respx router that answers every request of the test (unrouted ones fail)."""
    with respx.mock(assert_all_called=False) as router:
        yield router
