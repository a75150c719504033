"""The CLI exports spans as the standard ``OTEL_*`` variables say (the ``otel`` extra)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agent.testing import FakeGemini
from tests.cli.conftest import REPO, cli_env


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def test_console_exporter_writes_the_spans_to_stderr() -> None:
    fake = FakeGemini(["Hello."])
    with fake.serve() as server:
        env = cli_env(server, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="my-agents")
        done = run_cli(env, "run", "--no-builtins", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello.\n"
    assert '"name": "invoke_agent"' in done.stderr
    assert '"name": "generate_content gemini-2.5-flash"' in done.stderr
    assert '"service.name": "my-agents"' in done.stderr
    assert env["GEMINI_API_KEY"] not in done.stderr


class _Collector(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        type(self).bodies.append(self.path.encode() + b" " + self.rfile.read(length))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    bodies: ClassVar[list[bytes]] = []
    handler = type("Handler", (_Collector,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    server.shutdown()
    server.server_close()


def test_otlp_endpoint_receives_the_spans(collector: tuple[str, list[bytes]]) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    url, bodies = collector
    fake = FakeGemini(["Hello."])
    with fake.serve() as server:
        done = run_cli(cli_env(server, OTEL_EXPORTER_OTLP_ENDPOINT=url), "run", "hi")
    assert done.returncode == 0, done.stderr
    assert bodies, done.stderr
    assert bodies[0].startswith(b"/v1/traces ")
    assert b"invoke_agent" in bodies[0]
    assert b"generate_content" in bodies[0]
    assert not any(b"test-key-not-a-secret" in body for body in bodies)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_endpoint_that_is_down_is_reported_in_one_line() -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    fake = FakeGemini(["Hello."])
    with fake.serve() as server:
        env = cli_env(server, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{free_port()}")
        done = run_cli(env, "run", "--no-builtins", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello.\n"
    said = [line for line in done.stderr.splitlines() if "export" in line.lower()]
    assert len(said) == 1, done.stderr
    assert said[0].startswith("(OpenTelemetry: spans not exported to 127.0.0.1:")
    assert "Transient error" not in done.stderr and "Traceback" not in done.stderr


class _Silent(BaseHTTPRequestHandler):
    """A collector that takes the request and never answers (until the test ends)."""

    received: ClassVar[threading.Event]
    release: ClassVar[threading.Event]

    def do_POST(self) -> None:
        type(self).received.set()
        type(self).release.wait(60)

    def log_message(self, *args: object) -> None:
        pass


def test_a_silent_endpoint_does_not_hold_the_cli_up() -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    received, release = threading.Event(), threading.Event()
    handler = type("Handler", (_Silent,), {"received": received, "release": release})
    collector = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=collector.serve_forever, daemon=True)
    thread.start()
    fake = FakeGemini(["Hello."])
    try:
        with fake.serve() as server:
            env = cli_env(
                server,
                OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.server_address[1]}",
                OTEL_EXPORTER_OTLP_TIMEOUT="600",  # the exporter alone would wait this long
            )
            done = run_cli(env, "run", "--no-builtins", "hi")
        # The command ended while its export was still waiting for an answer.
        assert received.is_set() and not release.is_set()
    finally:
        release.set()
        collector.shutdown()
        collector.server_close()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello.\n"
    said = [line for line in done.stderr.splitlines() if "OpenTelemetry" in line]
    assert said == [
        f"(OpenTelemetry: spans not exported to 127.0.0.1:{collector.server_address[1]}: "
        "not done within 1 s; is the collector running?)"
    ]
