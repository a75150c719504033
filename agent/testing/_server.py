"""A real HTTP server on 127.0.0.1 in front of a ``FakeGemini`` (for CLIs, demos, benchmarks)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent.testing._fake import FakeGemini

__all__ = ["FakeServer"]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle's algorithm holds the
    # body back until the client's delayed ACK arrives, stalling every response.
    disable_nagle_algorithm = True
    server: _Server
    timeout = 30

    def do_POST(self) -> None:
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items()}
        outcome = self.server.fake._handle(self.command, path, query, headers, raw)
        if outcome.delay:
            time.sleep(outcome.delay)
        streaming = outcome.headers.get("content-type") == "text/event-stream"
        self.send_response(outcome.status)
        for name, value in outcome.headers.items():
            self.send_header(name, value)
        if streaming:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("content-length", str(sum(map(len, outcome.chunks))))
        self.end_headers()
        for index, chunk in enumerate(outcome.chunks):
            if index and outcome.chunk_delay:
                time.sleep(outcome.chunk_delay)
            if streaming:
                self.wfile.write(b"%X\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            else:
                self.wfile.write(chunk)
        if streaming:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def setup(self) -> None:
        super().setup()
        with self.server.open_lock:
            self.server.open_sockets.add(self.request)

    def finish(self) -> None:
        with self.server.open_lock:
            self.server.open_sockets.discard(self.request)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests and demos read their own output."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeGemini, address: tuple[str, int]) -> None:
        self.fake = fake
        self.open_lock = threading.Lock()
        self.open_sockets: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that went away (a killed CLI, a cancelled run) is not a server fault:
        # say nothing, instead of printing a traceback into whatever stderr is current.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeServer:
    """A threaded HTTP server answering with a ``FakeGemini``; stop it by leaving the block.

    Example::

        with FakeGemini(["Hello!"]).serve() as server:
            client = genai.Client(api_key="x", http_options=types.HttpOptions(
                base_url=server.base_url))
    """

    def __init__(self, fake: FakeGemini, host: str = "127.0.0.1", port: int = 0) -> None:
        """Bind the socket now (so the port is known); serve from ``start()`` or ``with``."""
        self.fake = fake
        """The fake answering the requests."""
        self._server = _Server(fake, (host, port))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give the SDK, e.g. ``http://127.0.0.1:54321``."""
        host = self._server.server_address[0]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{self.port}"

    def start(self) -> FakeServer:
        """Serve requests in a background thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"FakeGemini:{self.port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open connections and the listening socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        with self._server.open_lock:
            for sock in list(self._server.open_sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._server.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
