"""``toolnexus-agent web`` as a real process on 127.0.0.1, for the end-to-end tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.conftest import cli_env


@dataclass(frozen=True)
class Served:
    """A running page: the URL it printed, its base and its launch token."""

    url: str
    base: str
    token: str


@contextlib.contextmanager
def web_process(*flags: str, cwd: Path) -> Iterator[Served]:
    """Start ``toolnexus-agent web --port 0 FLAGS``; yield where it listens; stop it after."""
    process = subprocess.Popen(
        [sys.executable, "-m", "agent", "web", "--port", "0", *flags],
        cwd=cwd,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # the page says its URL once it accepts connections
            seen.append(line)
            if line.startswith("toolnexus-agent web: open "):
                url = line.split(" open ", 1)[1].strip()
                base, _, token = url.partition("/#token=")
                yield Served(url, base, token)
                break
        else:
            pytest.fail(f"the page never said its URL: {''.join(seen)}")
    finally:
        process.terminate()
        out, err = process.communicate(timeout=60)
    assert out == ""
    assert "Traceback" not in err, err
