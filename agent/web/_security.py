"""The page's guard: local hosts only, same-origin only, and the launch token for the API.

- ``Host`` must name this machine (``127.0.0.1``, ``localhost``, ``[::1]``, or the address
  the page was bound to): a page of another site whose name was pointed at 127.0.0.1 (DNS
  rebinding) is refused.
- ``Origin``, when a browser sends one, must be the page's own: ``http://`` and the very
  ``Host`` asked for. Another site's script, or another local server's page, is refused.
- Every ``/api/`` request carries the per-launch token (``Authorization: Bearer TOKEN``),
  which only the URL the command printed holds: another user or program on this machine
  can neither read the runs nor steer them. The page itself (HTML, CSS, JS) needs none.

Every answer also forbids framing and inline scripts (``Content-Security-Policy``).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["LOOPBACK", "Guard", "host_name"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""The names of this machine the page answers to."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data: blob:; style-src 'self'; "
        b"script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
        b"frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def host_name(host: str) -> str:
    """Return the host name of a ``Host`` value, without port or IPv6 brackets, lowercase."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class Guard:
    """ASGI middleware that refuses what the module docstring says, before the app sees it."""

    def __init__(self, app: ASGIApp, token: str, hosts: Iterable[str] = LOOPBACK) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = frozenset(host_name(host) for host in hosts) | set(LOOPBACK)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.problem(scope)
        if problem is not None:
            await _refuse(send, *problem)
            return

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, secured)

    def problem(self, scope: Scope) -> tuple[int, str] | None:
        """Return ``(status, reason)`` when the request must be refused, else ``None``."""
        headers = {key.lower(): value for key, value in scope.get("headers", [])}
        host = headers.get(b"host", b"").decode("latin-1")
        if host_name(host) not in self.hosts:
            return 403, f"refused: Host {host!r} is not this machine (use 127.0.0.1)"
        origin = headers.get(b"origin")
        if origin is not None and origin.decode("latin-1") != f"http://{host}":
            return 403, "refused: the request comes from another site (Origin)"
        if scope.get("path", "").startswith("/api/") and not self._authorized(headers):
            return 401, "refused: the launch token is missing or wrong (open the printed URL)"
        return None

    def _authorized(self, headers: dict[bytes, bytes]) -> bool:
        given = headers.get(b"authorization", b"")
        scheme, _, token = given.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.token)


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
