"""Shared pieces of the DBOS tests: skip without the extra, wait for observable state."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

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


def _server_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``postgres``: on PATH, else the newest Debian one."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).parent
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda path: int(path.parts[-3]) if path.parts[-3].isdigit() else 0,
    )
    return debian[-1].parent if debian else None


def _as_server_user() -> tuple[list[str], int, int] | None:
    """How to run the server: as ourselves, or (as root, which it refuses) as another user."""
    if os.geteuid() != 0:
        return [], os.getuid(), os.getgid()
    # setpriv replaces itself with the server, so signals reach the server directly.
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        change = [f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]
        return [setpriv, *change, "--"], entry.pw_uid, entry.pw_gid
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_INITDB = ["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]


def _settings(port: int, home: Path) -> list[str]:
    """A server for tests: on 127.0.0.1 only, durability off, room for several pools."""
    listen = ["-p", str(port), "-h", "127.0.0.1", "-k", str(home)]
    return [*listen, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "max_connections=300"]


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """Start a throw-away PostgreSQL server on 127.0.0.1; yield its URL without a database.

    Skips (saying why) when this machine has no PostgreSQL server binaries; ``.ci/run``
    installs the distribution's ``postgresql`` package when they are missing.
    """
    binaries = _server_binaries()
    if binaries is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, postgres) on this machine: install the "
            "distribution's postgresql package (.ci/run does)"
        )
    runas = _as_server_user()
    if runas is None:
        pytest.skip("running as root without setpriv or a non-root user to run PostgreSQL as")
    prefix, uid, gid = runas
    # Not under pytest's tmp_path: its directories are private to the user running pytest.
    home = Path(tempfile.mkdtemp(prefix="toolnexus-pg-"))
    os.chown(home, uid, gid)
    data = home / "data"
    log = (home / "server.log").open("wb")
    server: subprocess.Popen[bytes] | None = None
    try:
        subprocess.run(
            [*prefix, str(binaries / "initdb"), "-D", str(data), *_INITDB],
            check=True,
            stdout=log,
            stderr=log,
        )
        port = _free_port()
        server = subprocess.Popen(
            [*prefix, str(binaries / "postgres"), "-D", str(data), *_settings(port, home)],
            stdout=log,
            stderr=log,
        )
        url = f"postgresql://postgres@127.0.0.1:{port}"
        wait_until(lambda: _accepts(url, server), "PostgreSQL to accept connections")
        yield url
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)  # fast shutdown: ends the sessions left open
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


def _accepts(url: str, server: subprocess.Popen[bytes]) -> bool:
    import psycopg

    assert server.poll() is None, "the PostgreSQL server exited; see its log"
    try:
        psycopg.connect(url + "/postgres", connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


@pytest.fixture
def postgres(postgres_server: str) -> str:
    """A URL of a new, empty database on the test PostgreSQL server (DBOS creates it)."""
    return f"{postgres_server}/t_{uuid.uuid4().hex[:12]}"
