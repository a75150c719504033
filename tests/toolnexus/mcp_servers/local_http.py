"""Run an ASGI app with uvicorn on 127.0.0.1 (random port) in a background thread."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


@contextmanager
def serve(app: Any, release: asyncio.Event | None = None) -> Iterator[str]:
    """Yield the base URL of ``app`` served on a free loopback port; stop on exit.

    ``release``, when given, is set on the server's loop before shutdown so handlers
    waiting on it finish at once.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def main() -> None:
        config.load()
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        ready.set()
        await server.main_loop()
        await server.shutdown(sockets=[sock])

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(10), "local HTTP server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        if release is not None:
            loop.call_soon_threadsafe(release.set)
        server.should_exit = True
        thread.join(10)
        loop.close()
        sock.close()
