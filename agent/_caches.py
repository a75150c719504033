"""Context caches on the wire: the prefix requests share, and the ``cachedContents`` calls.

Gemini's explicit cache (``cachedContents``) holds the part of a request that every turn
repeats: the system instruction, the tools, the tool config and, optionally, leading
documents. A request that names the cache (``cachedContent``) sends only the rest, and it may
**not** set ``systemInstruction``, ``tools`` or ``toolConfig`` itself (Gemini answers 400
"CachedContent can not be used with GenerateContent request setting system_instruction,
tools or tool_config"): `cached_request` moves them out of the request in one place.

`prefix_of` reads a request's prefix: its pieces as wire JSON, a key (a hash of the model
and every piece; a cache is found again by it, in this process and on the server, where it
is the cache's display name) and an estimate of its size in tokens. `Caches` makes the four
calls: create, find (by display name, over ``list``), extend (``patch`` of the TTL) and
delete. A failed call raises `CallFailed`, with the API key scrubbed out.

The ``cachedContents`` methods are v1beta methods of the Gemini API: a client on ``v1``
(the SDK's default) makes them, and the requests that name a cache, on ``v1beta``.

This module and `agent._model` are the only ones that touch the SDK for caches.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic
from google.genai import types

from agent._api_errors import translate
from agent._media import inline_data, media_tokens
from agent._retry import CallFailed, ErrorInfo

if TYPE_CHECKING:
    from google import genai

    from agent.hooks import ModelRequest

__all__ = [
    "DISPLAY_PREFIX",
    "CacheInfo",
    "Caches",
    "Prefix",
    "cached_request",
    "is_missing_cache",
    "is_other_model",
    "min_cache_tokens",
    "prefix_of",
    "too_small",
    "with_documents",
]

DISPLAY_PREFIX = "toolnexus:"
"""How the display name of every cache the agent creates starts (the prefix key follows)."""

_MIN_TOKENS: tuple[tuple[str, int], ...] = (
    ("gemini-2.5-", 2048),
    ("gemini-3", 4096),
)
"""The smallest cache each model family takes, in tokens (Gemini's caching page of
2026-07-07: 2,048 for 2.5 Flash and Pro, 4,096 for 3.x); other models: `_MIN_DEFAULT`."""
_MIN_DEFAULT = 4096

_TOO_SMALL = re.compile(r"total_token_count=(\d+), min_total_token_count=(\d+)")

_LIST_PAGE = 100
_LIST_PAGES = 10
"""How much of the account's cache list a lookup reads at most (the newest come first)."""


def min_cache_tokens(model: str) -> int:
    """Return the smallest prefix, in tokens, that ``model`` takes as a cache."""
    name = model.removeprefix("models/")
    for start, tokens in _MIN_TOKENS:
        if name.startswith(start):
            return tokens
    return _MIN_DEFAULT


def too_small(info: ErrorInfo) -> tuple[int, int] | None:
    """Return ``(tokens, minimum)`` when a create failed because the prefix is too small."""
    found = _TOO_SMALL.search(info.message) if info.code == 400 else None
    return (int(found[1]), int(found[2])) if found else None


def is_missing_cache(info: ErrorInfo) -> bool:
    """Tell whether a model call failed because its cache expired or was deleted.

    Gemini answers ``403 PERMISSION_DENIED`` "CachedContent not found (or permission
    denied)" for a cache that is gone.
    """
    message = info.message.lower()
    return info.code in (403, 404) and ("cachedcontent" in message or "cached content" in message)


def is_other_model(info: ErrorInfo) -> bool:
    """Tell whether a call failed because it named a cache made for another model.

    Gemini answers 400 "Model used by GenerateContent request (A) and CachedContent (B) has
    to be the same." (a turn sent to a fallback model with the first model's cache).
    """
    return info.code == 400 and "and CachedContent" in info.message and "the same" in info.message


@dataclass(frozen=True, slots=True)
class Prefix:
    """The part of a request a cache can hold."""

    key: str
    """A hash of the model and every piece: equal keys, interchangeable caches."""
    tokens: int
    """Its estimated size, about four characters of JSON per token (files by size)."""
    model: str
    """The model the cache is for (a cache serves one model only)."""
    system: Any
    """The system instruction, as the request config had it (or ``None``)."""
    tools: Any
    """The tools (SDK ``Tool`` objects, or ``None``)."""
    tool_config: Any
    """The tool config (or ``None``)."""
    documents: types.Content | None
    """Leading documents, sent before the conversation (or ``None``)."""
    content_key: str
    """A hash of the pieces without the tool config: two prefixes that differ only there
    hold the same text (a per-turn tool choice); only a change here retires a cache."""

    @property
    def display_name(self) -> str:
        """The display name of this prefix's cache (how a lookup finds it)."""
        return DISPLAY_PREFIX + self.key


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """A cache on the server, as the API describes it."""

    name: str
    """``cachedContents/...``: what a request names."""
    expires: float
    """When it expires, in seconds since the epoch."""
    tokens: int
    """Its size in tokens, as the server counted it (0 when it did not say)."""


def prefix_of(request: ModelRequest, documents: types.Content | None = None) -> Prefix | None:
    """Return the prefix of ``request`` (with ``documents`` first), or ``None`` without one.

    A request with no system instruction, no tools and no documents has nothing to cache; a
    system instruction or tool the wire form cannot be read of (a Python callable) is not
    cached either.
    """
    config = request.config
    pieces: dict[str, Any] = {"model": request.model.removeprefix("models/")}
    try:
        system = _system_json(config.system_instruction)
        tools = [_json(tool) for tool in config.tools] if config.tools else None
    except TypeError:
        return None
    tool_config = _json(config.tool_config) if config.tool_config is not None else None
    docs = _json(documents) if documents is not None else None
    if system is None and tools is None and docs is None:
        return None
    pieces.update(system=system, tools=tools, documents=docs)
    content_key = _hash(pieces)
    pieces["toolConfig"] = tool_config
    tokens = sum(_tokens(piece) for piece in (system, tools, tool_config))
    tokens += _content_tokens([docs]) if docs is not None else 0
    return Prefix(
        key=_hash(pieces),
        tokens=tokens,
        model=pieces["model"],
        system=config.system_instruction,
        tools=config.tools,
        tool_config=config.tool_config,
        documents=documents,
        content_key=content_key,
    )


def cached_request(
    request: ModelRequest, name: str, http_options: types.HttpOptions | None = None
) -> ModelRequest:
    """Return ``request`` naming the cache ``name`` instead of sending its prefix.

    The system instruction, tools and tool config live in the cache: the request must not
    set them (Gemini refuses the pair). The contents are the conversation only: leading
    documents are in the cache too. ``http_options`` (`Caches.http_options`) go with it.
    """
    from agent.hooks import ModelRequest

    update: dict[str, Any] = {
        "system_instruction": None,
        "tools": None,
        "tool_config": None,
        "cached_content": name,
    }
    if http_options is not None:
        mine = request.config.http_options
        update["http_options"] = (
            mine.model_copy(update={"api_version": http_options.api_version})
            if mine is not None
            else http_options
        )
    config = request.config.model_copy(update=update)
    return ModelRequest(request.model, request.contents, config, request.turn)


def with_documents(request: ModelRequest, documents: types.Content | None) -> ModelRequest:
    """Return ``request`` with ``documents`` before its contents (sent without a cache)."""
    if documents is None:
        return request
    from agent.hooks import ModelRequest

    return ModelRequest(request.model, [documents, *request.contents], request.config, request.turn)


class Caches:
    """The ``cachedContents`` calls of one SDK client."""

    def __init__(self, client: genai.Client, api_key: str | None, base_url: str | None) -> None:
        self.client = client
        self.api_key = api_key
        """Scrubbed from every error."""
        api = getattr(client, "_api_client", None)
        where = [base_url, api_key, getattr(api, "project", None), getattr(api, "location", None)]
        self.account = _hash([str(item) for item in where])[:16]
        """Which account the caches belong to (a hash of the endpoint, key and project): a
        cache made with one key cannot be used with another."""
        options = getattr(api, "_http_options", None)
        version = getattr(options, "api_version", None)
        on_v1 = not getattr(api, "vertexai", False) and version == "v1"
        self.http_options = types.HttpOptions(api_version="v1beta") if on_v1 else None
        """Sent with every cache call and every request naming a cache: the v1beta API
        (``None``: the client's own version serves caches)."""

    async def create(self, prefix: Prefix, ttl: float) -> CacheInfo:
        """Create the cache of ``prefix``, to live ``ttl`` seconds.

        Raises:
            CallFailed: The API refused it (too small, a bad key, ...) or could not be reached.
        """
        config = types.CreateCachedContentConfig(
            display_name=prefix.display_name,
            ttl=_ttl(ttl),
            system_instruction=prefix.system,
            tools=prefix.tools,
            tool_config=prefix.tool_config,
            # None, not []: the SDK refuses an empty list ("contents are required").
            contents=[prefix.documents] if prefix.documents is not None else None,
            http_options=self.http_options,
        )
        async with self._call():
            made = await self.client.aio.caches.create(model=prefix.model, config=config)
        return _info(made, prefix.tokens)

    async def find(self, prefix: Prefix, *, after: float) -> CacheInfo | None:
        """Return a cache of ``prefix`` that lives past ``after`` (epoch seconds), if any.

        The one that lives longest of those the account lists with its display name; only
        the first pages of the list are read.

        Raises:
            CallFailed: The list could not be read.
        """
        best: CacheInfo | None = None
        seen = 0
        async with self._call():
            config = types.ListCachedContentsConfig(
                page_size=_LIST_PAGE, http_options=self.http_options
            )
            pager = await self.client.aio.caches.list(config=config)
            async for cache in pager:
                seen += 1
                if seen > _LIST_PAGE * _LIST_PAGES:
                    break
                if cache.display_name != prefix.display_name or not _same_model(cache, prefix):
                    continue
                found = _info(cache, prefix.tokens)
                if found.expires > after and (best is None or found.expires > best.expires):
                    best = found
        return best

    async def extend(self, name: str, ttl: float, tokens: int) -> CacheInfo:
        """Make the cache ``name`` live ``ttl`` seconds from now.

        Raises:
            CallFailed: The cache is gone, or the API could not be reached.
        """
        config = types.UpdateCachedContentConfig(ttl=_ttl(ttl), http_options=self.http_options)
        async with self._call():
            updated = await self.client.aio.caches.update(name=name, config=config)
        return _info(updated, tokens)

    async def delete(self, name: str) -> None:
        """Delete the cache ``name``.

        Raises:
            CallFailed: The API refused (a cache already gone included) or could not be
                reached.
        """
        async with self._call():
            config = types.DeleteCachedContentConfig(http_options=self.http_options)
            await self.client.aio.caches.delete(name=name, config=config)

    @contextlib.asynccontextmanager
    async def _call(self) -> Any:
        """Turn what the SDK raises into `CallFailed`, the key scrubbed out."""
        failure: ErrorInfo | None = None
        try:
            yield
        except Exception as exc:  # cancellation is a BaseException and passes untouched
            failure = translate(exc, self.api_key)
            if failure is None:
                raise
        if failure is not None:
            # Raised outside the handler: the SDK error (whose text may hold the key) is
            # neither its cause nor its context.
            raise CallFailed(failure)


def _same_model(cache: types.CachedContent, prefix: Prefix) -> bool:
    return (cache.model or "").rsplit("/", 1)[-1] == prefix.model.rsplit("/", 1)[-1]


def _info(cache: types.CachedContent, estimate: int) -> CacheInfo:
    usage = cache.usage_metadata
    tokens = usage.total_token_count if usage is not None else None
    expires = cache.expire_time.timestamp() if cache.expire_time is not None else 0.0
    return CacheInfo(name=cache.name or "", expires=expires, tokens=tokens or estimate)


def _ttl(seconds: float) -> str:
    """Return a TTL as the API writes durations (``"600s"``)."""
    return f"{max(1, math.ceil(seconds))}s"


def _json(value: Any) -> Any:
    """Return an SDK value as wire JSON (camelCase keys, no empty fields).

    Raises:
        TypeError: ``value`` has no wire form (a Python callable given as a tool).
    """
    if not isinstance(value, pydantic.BaseModel):
        raise TypeError(f"{type(value).__name__} has no wire form")
    return value.model_dump(mode="json", by_alias=True, exclude_none=True)


def _system_json(value: Any) -> Any:
    """Return a system instruction (text, parts or a Content) as a wire Content, or ``None``."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return {"parts": [{"text": value}]}
    if isinstance(value, types.Content):
        return _json(value)
    items = value if isinstance(value, list) else [value]
    parts = [{"text": item} if isinstance(item, str) else _json(item) for item in items]
    return {"parts": parts}


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _tokens(value: Any) -> int:
    """Estimate the tokens of ``value`` as JSON text: about four characters per token."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False)) / 4) if value else 0


def _content_tokens(contents: Sequence[Mapping[str, Any]]) -> int:
    """Estimate the tokens of wire Contents; inline files as Gemini bills them."""
    blobs = [len(data) for data in inline_data(contents)]
    chars = len(json.dumps(list(contents), ensure_ascii=False)) - sum(blobs)
    return math.ceil(chars / 4) + sum(media_tokens(size * 3 // 4) for size in blobs)
