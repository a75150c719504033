"""A throw-away PostgreSQL server on 127.0.0.1, for the tests and the benchmark.

The multi-worker tests need a real Postgres; this starts one from the server binaries of
the machine (the distribution's ``postgresql`` package, which ``.ci/run`` installs when
missing) in a temporary directory, and stops it afterwards. PostgreSQL refuses to run as
root, so as root the server runs as the ``postgres`` user (or ``nobody``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Unavailable", "temporary_server"]


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


class Unavailable(Exception):
    """No PostgreSQL server can be started here; the message says why."""


@contextlib.contextmanager
def temporary_server() -> Iterator[str]:
    """Start a throw-away PostgreSQL server on 127.0.0.1; yield its URL without a database.

    The server's files live in a temporary directory, removed when the block ends (after a
    fast shutdown of the server).

    Raises:
        Unavailable: No server binaries, or (as root) no way to run them as another user.
    """
    binaries = _server_binaries()
    if binaries is None:
        raise Unavailable(
            "no PostgreSQL server binaries (initdb, postgres) on this machine: install the "
            "distribution's postgresql package (.ci/run does)"
        )
    runas = _as_server_user()
    if runas is None:
        raise Unavailable("running as root without setpriv or a non-root user to run PostgreSQL as")
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
        _wait_for(url, server)
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

    if server.poll() is not None:
        raise RuntimeError("the PostgreSQL server exited at start; see its log")
    try:
        psycopg.connect(url + "/postgres", connect_timeout=2).close()
    except psycopg.OperationalError:
        return False
    return True


def _wait_for(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not _accepts(url, server):
        if time.monotonic() > deadline:
            raise RuntimeError("PostgreSQL did not accept connections within 60 s")
        time.sleep(0.05)
