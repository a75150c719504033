"""Helpers for the command-line tests: run ``python -m agent`` in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from agent.testing._server import FakeServer

REPO = Path(__file__).resolve().parents[2]

TOOLS_MODULE = '''\
from toolnexus import define_tool


def get_weather(city: str) -> str:
    """Today's forecast for a city."""
    return f"sunny in {city}"


def not_a_tool_value():
    return 1


TOOLS = [get_weather]
ONE = define_tool(get_weather, name="weather")
NUMBER = 42
'''


def cli_env(server: FakeServer | None = None, **extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: no real keys; the fake's URL and a dummy key."""
    env = {
        k: v
        for k, v in os.environ.items()
        if "API_KEY" not in k and not k.startswith(("GOOGLE_", "GEMINI_"))
    }
    env["PYTHONPATH"] = str(REPO)
    env["PYTHONUNBUFFERED"] = "1"
    if server is not None:
        env["GOOGLE_GEMINI_BASE_URL"] = server.base_url
        env["GEMINI_API_KEY"] = "test-key-not-a-secret"
    env.update(extra)
    return env


Cli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A working directory holding ``clitools.py`` (importable with ``--tools``)."""
    (tmp_path / "clitools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    return tmp_path


@pytest.fixture
def cli(workdir: Path) -> Cli:
    """Run ``python -m agent ARGS`` in ``workdir``; ``server=`` points it at a fake."""

    def run(
        *args: str,
        server: FakeServer | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str = "",
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "agent", *args],
            cwd=workdir,
            env={**cli_env(server), **(env or {})},
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return run


InProcess = Callable[..., tuple[int, str, str]]


@pytest.fixture
def inproc(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> InProcess:
    """Call ``agent.cli.main(ARGS)`` in this process (for fast error-path tests).

    Returns (exit code, stdout, stderr). The working directory, ``sys.path`` and the
    imported ``clitools`` module are restored afterwards.
    """
    from agent.cli import main

    monkeypatch.chdir(workdir)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "clitools", raising=False)

    def run(*args: str, server: FakeServer | None = None) -> tuple[int, str, str]:
        if server is not None:
            monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
            monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        sys.modules.pop("clitools", None)
        return code, captured.out, captured.err

    return run
