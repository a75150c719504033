"""Shared pieces of the DBOS tests: skip without the extra, wait for observable state."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.agent._otel_support import spans, telemetry  # noqa: F401 (the span fixtures of the durable tests)
from tests.dbos.postgres import Unavailable, temporary_server

REPO = Path(__file__).resolve().parents[2]


def wait_until(check: Callable[[], object], what: str, timeout: float = 60) -> None:
    """Poll ``check`` until it is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def env(**extra: str) -> dict[str, str]:
    """A subprocess environment without real keys, with the repository importable."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if "API_KEY" not in k and not k.startswith(("GOOGLE_", "GEMINI_", "DBOS"))
    }
    clean["PYTHONPATH"] = str(REPO)
    clean["PYTHONUNBUFFERED"] = "1"
    clean.update(extra)
    return clean


def kill(process: subprocess.Popen[str]) -> None:
    """SIGKILL ``process`` (no cleanup runs in it) and reap it."""
    process.kill()
    process.wait()


PYTHON = sys.executable


# --------------------------------------------------------------------------- Postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """Start a throw-away PostgreSQL server on 127.0.0.1; yield its URL without a database.

    Skips (saying why) when this machine has no PostgreSQL server binaries; ``.ci/run``
    installs the distribution's ``postgresql`` package when they are missing.
    """
    try:
        with temporary_server() as url:
            yield url
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def postgres(postgres_server: str) -> str:
    """A URL of a new, empty database on the test PostgreSQL server (DBOS creates it)."""
    return f"{postgres_server}/t_{uuid.uuid4().hex[:12]}"
