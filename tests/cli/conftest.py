"""Helpers for the command-line tests.

Most tests call ``agent.cli.main`` in this process (the `cli` fixture); a few smoke tests
run ``python -m agent`` in a subprocess (`cli_process`) for what only a real process
shows: exit codes, Ctrl-C, a terminal.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main
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


class Hold:
    """Replies the fake holds back until `release` (instead of a long `delay`).

    A test that interrupts a request releases it when done, so the server's handler
    thread ends within the test (see ``_handlers_end_with_their_test``).
    """

    def __init__(self) -> None:
        self._gate = threading.Event()

    def reply(self, text: str) -> Callable[[dict[str, Any]], str]:
        """A scripted reply answering ``text`` once released."""

        def model(body: dict[str, Any]) -> str:
            self.wait()
            return text

        return model

    def wait(self) -> None:
        """Block the calling handler until `release`."""
        assert self._gate.wait(60), "a held reply was never released"

    def release(self) -> None:
        """Let every held reply go."""
        self._gate.set()


def wait_for_request_handlers() -> None:
    """Wait until every fake-server request handler thread has ended."""
    for thread in threading.enumerate():
        if thread.name.endswith("(process_request_thread)"):
            thread.join(30)
            assert not thread.is_alive(), f"a fake server's request handler is stuck: {thread}"


@pytest.fixture(autouse=True)
def _handlers_end_with_their_test() -> Iterator[None]:
    """Start and end each test with no fake-server request handler running.

    A handler that outlives its client (an interrupted run) fails writing the reply, and
    the HTTP server prints that traceback on whatever ``sys.stderr`` is at that moment: a
    later in-process test's captured stderr, which its exact assertions would not expect.
    """
    wait_for_request_handlers()
    yield
    wait_for_request_handlers()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A working directory holding ``clitools.py`` (importable with ``--tools``)."""
    (tmp_path / "clitools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    return tmp_path


Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Call ``agent.cli.main(ARGS)`` in this process, in ``workdir``.

    ``server=`` points it at a fake Gemini, ``stdin=`` is what it reads. Returns (exit
    code, stdout, stderr). The working directory, ``sys.path`` and the imported
    ``clitools`` module are restored afterwards.
    """
    monkeypatch.chdir(workdir)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "clitools", raising=False)

    def run(*args: str, server: FakeServer | None = None, stdin: str = "") -> tuple[int, str, str]:
        if server is not None:
            monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
            monkeypatch.setenv("GEMINI_API_KEY", "test-key-not-a-secret")
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        try:
            code = main(list(args))
        finally:
            sys.modules.pop("clitools", None)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


class Terminal:
    """Enough of a terminal to see what `redraw` frames leave on the screen."""

    def __init__(self) -> None:
        self.rows: list[str] = [""]
        self.row = self.col = 0

    def write(self, text: str) -> None:
        index = 0
        while index < len(text):
            char = text[index]
            if text.startswith("\x1b[2K", index):
                self.rows[self.row] = ""
                index += 4
                continue
            if char == "\x1b":  # cursor up: ESC [ n A
                end = text.index("A", index)
                self.row -= int(text[index + 2 : end])
                index = end + 1
                continue
            if char == "\r":
                self.col = 0
            elif char == "\n":
                self.row += 1
                self.col = 0
                if self.row == len(self.rows):
                    self.rows.append("")
            else:
                line = self.rows[self.row].ljust(self.col)
                self.rows[self.row] = line[: self.col] + char + line[self.col + 1 :]
                self.col += 1
            index += 1


CliProcess = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def cli_process(workdir: Path) -> CliProcess:
    """Run ``python -m agent ARGS`` in a subprocess in ``workdir``; ``server=`` as for `cli`."""

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
