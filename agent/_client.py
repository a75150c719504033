"""How the ``google.genai`` client is built, and how its API key is kept out of every text.

The default client runs on an ``httpx.AsyncClient`` (not the SDK's default backend), so
``respx`` and the in-process fake Gemini transport can serve it. Every request has a timeout
(the SDK has none by default); the SDK's own retries stay off, because the agent retries with
its own policy.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import httpx
from google import genai
from google.genai import types

from agent._redact import scrub
from agent.errors import ConfigurationError

__all__ = ["MISSING_KEY", "ClientSettings", "Clients", "api_key_of", "build_client", "scrub"]

MISSING_KEY = (
    "No Gemini API key found. Set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment "
    "variable, or pass client=ClientSettings(api_key=...) to Agent (or a ready google.genai "
    "Client as client=...). "
    "Keys are created at https://aistudio.google.com/apikey. To try the agent without a key, "
    "run it against the fake Gemini in agent.testing (the `toolnexus-agent demo` command does)."
)


@dataclass(slots=True)
class Clients:
    """The SDK client and, when the agent built it, the HTTP pieces it owns."""

    genai: genai.Client
    """The SDK client every model call goes through."""
    http: httpx.AsyncClient | None = None
    """The HTTP client the agent created (``None`` when the caller supplied one)."""
    transport: httpx.AsyncHTTPTransport | None = None
    """Its connection pool, released after each `run_sync` so a new event loop can reuse it."""


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


def build_client(settings: ClientSettings) -> Clients:
    """Build the SDK client on an ``httpx.AsyncClient``.

    Args:
        settings: The key, endpoint and HTTP settings.

    Returns:
        The SDK client with the HTTP pieces the agent owns.

    Raises:
        ConfigurationError: No key was found, or the settings do not fit together.
    """
    api_key = settings.api_key
    http_client = settings.http_client
    transport: httpx.AsyncHTTPTransport | None = None
    owned: httpx.AsyncClient | None = None
    if http_client is None:
        transport = httpx.AsyncHTTPTransport()
        owned = http_client = httpx.AsyncClient(transport=transport)
    options = types.HttpOptions(
        httpx_async_client=http_client,
        timeout=None if settings.timeout is None else max(1, round(settings.timeout * 1000)),
        base_url=settings.base_url,
        api_version=settings.api_version,
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
    return Clients(client, owned, transport)


def api_key_of(client: object) -> str | None:
    """Return the API key ``client`` sends (given or read from the environment), if any.

    ``client`` is a ``genai.Client`` or one of its modules (``client.aio.files``): each
    holds the same API client, and so the same key.
    """
    key = getattr(getattr(client, "_api_client", None), "api_key", None)
    return key if isinstance(key, str) and key.strip() else None
