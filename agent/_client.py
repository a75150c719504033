"""How the ``google.genai`` client is built, and how its API key is kept out of every text.

The default client runs on an ``httpx.AsyncClient`` (not the SDK's default backend), so
``respx`` and the in-process fake Gemini transport can serve it. Every request has a timeout
(the SDK has none by default); the SDK's own retries stay off, because the agent retries with
its own policy.

A process holds one SDK client per distinct client configuration: agents built with the
same settings (a lead and the sub-agents of its agent files, the agents of a batch) share
it, because building one costs tens of milliseconds (its TLS contexts). The shared HTTP
connections are pooled per event loop, as a connection belongs to the loop that opened it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from google import genai
from google.genai import types

from agent._redact import scrub
from agent.errors import ConfigurationError

__all__ = [
    "MISSING_KEY",
    "ClientSettings",
    "Clients",
    "Closable",
    "LoopPools",
    "api_key_of",
    "build_client",
    "scrub",
]

MISSING_KEY = (
    "No Gemini API key found. Set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment "
    "variable, or pass client=ClientSettings(api_key=...) to Agent (or a ready google.genai "
    "Client as client=...). "
    "Keys are created at https://aistudio.google.com/apikey. To try the agent without a key, "
    "run it against the fake Gemini in agent.testing (the `toolnexus-agent demo` command does)."
)


class Closable(Protocol):
    """Something an agent closes when it is done with it."""

    async def aclose(self) -> None:
        """Close it (or this agent's share of it)."""


@dataclass(slots=True)
class Clients:
    """The SDK client and, when the agent built it, the HTTP pieces it owns."""

    genai: genai.Client
    """The SDK client every model call goes through."""
    http: Closable | None = None
    """This agent's share of the HTTP client it created (``None`` when the caller supplied
    one): closing it closes the client once no other agent shares it."""
    transport: Closable | None = None
    """The connection pools, released after each `run_sync` so a new event loop can reuse
    the client; closing it closes the running event loop's pool only."""
    share: object = None
    """Keeps the shared client cached while this agent uses it."""


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """How to build the SDK client when the caller did not hand one over."""

    api_key: str | None = None
    """The key; ``None`` lets the SDK read ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``."""
    http_client: httpx.AsyncClient | None = None
    """The HTTP client to send on; ``None`` creates (and owns) one."""
    base_url: str | None = None
    """Another endpoint (the fake Gemini, a proxy), or ``None`` for Google's."""
    api_version: str | None = None
    """The API version path segment, or ``None`` for the SDK's default."""
    vertexai: bool | None = None
    """Talk to Vertex AI instead of the Gemini Developer API."""
    project: str | None = None
    """The Vertex AI project."""
    location: str | None = None
    """The Vertex AI location."""
    timeout: float | None = 120.0
    """Seconds per request, or ``None`` for no limit."""


class LoopPools(httpx.AsyncBaseTransport):
    """The connection pools of one shared HTTP client: one per event loop.

    A pooled connection belongs to the event loop that opened it, and agents sharing a
    client may run on different loops (one `run_sync` after another, or threads). Each loop
    gets its own pool; all share one TLS context, which is the costly part to build.
    """

    def __init__(self) -> None:
        self.tls = httpx.create_ssl_context()
        """The TLS context every pool verifies servers with."""
        self._pools: dict[asyncio.AbstractEventLoop, httpx.AsyncHTTPTransport] = {}
        self._lock = threading.Lock()

    def _pool(self) -> httpx.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        with self._lock:
            # The connections of a loop that has ended can be neither used nor closed.
            for ended in [old for old in self._pools if old.is_closed()]:
                del self._pools[ended]
            pool = self._pools.get(loop)
            if pool is None:
                pool = self._pools[loop] = httpx.AsyncHTTPTransport(verify=self.tls)
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` through the running event loop's pool."""
        return await self._pool().handle_async_request(request)

    async def aclose(self) -> None:
        """Close the running event loop's connections (the other loops' stay open)."""
        with self._lock:
            pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await pool.aclose()


@dataclass(eq=False, slots=True, weakref_slot=True)
class _Shared:
    """One cached SDK client, with the HTTP client it was built on when it owns it."""

    key: tuple[object, ...]
    genai: genai.Client
    http: httpx.AsyncClient | None
    pools: LoopPools | None
    leases: weakref.WeakSet[_Lease] = field(default_factory=weakref.WeakSet)


@dataclass(eq=False, slots=True, weakref_slot=True)
class _Lease:
    """One agent's share of an owned HTTP client: the last share closed closes the client."""

    shared: _Shared
    closed: bool = False

    async def aclose(self) -> None:
        if self.closed:
            return
        self.closed = True
        with _LOCK:
            self.shared.leases.discard(self)
            last = not self.shared.leases
            if last and _CACHE.get(self.shared.key) is self.shared:
                del _CACHE[self.shared.key]
        if last and self.shared.http is not None:
            await self.shared.http.aclose()


_CACHE: weakref.WeakValueDictionary[tuple[object, ...], _Shared] = weakref.WeakValueDictionary()
"""The SDK clients in use, by configuration; one is dropped when no agent holds it."""
_LOCK = threading.Lock()

_ENV_PREFIXES = ("GOOGLE_", "GEMINI_", "SSL_CERT_")
"""The environment the SDK reads (keys, Vertex settings, certificates): part of the key."""


def _key(settings: ClientSettings) -> tuple[object, ...]:
    env = tuple(
        sorted(
            (name, value)
            for name, value in os.environ.items()
            if name.upper().startswith(_ENV_PREFIXES) or name.upper().endswith("_PROXY")
        )
    )
    # The identity of a supplied HTTP client, not the client: while the entry lives, its SDK
    # client holds the HTTP client, so the id cannot be reused by another one.
    supplied = None if settings.http_client is None else id(settings.http_client)
    return (
        settings.api_key,
        settings.base_url,
        settings.api_version,
        settings.vertexai,
        settings.project,
        settings.location,
        settings.timeout,
        supplied,
        env,
    )


def build_client(settings: ClientSettings) -> Clients:
    """Return the SDK client for ``settings``: the process's shared one, built when needed.

    Agents whose client settings (and the environment the SDK reads) are the same share
    one SDK client and, when they did not supply one, one HTTP client. Each agent gets its
    own share: closing it closes the HTTP client once no other agent holds it.

    Args:
        settings: The key, endpoint and HTTP settings.

    Returns:
        The SDK client with this agent's share of the HTTP pieces it owns.

    Raises:
        ConfigurationError: No key was found, or the settings do not fit together.
    """
    key = _key(settings)
    with _LOCK:
        shared = _CACHE.get(key)
        if shared is None:
            shared = _CACHE[key] = _build(settings, key)
        if shared.http is None:
            return Clients(shared.genai, share=shared)
        lease = _Lease(shared)
        shared.leases.add(lease)
    return Clients(shared.genai, lease, shared.pools, shared)


def _build(settings: ClientSettings, key: tuple[object, ...]) -> _Shared:
    api_key = settings.api_key
    http_client = settings.http_client
    pools: LoopPools | None = None
    owned: httpx.AsyncClient | None = None
    if http_client is None:
        pools = LoopPools()
        owned = http_client = httpx.AsyncClient(transport=pools)
    options = types.HttpOptions(
        httpx_async_client=http_client,
        timeout=None if settings.timeout is None else max(1, round(settings.timeout * 1000)),
        base_url=settings.base_url,
        api_version=settings.api_version,
        **_shared_tls(settings, pools),
    )
    try:
        client = genai.Client(
            api_key=api_key,
            vertexai=settings.vertexai,
            project=settings.project,
            location=settings.location,
            http_options=options,
        )
    except ValueError as exc:
        no_key = not (
            api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        )
        if no_key and "key" in str(exc).lower():
            raise ConfigurationError(MISSING_KEY) from None
        raise ConfigurationError(
            f"Invalid Gemini client settings: {scrub(str(exc), api_key)}"
        ) from None
    return _Shared(key, client, owned, pools)


def _shared_tls(settings: ClientSettings, pools: LoopPools | None) -> dict[str, Any]:
    """Return the SDK options that hand it our TLS context for the clients it builds itself.

    Beside the async HTTP client it is given, the SDK builds a sync HTTP client and a
    websocket TLS context, which the agent never uses, each loading the certificate bundle
    again (tens of milliseconds each). They verify servers with the context of our pools
    instead. Vertex AI keeps the SDK's own: it may load a client certificate into them (mTLS).
    """
    if pools is None or _maybe_vertex(settings):
        return {}
    return {
        "client_args": {"verify": pools.tls},
        "async_client_args": {"verify": pools.tls, "ssl": pools.tls},
    }


def _maybe_vertex(settings: ClientSettings) -> bool:
    """Tell whether the SDK may talk to Vertex AI: asked for, or possibly so by the environment."""
    if settings.vertexai is not None:
        return settings.vertexai
    switches = ("GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE")
    return any(os.environ.get(name, "").lower() in ("true", "1") for name in switches)


def api_key_of(client: object) -> str | None:
    """Return the API key ``client`` sends (given or read from the environment), if any.

    ``client`` is a ``genai.Client`` or one of its modules (``client.aio.files``): each
    holds the same API client, and so the same key.
    """
    key = getattr(getattr(client, "_api_client", None), "api_key", None)
    return key if isinstance(key, str) and key.strip() else None
