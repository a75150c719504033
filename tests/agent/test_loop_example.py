"""The quick-start example runs offline (no key) end to end, and fails in one line offline."""

from __future__ import annotations

import os
import runpy
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent import Agent, ClientSettings, RetryPolicy, RunLimits

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_runs_offline():
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_quickstart.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "-> skill({'name': 'hello-world'})" in done.stdout
    assert "<- forecast: Sunny in Paris, 21 C" in done.stdout
    assert "[completed] 3 turns" in done.stdout


@pytest.fixture
def unreachable() -> Iterator[str]:
    """An endpoint on 127.0.0.1 that refuses connections."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        yield f"http://127.0.0.1:{closed.getsockname()[1]}"


async def no_wait(seconds: float) -> None:
    return None


async def test_quickstart_without_network_says_so_in_one_line(unreachable, capsys):
    example = runpy.run_path(str(ROOT / "examples" / "agent_quickstart.py"))
    agent = Agent(
        toolkit=example["build_toolkit"](),
        client=ClientSettings(api_key="test-key-not-a-secret", base_url=unreachable),
        limits=RunLimits(retry=RetryPolicy(sleep=no_wait)),  # retries do not wait
    )
    code = await example["main"](agent)
    out, err = capsys.readouterr()
    assert code == 1
    assert out.count("(model call failed: NETWORK_ERROR; retrying in") == 4
    (line,) = err.splitlines()
    assert line.startswith("error: Gemini call failed after 5 attempts: NETWORK_ERROR: ")
    assert "could not reach 127.0.0.1" in line
    assert "check the network connection" in line


def run_example(name: str, *, timeout: float = 60) -> str:
    """Run ``examples/NAME`` from the repository root without an API key (so against the
    fake); return its stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_API_KEY", "GOOGLE_API_KEY")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
