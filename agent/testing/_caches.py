"""The fake's context caches: ``cachedContents`` create, get, list, patch and delete.

What the real API does, kept strict:

- ``POST /{version}/cachedContents`` creates a cache of a model's system instruction,
  tools, tool config and leading contents, to live ``ttl`` (``"600s"``) or until
  ``expireTime`` (one hour when neither is given); one smaller than the model's minimum is
  refused (400 "Cached content is too small. total_token_count=N, min_total_token_count=M");
  its parts are checked by the same rules as a request's.
- ``GET``/``PATCH``/``DELETE /{version}/cachedContents/{id}``; a patch may change the expiry
  only; ``GET /{version}/cachedContents`` lists the live caches, a page at a time.
- A ``generateContent`` request naming a cache (``cachedContent``) may not also set
  ``systemInstruction``, ``tools`` or ``toolConfig`` (400, Gemini's message), must be for the
  cache's model, and is answered as if the cache's parts were in it: its ``usageMetadata``
  counts the cache in ``promptTokenCount`` and reports it as ``cachedContentTokenCount``.
- A cache past its expiry, or deleted, is gone: every use answers 403 "CachedContent not found
  (or permission denied)".

Time is the fake's clock (`CacheStore.now`): `CacheStore.advance` moves it on, and
`CacheStore.expire` ends one cache now, as the server would when its TTL runs out mid-run.
"""

from __future__ import annotations

import datetime
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent._caches import min_cache_tokens
from agent.testing._replies import error
from agent.testing._strict import normalize
from agent.testing._transport import Outcome

__all__ = ["CONFLICT_MESSAGE", "MISSING_MESSAGE", "CacheStore", "StoredCache"]

MISSING_MESSAGE = "CachedContent not found (or permission denied)"
"""Gemini's answer to any use of a cache that expired, was deleted or never existed."""

CONFLICT_MESSAGE = (
    "CachedContent can not be used with GenerateContent request setting system_instruction, "
    "tools or tool_config. Proposed fix: move those values to CachedContent from "
    "GenerateContent request."
)
"""Gemini's 400 for a request that names a cache and sets what the cache holds."""

DEFAULT_TTL = 3600.0
"""The life of a cache created with neither ``ttl`` nor ``expireTime``."""

_ROOT = re.compile(r"/(?:v1|v1beta|v1alpha)/cachedContents$")
_ONE = re.compile(r"/(?:v1|v1beta|v1alpha)/cachedContents/(?P<id>[^/:]+)$")
_DURATION = re.compile(r"(\d+(?:\.\d{1,9})?)s")
_JSON = {"content-type": "application/json; charset=UTF-8"}
_PREFIX_KEYS = ("systemInstruction", "tools", "toolConfig")
_CREATE_KEYS = frozenset({"model", "displayName", "ttl", "expireTime", "contents", *_PREFIX_KEYS})
_PATCH_KEYS = frozenset({"ttl", "expireTime", "name"})

Check = Callable[[dict[str, Any], str], Outcome | None]
"""Checks a create request's parts as a request of that model (``None``: accepted)."""


@dataclass
class StoredCache:
    """One cache: what it holds, its size and when it expires."""

    id: str
    model: str
    """The model name, without ``models/``."""
    display_name: str | None
    parts: dict[str, Any]
    """``contents``, ``systemInstruction``, ``tools``, ``toolConfig`` (those it has)."""
    tokens: int
    created: float
    updated: float
    expires: float
    uses: int = 0
    """Requests that named it."""

    @property
    def name(self) -> str:
        """``cachedContents/{id}``."""
        return f"cachedContents/{self.id}"

    def resource(self) -> dict[str, Any]:
        """Return the CachedContent resource as the API answers it (its parts left out)."""
        found: dict[str, Any] = {
            "name": self.name,
            "model": f"models/{self.model}",
            "createTime": _timestamp(self.created),
            "updateTime": _timestamp(self.updated),
            "expireTime": _timestamp(self.expires),
            "usageMetadata": {"totalTokenCount": self.tokens},
        }
        if self.display_name is not None:
            found["displayName"] = self.display_name
        return found


@dataclass
class CacheStore:
    """The context caches of one `FakeGemini` (``fake.caches``)."""

    min_tokens: int | None = None
    """The smallest cache accepted, in tokens; ``None``: each model's own minimum
    (`agent._caches.min_cache_tokens`: 2,048 for Gemini 2.5, 4,096 for 3.x)."""
    clock: Callable[[], float] = time.time
    """The fake's clock (seconds since the epoch), before `advance`."""
    offset: float = 0.0
    """Seconds `advance` moved the clock on."""
    caches: dict[str, StoredCache] = field(default_factory=dict)
    """Live caches by id (an expired or deleted one leaves)."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """``(method, path)`` of every ``cachedContents`` request, in order."""
    created: list[str] = field(default_factory=list)
    """The name of every cache created, in order."""
    deleted: list[str] = field(default_factory=list)
    """The name of every cache deleted by a request, in order."""
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    # -- the test's controls ------------------------------------------------------------------

    def now(self) -> float:
        """Return the fake's time: the clock plus what `advance` added."""
        return self.clock() + self.offset

    def advance(self, seconds: float) -> None:
        """Move the fake's clock on by ``seconds`` (caches whose time ran out expire)."""
        self.offset += seconds

    def expire(self, name: str) -> None:
        """End the cache ``name`` now, as its TTL running out would (no request is made)."""
        self.caches.pop(name.removeprefix("cachedContents/"), None)

    def live(self) -> list[StoredCache]:
        """Return the caches that have not expired, oldest first."""
        now = self.now()
        for key in [key for key, cache in self.caches.items() if cache.expires <= now]:
            del self.caches[key]
        return list(self.caches.values())

    # -- the API ------------------------------------------------------------------------------

    def owns(self, path: str) -> bool:
        """Tell whether ``path`` is a ``cachedContents`` path."""
        return bool(_ROOT.search(path) or _ONE.search(path))

    def handle(self, method: str, path: str, query: str, raw: bytes, check: Check) -> Outcome:
        """Answer one ``cachedContents`` request (the API key already checked)."""
        self.requests.append((method, path))
        try:
            body = normalize(json.loads(raw)) if raw else {}
        except (ValueError, UnicodeDecodeError) as exc:
            return _error(400, "INVALID_ARGUMENT", f"Invalid JSON payload received. {exc}.")
        one = _ONE.search(path)
        if one is None:
            if method == "POST":
                return self._create(body, check)
            if method == "GET":
                return self._list(query)
            return _error(404, "NOT_FOUND", f"FakeGemini: no method {method} {path}.")
        cache = self._find(one["id"])
        if cache is None:
            return _error(403, "PERMISSION_DENIED", MISSING_MESSAGE)
        if method == "GET":
            return _answer(cache.resource())
        if method == "PATCH":
            return self._patch(cache, body)
        if method == "DELETE":
            del self.caches[cache.id]
            self.deleted.append(cache.name)
            return _answer({})
        return _error(404, "NOT_FOUND", f"FakeGemini: no method {method} {path}.")

    def expand(self, body: Any, model: str) -> tuple[Any, int] | Outcome:
        """Return a request as the model sees it, with its cache's parts, and the cache size.

        A request naming no cache comes back as it is, with size 0.
        """
        name = body.get("cachedContent") if isinstance(body, dict) else None
        if name is None:
            return body, 0
        if any(body.get(key) is not None for key in _PREFIX_KEYS):
            return _error(400, "INVALID_ARGUMENT", CONFLICT_MESSAGE)
        cache = self._find(str(name).removeprefix("cachedContents/"))
        if cache is None:
            return _error(403, "PERMISSION_DENIED", MISSING_MESSAGE)
        if cache.model != model:
            return _error(
                400,
                "INVALID_ARGUMENT",
                f"Model used by GenerateContent request ({model}) and CachedContent "
                f"({cache.model}) has to be the same.",
            )
        cache.uses += 1
        parts = cache.parts
        expanded = {**body, **{key: parts[key] for key in _PREFIX_KEYS if key in parts}}
        expanded["contents"] = [*parts.get("contents", []), *(body.get("contents") or [])]
        return expanded, cache.tokens

    # -- one method each ----------------------------------------------------------------------

    def _find(self, cache_id: str) -> StoredCache | None:
        cache = self.caches.get(cache_id)
        if cache is not None and cache.expires <= self.now():
            del self.caches[cache_id]
            return None
        return cache

    def _create(self, body: dict[str, Any], check: Check) -> Outcome:
        unknown = sorted(set(body) - _CREATE_KEYS)
        if unknown:
            return _error(
                400,
                "INVALID_ARGUMENT",
                f'Invalid JSON payload received. Unknown name "{unknown[0]}" at '
                "'cached_content': Cannot find field.",
            )
        model = str(body.get("model") or "").removeprefix("models/")
        if not model:
            return _error(400, "INVALID_ARGUMENT", "CachedContent.model is required.")
        now = self.now()
        expires = _expiry(body, now)
        if isinstance(expires, Outcome):
            return expires
        parts = {key: body[key] for key in ("contents", *_PREFIX_KEYS) if body.get(key)}
        refused = check(parts, model)
        if refused is not None:
            return refused
        tokens = _size(parts)
        minimum = self.min_tokens if self.min_tokens is not None else min_cache_tokens(model)
        if tokens < minimum:
            return _error(
                400,
                "INVALID_ARGUMENT",
                "Cached content is too small. "
                f"total_token_count={tokens}, min_total_token_count={minimum}",
            )
        cache_id = f"fakecache{next(self._ids):04d}"
        name = body.get("displayName")
        cache = StoredCache(cache_id, model, name, parts, tokens, now, now, expires)
        self.caches[cache_id] = cache
        self.created.append(cache.name)
        return _answer(cache.resource())

    def _list(self, query: str) -> Outcome:
        params = dict(item.partition("=")[::2] for item in query.split("&") if item)
        try:
            size = min(max(int(params.get("pageSize") or 100), 1), 1000)
            start = int(params.get("pageToken") or 0)
        except ValueError:
            return _error(400, "INVALID_ARGUMENT", "Invalid pageSize or pageToken.")
        live = self.live()
        page: dict[str, Any] = {
            "cachedContents": [cache.resource() for cache in live[start : start + size]]
        }
        if start + size < len(live):
            page["nextPageToken"] = str(start + size)
        return _answer(page)

    def _patch(self, cache: StoredCache, body: dict[str, Any]) -> Outcome:
        other = sorted(set(body) - _PATCH_KEYS)
        if other:
            return _error(
                400,
                "INVALID_ARGUMENT",
                f"Only the expiration (ttl or expire_time) of a CachedContent can be updated, "
                f"not {other[0]}.",
            )
        if "ttl" not in body and "expireTime" not in body:
            return _error(400, "INVALID_ARGUMENT", "Nothing to update: give ttl or expire_time.")
        now = self.now()
        expires = _expiry(body, now)
        if isinstance(expires, Outcome):
            return expires
        cache.expires, cache.updated = expires, now
        return _answer(cache.resource())


def _expiry(body: Mapping[str, Any], now: float) -> float | Outcome:
    """Return when a cache created (or patched) with ``body`` expires."""
    ttl, expire_time = body.get("ttl"), body.get("expireTime")
    if ttl is not None and expire_time is not None:
        return _error(400, "INVALID_ARGUMENT", "Give either ttl or expire_time, not both.")
    if expire_time is not None:
        try:
            when = datetime.datetime.fromisoformat(str(expire_time).replace("Z", "+00:00"))
        except ValueError:
            message = f"Invalid value at 'expire_time', {expire_time!r}"
            return _error(400, "INVALID_ARGUMENT", message)
        return when.timestamp()
    if ttl is None:
        return now + DEFAULT_TTL
    found = _DURATION.fullmatch(str(ttl))
    if found is None or float(found[1]) <= 0:
        return _error(
            400,
            "INVALID_ARGUMENT",
            f"Invalid value at 'ttl' (type.googleapis.com/google.protobuf.Duration), {ttl!r}",
        )
    return now + float(found[1])


def _size(parts: Mapping[str, Any]) -> int:
    """Return the cache's size in tokens, estimated as the fake estimates every prompt."""
    from agent.testing._render import content_tokens, json_tokens

    contents = parts.get("contents")
    tokens = content_tokens(contents) if contents else 0
    return tokens + sum(json_tokens(parts.get(key)) for key in _PREFIX_KEYS)


def _timestamp(seconds: float) -> str:
    when = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return when.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _answer(body: Mapping[str, Any]) -> Outcome:
    return Outcome(200, _JSON, [json.dumps(body).encode()])


def _error(status_code: int, status: str, message: str) -> Outcome:
    return Outcome(
        status_code, _JSON, [json.dumps(error(status_code, status, message).body).encode()]
    )
